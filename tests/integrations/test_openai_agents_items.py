"""MemvaultSession stores what the SDK's own SQLiteSession stores, and gives it back as that one
does, on memory://, SQLite and PostgreSQL: Hypothesis over items (arbitrary JSON and SDK-shaped
items, strings with NUL bytes, lone surrogates and ``%``), compared with a real SQLiteSession
fed the same items; each item stored once; errors of the SDK's types."""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, MemoryOptions
from memvault.errors import MemvaultError, MessageTooLargeError, ValidationError
from memvault.integrations.openai_agents import (
    STORED_KEY,
    ItemNotJSONError,
    MemvaultSession,
    item_to_message,
    message_to_items,
)
from memvault.model import ImagePart, TextPart, ToolResultPart

agents = pytest.importorskip("agents")

ODD = ["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "%", "%25", "\ufffd", "\\u0000", '"']
TEXT = st.lists(st.one_of(st.characters(), st.sampled_from(ODD)), max_size=10).map("".join)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
JSON = st.recursive(
    SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
PIECE = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text"]), "text": TEXT}),
    st.fixed_dictionaries({"type": st.just("input_image"), "image_url": TEXT},
                          optional={"detail": st.sampled_from(["auto", "low", "high", "odd"])}),
    st.dictionaries(TEXT, JSON, max_size=3),
    JSON,
)
SDK_ITEM = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "developer", "other"]),
         "content": TEXT | st.lists(PIECE, max_size=4)},
        optional={"type": st.just("message"), "id": TEXT, "status": TEXT},
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": TEXT, "name": TEXT,
         "arguments": TEXT | JSON.map(json.dumps) | JSON},
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call_output"), "call_id": TEXT,
         "output": TEXT | st.lists(PIECE, max_size=3) | JSON},
    ),
    st.fixed_dictionaries(
        {"type": st.just("reasoning"), "id": TEXT,
         "summary": st.lists(st.fixed_dictionaries({"type": st.just("summary_text"), "text": TEXT}),
                             max_size=3) | JSON},
    ),
)
ITEM = st.one_of(SDK_ITEM, SDK_ITEM, st.dictionaries(TEXT, JSON, max_size=4), JSON)


def same(got: Any, expected: Any) -> bool:
    """Equal as JSON text: key order, NaN and the type of every number count."""
    return json.dumps(got) == json.dumps(expected)


def sdk_round_trip(item: Any) -> Any:
    return json.loads(json.dumps(item))


async def _check(memory: Memory, sdk_db: Path, batches: list[list[Any]]) -> None:
    session_id = uuid.uuid4().hex
    ours = MemvaultSession(session_id, memory, resource_id="ada")
    theirs = agents.SQLiteSession(session_id, sdk_db)
    try:
        expected: list[Any] = []
        for batch in batches:
            await ours.add_items(batch)
            await theirs.add_items(batch)
            expected += [sdk_round_trip(item) for item in batch]
        got = await ours.get_items()
        assert same(got, await theirs.get_items())
        assert same(got, expected)
        assert got == expected  # no NaN here: plain equality too
        assert same(await ours.get_items(limit=2), await theirs.get_items(limit=2))
        assert same(await ours.pop_item(), await theirs.pop_item())
        assert same(await ours.get_items(), await theirs.get_items())
    finally:
        theirs.close()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batches=st.lists(st.lists(ITEM, min_size=1, max_size=4), min_size=1, max_size=3))
def test_any_item_comes_back_as_sqlite_session_gives_it_back(
    looped_memory: tuple[asyncio.Runner, Memory], tmp_path: Path, batches: list[list[Any]]
) -> None:
    runner, memory = looped_memory
    runner.run(_check(memory, tmp_path / "sdk.db", batches))


@settings(max_examples=300, deadline=None)
@given(item=ITEM)
def test_the_codec_is_exact_and_the_view_is_valid(item: Any) -> None:
    message = item_to_message(item)
    assert same(message_to_items(message), [sdk_round_trip(item)])
    round_tripped = type(message).parse(json.loads(message.model_dump_json()))  # as a store reads it
    assert same(message_to_items(round_tripped), [sdk_round_trip(item)])


WEIRD: list[Any] = [
    {"role": "user", "content": "NUL \x00 and lone \ud800 surrogates \udfff, 100% sure"},
    {"type": "message", "role": "assistant",
     "content": [{"type": "output_text", "text": "a\x00b", "annotations": []},
                 {"type": "input_image", "image_url": "data:image/png;base64,\x00AAA", "detail": "low"}]},
    {"type": "function_call", "call_id": "c\x00", "name": "f\ud800", "arguments": '{"x": "\\u0000"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "\udc00" * 3},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think \x00"}], "x": math.nan},
    {"\x00key": ["\ud83d", "\ude00"], "inf": math.inf},
    "a plain string item \x00",
    [1, 2.5, None, True, "\udfff"],
]


async def test_nul_lone_surrogates_and_nan_round_trip_exactly(any_memory: Memory) -> None:
    session = MemvaultSession("s", any_memory, resource_id="ada")
    await session.add_items(WEIRD)
    assert same(await session.get_items(), WEIRD)
    for item in reversed(WEIRD):
        assert same(await session.pop_item(), item)
    assert await session.get_items() == []


async def test_searchable_text_is_cleaned_separately(any_memory: Memory) -> None:
    session = MemvaultSession("s", any_memory, resource_id="ada")
    await session.add_items(WEIRD[:4])
    messages = await any_memory.get_messages(thread_id="s", resource_id="ada")
    assert messages[0].parts == [TextPart(text="NUL   and lone \ufffd surrogates \ufffd, 100% sure")]
    assert messages[1].parts[0] == TextPart(text="a b")
    assert messages[3].parts == [ToolResultPart(tool_call_id="c1", output="\ufffd" * 3)]
    hits = await any_memory.search_messages(resource_id="ada", query="surrogates")
    assert [hit.message.id for hit in hits] == [messages[0].id]


async def test_each_item_is_stored_once(any_memory: Memory) -> None:
    image = "data:image/png;base64," + "A" * (9 * 1024 * 1024)  # 9 MiB: over half the limit
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "look"},
                                     {"type": "input_image", "image_url": image, "detail": "high"}]},
        {"role": "user", "content": "B" * (9 * 1024 * 1024)},
        {"type": "function_call_output", "call_id": "c1", "output": "C" * (9 * 1024 * 1024)},
    ]
    session = MemvaultSession("s", any_memory, resource_id="ada")
    await session.add_items(items)
    assert await session.get_items() == items
    messages = await any_memory.get_messages(thread_id="s", resource_id="ada")
    assert messages[0].parts[1] == ImagePart(url=image, detail="high")
    for message in messages:
        size = len(message.parts_json()) + len(json.dumps(message.metadata))
        assert size < 9 * 1024 * 1024 + 1024  # the big value once, and a small skeleton
        assert len(message.metadata[STORED_KEY]["item"]) < 200


async def test_an_item_over_the_message_limit_is_refused_whole(tmp_path: Path) -> None:
    options = MemoryOptions(max_message_bytes=1024 * 1024)
    async with await Memory.open(f"sqlite:///{tmp_path}/a.db", options=options) as memory:
        session = MemvaultSession("s", memory, resource_id="ada")
        with pytest.raises(MessageTooLargeError, match="max_message_bytes"):
            await session.add_items([{"role": "user", "content": "ok"},
                                     {"role": "user", "content": "x" * (1024 * 1024 + 1)}])
        assert await session.get_items() == []


@pytest.mark.parametrize("bad", [b"bytes", {1, 2}, object(), {("tuple", "key"): 1}])
async def test_non_json_items_raise_the_sdk_error_type(any_memory: Memory, tmp_path: Path, bad: Any) -> None:
    item = {"role": "user", "content": bad}
    theirs = agents.SQLiteSession("s", tmp_path / "sdk.db")
    with pytest.raises(TypeError) as sdk_error:
        await theirs.add_items([item])
    theirs.close()
    session = MemvaultSession("s", any_memory, resource_id="ada")
    with pytest.raises(TypeError) as our_error:
        await session.add_items([{"role": "user", "content": "fine"}, item])
    assert isinstance(our_error.value, ItemNotJSONError)
    assert isinstance(our_error.value, MemvaultError) and isinstance(our_error.value, ValidationError)
    assert type(sdk_error.value) is TypeError
    assert await session.get_items() == []  # bad input writes nothing
