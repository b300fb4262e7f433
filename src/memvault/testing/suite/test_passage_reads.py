"""Passage reads (:class:`~memvault.stores.capabilities.PassageReads`): each passage is the
passage of the message the core call returns (thread, id, seq, time, metadata, indexed text),
and builds exactly that message, for any resource and thread, missing ones and another
resource's included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memvault import Memory, Message, ToolCallPart, ToolResultPart
from memvault.stores.base import MessageQuery
from memvault.stores.capabilities import PassageReads
from memvault.stores.passages import Passage

pytestmark = pytest.mark.capability("passage_reads", "full_text")

R, OTHER = "ada", "bob"


def _passages(memory: Memory) -> PassageReads:
    store = memory.store
    assert isinstance(store, PassageReads)
    return store


def fields(passage: Passage) -> tuple[Any, ...]:
    return (passage.thread_id, passage.id, passage.seq, passage.created_us, passage.metadata, passage.text)


async def seed(memory: Memory, *, extra: Callable[[int], str] = lambda i: "") -> None:
    """Two threads of the resource ``R``: seven messages of Ada's (``extra(i)`` appended to the
    i-th), a tool call and its result, a CJK one; one message deleted."""
    for thread in ("t1", "t2"):
        said = [Message.user(f"{thread} Green TEA number {i}" + extra(i), id=f"{thread}-m{i}",
                             metadata={"name": "Ada"}) for i in range(7)]
        said.append(Message(role="assistant", id=f"{thread}-call",
                            parts=[ToolCallPart(tool_call_id="c", name="tea", args={"kind": "green"})]))
        said.append(Message(role="tool", id=f"{thread}-result",
                            parts=[ToolResultPart(tool_call_id="c", output="green tea: sencha")]))
        said.append(Message.assistant("Café 我喜欢中文和茶 tea", id=f"{thread}-last"))
        await memory.save_messages(said, thread_id=thread, resource_id=R)
    await memory.delete_messages(["t1-m3"], thread_id="t1", resource_id=R)


@pytest.mark.parametrize("message_range", [0, 1, 3])
async def test_read_passages_is_read_around_as_passages(memory: Memory, message_range: int) -> None:
    await seed(memory)
    store = memory.store
    ids = {"t1": ["t1-m2", "t1-m5", "t1-m3", "t1-last"], "t2": ["t2-m0", "t2-result"], "missing": ["x"]}
    read = await _passages(memory).read_passages(R, ids, message_range)
    for thread, wanted in ids.items():
        expected = await store.get_messages(R, thread, MessageQuery(ids=wanted, message_range=message_range))
        assert [fields(p) for p in read[thread]] == [fields(Passage.of(m)) for m in expected]
        assert [p.message() for p in read[thread]] == expected
    other = await _passages(memory).read_passages(OTHER, ids, message_range)
    assert all(found == [] for found in other.values())


@pytest.mark.parametrize("query", ["green tea", "sencha", "café", "中文", "nothing here"])
async def test_search_passages_is_search_messages_as_passages(memory: Memory, query: str) -> None:
    await seed(memory)
    for resource, thread in ((R, None), (R, "t2"), (OTHER, None)):
        hits = await memory.store.search_messages(resource, query, thread_id=thread, limit=5)  # type: ignore[attr-defined]
        found = await _passages(memory).search_passages(resource, query, thread_id=thread, limit=5)
        assert [(fields(p), score) for p, score in found] == [
            (fields(Passage.of(h.message)), h.score) for h in hits]
        assert [p.message() for p, _ in found] == [h.message for h in hits]
