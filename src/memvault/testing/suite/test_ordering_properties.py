"""Property test of ordering: any sequence of saves (new ids and re-saved ids, in batches),
deletions and clears leaves every store holding exactly what a plain list model predicts, in
the same order, with seq strictly increasing, never reused and gap-free while nothing is deleted."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Message

IDS = st.sampled_from([f"m{i}" for i in range(12)])
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=5)
SAVE = st.tuples(st.just("save"), st.lists(st.tuples(IDS, TEXT), min_size=1, max_size=4))
DELETE = st.tuples(st.just("delete"), st.lists(IDS, max_size=3))
CLEAR = st.tuples(st.just("clear"), st.just(list[str]()))
OPERATIONS = st.lists(st.one_of(SAVE, SAVE, SAVE, DELETE, CLEAR), max_size=25)


async def _replay(factory: Any, operations: list[tuple[str, list[Any]]]) -> None:
    model: dict[str, tuple[int, str]] = {}  # id -> (seq, text), the expected state
    next_seq = 1
    deleted_any = False
    with tempfile.TemporaryDirectory() as folder:
        async with factory.memory(Path(folder)) as memory:
            for kind, payload in operations:
                if kind == "save":
                    saved = await memory.save_messages(
                        [Message.user(text, id=i) for i, text in payload], thread_id="t", resource_id="r"
                    )
                    for (message_id, text), message in zip(payload, saved, strict=True):
                        if message_id not in model:
                            model[message_id] = (next_seq, text)
                            next_seq += 1
                        model[message_id] = (model[message_id][0], text)
                        assert message.seq == model[message_id][0]
                elif kind == "delete":
                    count = await memory.delete_messages(payload, thread_id="t", resource_id="r")
                    assert count == len({i for i in payload if i in model})
                    for message_id in payload:
                        model.pop(message_id, None)
                    deleted_any = deleted_any or count > 0
                else:
                    assert await memory.clear_thread(thread_id="t", resource_id="r") == len(model)
                    deleted_any = deleted_any or bool(model)
                    model.clear()
                stored = await memory.get_messages(thread_id="t", resource_id="r")
                expected = sorted(model.items(), key=lambda item: item[1][0])
                assert [(m.id, m.seq, m.text) for m in stored] == [
                    (i, seq, text) for i, (seq, text) in expected
                ]
                if not deleted_any:
                    assert [m.seq for m in stored] == list(range(1, len(stored) + 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=OPERATIONS)
def test_any_history_of_writes_matches_the_list_model(
    store_factory: Any, operations: list[tuple[str, list[Any]]]
) -> None:
    asyncio.run(_replay(store_factory, operations))
