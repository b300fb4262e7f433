"""Messages: save (seq, upsert, round trip), read (windows, cursors, neighbours), delete, clear,
delete_resource."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from memvault import (
    DataPart,
    FilePart,
    ImagePart,
    Memory,
    Message,
    MessageTooLargeError,
    NotFoundError,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ValidationError,
)
from memvault.testing import has
from memvault.testing.support import ids, save_texts, snapshot, tick, with_options, with_working_memory

R, T = "alice", "t"
SIX = {f"m{i}": f"message number {i}" for i in range(1, 7)}


def _stored(message: Message) -> dict[str, Any]:
    """What must survive a round trip: everything but what the store fills in."""
    return message.model_dump(exclude={"thread_id", "resource_id", "seq"})


# save_messages


async def test_save_creates_the_thread_under_the_resource(memory: Memory) -> None:
    saved = await save_texts(memory, {"a": "hi"}, thread_id=T, resource_id=R)
    thread = await memory.get_thread(thread_id=T, resource_id=R)
    assert thread is not None and thread.resource_id == R
    assert [t.id for t in (await memory.list_threads(resource_id=R)).threads] == [T]
    assert [(m.thread_id, m.resource_id, m.seq) for m in saved] == [(T, R, 1)]


async def test_save_assigns_gap_free_seq_in_order(memory: Memory) -> None:
    first = await save_texts(memory, {"c": "1", "a": "2", "b": "3"}, thread_id=T, resource_id=R)
    second = await save_texts(memory, {"e": "4", "d": "5"}, thread_id=T, resource_id=R)
    assert [(m.id, m.seq) for m in first + second] == [
        ("c", 1), ("a", 2), ("b", 3), ("e", 4), ("d", 5)
    ]
    stored = await memory.get_messages(thread_id=T, resource_id=R)
    assert [(m.id, m.seq) for m in stored] == [(m.id, m.seq) for m in first + second]


async def test_resaving_an_id_updates_in_place_and_keeps_seq(memory: Memory) -> None:
    await save_texts(memory, {"a": "old text", "b": "other"}, thread_id=T, resource_id=R)
    updated = Message.assistant("new text", id="a", metadata={"edited": True})
    saved = await memory.save_messages([updated, Message.user("c", id="c")],
                                       thread_id=T, resource_id=R)
    assert [(m.id, m.seq) for m in saved] == [("a", 1), ("c", 3)]
    stored = await memory.get_messages(thread_id=T, resource_id=R)
    assert [(m.id, m.seq, m.role, m.text) for m in stored] == [
        ("a", 1, "assistant", "new text"), ("b", 2, "user", "other"), ("c", 3, "user", "c")
    ]
    assert stored[0].metadata == {"edited": True}


async def test_duplicate_ids_in_one_batch_store_one_message(memory: Memory) -> None:
    batch = [Message.user("v1", id="a"), Message.user("b", id="b"), Message.user("v2", id="a")]
    saved = await memory.save_messages(batch, thread_id=T, resource_id=R)
    assert {m.id: m.seq for m in saved} == {"a": 1, "b": 2}
    stored = await memory.get_messages(thread_id=T, resource_id=R)
    assert [(m.id, m.seq, m.text) for m in stored] == [("a", 1, "v2"), ("b", 2, "b")]
    more = await save_texts(memory, {"c": "c"}, thread_id=T, resource_id=R)
    assert more[0].seq == 3


async def test_save_bumps_thread_updated_at(memory: Memory) -> None:
    created = await memory.create_thread(resource_id=R, thread_id=T)
    await tick()
    await save_texts(memory, {"a": "hi"}, thread_id=T, resource_id=R)
    after_save = await memory.get_thread(thread_id=T, resource_id=R)
    assert after_save is not None and after_save.updated_at > created.updated_at
    await tick()
    await save_texts(memory, {"a": "edited"}, thread_id=T, resource_id=R)
    after_edit = await memory.get_thread(thread_id=T, resource_id=R)
    assert after_edit is not None and after_edit.updated_at > after_save.updated_at
    assert after_edit.created_at == created.created_at


async def test_save_nothing_is_a_no_op(memory: Memory) -> None:
    assert await memory.save_messages([], thread_id=T, resource_id=R) == []
    assert await memory.get_thread(thread_id=T, resource_id=R) is None


EVERY_PART = [
    TextPart(text="Plain text with unicode: 中文 🎉 café עברית"),
    ReasoningPart(text="thinking…", signature="sig=="),
    ReasoningPart(text="unsigned"),
    ToolCallPart(tool_call_id="call-1", name="lookup",
                 args={"q": "tea", "n": 3, "f": 0.5, "nested": {"l": [1, None, True]}}),
    ToolCallPart(tool_call_id="call-2", name="raw", args="not {json"),
    ToolResultPart(tool_call_id="call-1", name="lookup", output={"rows": [1, 2.5, None, "ü"]},
                   is_error=True),
    ToolResultPart(tool_call_id="call-2", output="plain output"),
    ToolResultPart(tool_call_id="call-3"),
    FilePart(url="https://example.com/a.pdf", media_type="application/pdf", name="a.pdf"),
    FilePart(url="file:///tmp/x"),
    ImagePart(url="data:image/png;base64,iVBORw0KGgo=", media_type="image/png", detail="high"),
    ImagePart(url="https://example.com/i.png"),
    DataPart(data=[{"a": 1}, "two", 3.0, False, None], name="payload"),
    DataPart(),
]


@pytest.mark.parametrize(
    "message",
    [
        Message(role="assistant", parts=EVERY_PART, metadata={"k": [1, {"x": None}], "ü": "✓"}),
        Message(role="tool", parts=[], metadata={}),
        Message.system("你好\uff0c世界 🌏👨‍👩‍👧 e\u0301 \U0001f4a5", id="消息-1"),
        Message.user("x", id="i" * 256, metadata={"long": "y" * 10_000}),
    ],
    ids=["every-part", "no-parts", "unicode", "long-id"],
)
async def test_round_trip_preserves_everything(memory: Memory, message: Message) -> None:
    saved = await memory.save_messages([message], thread_id="スレッド 🧵", resource_id="🙂 user")
    (stored,) = await memory.get_messages(thread_id="スレッド 🧵", resource_id="🙂 user")
    assert _stored(stored) == _stored(message)
    assert stored == saved[0]
    assert (stored.thread_id, stored.resource_id, stored.seq) == ("スレッド 🧵", "🙂 user", 1)
    assert stored.parts_json() == message.parts_json()


async def test_round_trip_of_dict_messages(memory: Memory) -> None:
    raw = {"id": "d", "role": "user", "parts": [{"type": "text", "text": "from a dict"}]}
    await memory.save_messages([raw], thread_id=T, resource_id=R)
    (stored,) = await memory.get_messages(thread_id=T, resource_id=R)
    assert (stored.id, stored.role, stored.text) == ("d", "user", "from a dict")


@pytest.mark.parametrize(
    ("created_at", "expected"),
    [
        pytest.param(datetime(2024, 2, 29, 23, 59, 59, 999999, UTC),
                     datetime(2024, 2, 29, 23, 59, 59, 999999, UTC), id="utc"),
        pytest.param(datetime(2024, 1, 2, 3, 4, 5, 6),
                     datetime(2024, 1, 2, 3, 4, 5, 6, UTC), id="naive-is-utc"),
        pytest.param(datetime(2024, 1, 2, 3, 4, 5, 123456, timezone(timedelta(hours=5, minutes=30))),
                     datetime(2024, 1, 1, 21, 34, 5, 123456, UTC), id="offset"),
        pytest.param(datetime(1970, 1, 1, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC), id="epoch"),
        pytest.param(
            datetime(2041, 3, 3, 9, 55, 56, 256303, UTC),
            datetime(2041, 3, 3, 9, 55, 56, 256303, UTC),
            id="2041",
        ),
        pytest.param(
            datetime(1952, 6, 1, 11, 20, 32, 326459, UTC),
            datetime(1952, 6, 1, 11, 20, 32, 326459, UTC),
            id="1952",
        ),
    ],
)
async def test_created_at_round_trips_in_utc_to_the_microsecond(
    memory: Memory, created_at: datetime, expected: datetime
) -> None:
    await memory.save_messages([Message.user("x", created_at=created_at)], thread_id=T, resource_id=R)
    (stored,) = await memory.get_messages(thread_id=T, resource_id=R)
    assert stored.created_at == expected
    assert stored.created_at.microsecond == expected.microsecond
    assert stored.created_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "robot", "parts": []},
        {"role": "user", "parts": [{"type": "video", "url": "x"}]},
        {"role": "user", "parts": [{"type": "text", "text": "nul \x00 byte"}]},
        {"role": "user", "parts": [{"type": "text", "text": "lone \ud800 surrogate"}]},
        {"role": "user", "metadata": {"f": float("nan")}},
        {"role": "user", "id": ""},
        {"role": "user", "id": "x" * 257},
        {"role": "user", "unknown": 1},
        "not a message",
    ],
)
async def test_bad_message_writes_nothing(memory: Memory, bad: Any) -> None:
    await save_texts(memory, {"a": "kept"}, thread_id=T, resource_id=R)
    with pytest.raises(ValidationError):
        await memory.save_messages([Message.user("new"), bad], thread_id=T, resource_id=R)
    assert ids(await memory.get_messages(thread_id=T, resource_id=R)) == ["a"]
    with pytest.raises(ValidationError):
        await memory.save_messages([bad], thread_id="fresh", resource_id=R)
    assert await memory.get_thread(thread_id="fresh", resource_id=R) is None


async def test_too_large_message_is_refused(memory: Memory) -> None:
    small = with_options(memory, max_message_bytes=100)
    with pytest.raises(MessageTooLargeError, match="max_message_bytes"):
        await small.save_messages([Message.user("x" * 200)], thread_id=T, resource_id=R)
    assert await memory.get_thread(thread_id=T, resource_id=R) is None


# get_messages


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["m1", "m2", "m3", "m4", "m5", "m6"]),
        ({"last_n": 2}, ["m5", "m6"]),
        ({"first_n": 2}, ["m1", "m2"]),
        ({"last_n": 0}, []),
        ({"first_n": 0}, []),
        ({"last_n": 6}, ["m1", "m2", "m3", "m4", "m5", "m6"]),
        ({"first_n": 9}, ["m1", "m2", "m3", "m4", "m5", "m6"]),
        ({"last_n": 100}, ["m1", "m2", "m3", "m4", "m5", "m6"]),
        pytest.param(
            {"last_n": 8}, ["m1", "m2", "m3", "m4", "m5", "m6"], id="last_n-above-count",
        ),
        ({"before": "m3"}, ["m1", "m2"]),
        ({"before": "m1"}, []),
        ({"after": "m4"}, ["m5", "m6"]),
        ({"after": "m6"}, []),
        ({"after": "m1", "before": "m5"}, ["m2", "m3", "m4"]),
        ({"after": "m4", "before": "m2"}, []),
        ({"after": "m1", "last_n": 2}, ["m5", "m6"]),
        ({"after": "m1", "first_n": 2}, ["m2", "m3"]),
        ({"before": "m5", "last_n": 2}, ["m3", "m4"]),
        ({"before": "m5", "first_n": 1}, ["m1"]),
        ({"ids": ["m3"]}, ["m3"]),
        ({"ids": ["m4", "m2"]}, ["m2", "m4"]),
        ({"ids": ["m3"], "message_range": 1}, ["m2", "m3", "m4"]),
        ({"ids": ["m1", "m6"], "message_range": 1}, ["m1", "m2", "m5", "m6"]),
        ({"ids": ["m2", "m4"], "message_range": 1}, ["m1", "m2", "m3", "m4", "m5"]),
        ({"ids": ["m3"], "message_range": 10}, ["m1", "m2", "m3", "m4", "m5", "m6"]),
        ({"ids": ["nope"], "message_range": 2}, []),
        ({"ids": []}, []),
        ({"ids": ["m3"], "message_range": 2, "last_n": 2}, ["m4", "m5"]),
        ({"ids": ["m3"], "message_range": 2, "first_n": 2}, ["m1", "m2"]),
        pytest.param(
            {"ids": ["m1", "m2"], "last_n": 3}, ["m1", "m2"], id="ids-last_n-above-count",
        ),
    ],
    ids=lambda v: None if isinstance(v, list) else str(v),
)
async def test_get_messages(memory: Memory, query: dict[str, Any], expected: list[str]) -> None:
    await save_texts(memory, SIX, thread_id=T, resource_id=R)
    await save_texts(memory, {"x1": "other thread"}, thread_id="other", resource_id=R)
    assert ids(await memory.get_messages(thread_id=T, resource_id=R, **query)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"ids": ["m5"], "message_range": 1}, ["m2", "m5", "m6"]),
        ({"ids": ["m2"], "message_range": 2}, ["m1", "m2", "m5", "m6"]),
        ({"ids": ["m6"], "message_range": 3}, ["m1", "m2", "m5", "m6"]),
        ({"ids": ["m3"], "message_range": 1}, []),
        ({"after": "m2"}, ["m5", "m6"]),
        ({"before": "m5", "last_n": 1}, ["m2"]),
        ({"last_n": 3}, ["m2", "m5", "m6"]),
    ],
    ids=str,
)
async def test_get_messages_after_deletions_counts_positions_not_seq(
    memory: Memory, query: dict[str, Any], expected: list[str]
) -> None:
    await save_texts(memory, SIX, thread_id=T, resource_id=R)
    assert await memory.delete_messages(["m3", "m4"], thread_id=T, resource_id=R) == 2
    assert ids(await memory.get_messages(thread_id=T, resource_id=R, **query)) == expected


@pytest.mark.parametrize("cursor", ["before", "after"])
@pytest.mark.parametrize("message_id", ["nope", "x1"], ids=["unknown", "other-thread"])
async def test_unknown_cursor_raises_not_found(memory: Memory, cursor: str, message_id: str) -> None:
    await save_texts(memory, SIX, thread_id=T, resource_id=R)
    await save_texts(memory, {"x1": "other thread"}, thread_id="other", resource_id=R)
    with pytest.raises(NotFoundError, match=repr(message_id)):
        await memory.get_messages(thread_id=T, resource_id=R, **{cursor: message_id})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "query",
    [{"last_n": 1, "first_n": 1}, {"last_n": -1}, {"first_n": -2}, {"message_range": -1},
     {"ids": "m1"}, {"ids": ["m1"], "after": "m2"}, {"ids": [""]}],
    ids=str,
)
async def test_contradictory_or_negative_query_raises(memory: Memory, query: dict[str, Any]) -> None:
    await save_texts(memory, SIX, thread_id=T, resource_id=R)
    with pytest.raises(ValidationError):
        await memory.get_messages(thread_id=T, resource_id=R, **query)


@pytest.mark.parametrize("query", [{}, {"last_n": 5}, {"first_n": 5}, {"ids": ["m1"]}], ids=str)
async def test_missing_thread_has_no_messages(memory: Memory, query: dict[str, Any]) -> None:
    assert await memory.get_messages(thread_id="nope", resource_id=R, **query) == []


async def test_returned_messages_are_snapshots(memory: Memory) -> None:
    message = Message(role="assistant", metadata={"m": [1]},
                      parts=[ToolCallPart(tool_call_id="c", name="f", args={"a": [1]})])
    saved = await memory.save_messages([message], thread_id=T, resource_id=R)
    message.metadata["m"].append("input")
    saved[0].metadata["m"].append("saved")
    (got,) = await memory.get_messages(thread_id=T, resource_id=R)
    got.metadata["m"].append("got")
    assert isinstance(got.parts[0], ToolCallPart) and isinstance(got.parts[0].args, dict)
    got.parts[0].args["a"].append("got")
    (final,) = await memory.get_messages(thread_id=T, resource_id=R)
    assert (final.metadata, final.tool_calls[0].args) == ({"m": [1]}, {"a": [1]})


# deleting


async def test_delete_messages_counts_those_that_existed(memory: Memory) -> None:
    await save_texts(memory, SIX, thread_id=T, resource_id=R)
    deleted = await memory.delete_messages(["m2", "m2", "nope", "m5"], thread_id=T, resource_id=R)
    assert deleted == 2
    assert ids(await memory.get_messages(thread_id=T, resource_id=R)) == ["m1", "m3", "m4", "m6"]
    assert await memory.delete_messages(["m2"], thread_id=T, resource_id=R) == 0
    assert await memory.delete_messages([], thread_id=T, resource_id=R) == 0
    assert await memory.delete_messages(["m1"], thread_id="nope", resource_id=R) == 0
    with pytest.raises(ValidationError):
        await memory.delete_messages("m1", thread_id=T, resource_id=R)
    # seqs are never reused: a new message comes after every message ever saved
    (new,) = await save_texts(memory, {"m7": "later"}, thread_id=T, resource_id=R)
    assert new.seq is not None and new.seq > 6


async def test_clear_thread_keeps_the_thread(memory: Memory) -> None:
    await save_texts(memory, SIX, thread_id=T, resource_id=R)
    await save_texts(memory, {"x1": "message in another thread"}, thread_id="other", resource_id=R)
    assert await memory.clear_thread(thread_id=T, resource_id=R) == 6
    assert await memory.get_thread(thread_id=T, resource_id=R) is not None
    assert await memory.get_messages(thread_id=T, resource_id=R) == []
    if has(memory, "full_text"):
        assert ids(await memory.search_messages(resource_id=R, query="message")) == ["x1"]
    assert await memory.clear_thread(thread_id=T, resource_id=R) == 0
    assert await memory.clear_thread(thread_id="nope", resource_id=R) == 0


async def _populate(memory: Memory, resource_id: str) -> None:
    scoped = with_working_memory(memory, scope="thread")
    await memory.create_thread(resource_id=resource_id, thread_id="empty")
    await save_texts(memory, {"a": "shared apples", "b": "shared bananas"},
                     thread_id="t1", resource_id=resource_id)
    await save_texts(memory, {"a": "shared cherries"}, thread_id="t2", resource_id=resource_id)
    await memory.update_working_memory(f"{resource_id} note", resource_id=resource_id)
    await scoped.update_working_memory("thread note", resource_id=resource_id, thread_id="t1")
    if has(memory, "states"):
        await memory.set_state({"step": 1}, resource_id=resource_id, key="run-1", status="running")
        await memory.set_state({"step": 2}, resource_id=resource_id, key="run-2")
    if has(memory, "summaries"):
        await memory.save_summary("apples and bananas", thread_id="t1", resource_id=resource_id,
                                  through_message_id="b", expected_version=None)


async def test_delete_resource_removes_everything_of_that_resource_only(memory: Memory) -> None:
    await _populate(memory, "alice")
    await _populate(memory, "bob")
    words = ["shared", "apples"]
    bob_before = await snapshot(memory, "bob", ["empty", "t1", "t2"], words)

    deleted = await memory.delete_resource(resource_id="alice")

    counts = (deleted.threads, deleted.messages, deleted.working_memories, deleted.states)
    assert counts == (3, 3, 2, 2 if has(memory, "states") else 0)
    assert await snapshot(memory, "alice", ["empty", "t1", "t2"], words) == {
        "threads": {tid: {"thread": None, "messages": [], "working_memory": None, "summary": None}
                    for tid in ["empty", "t1", "t2"]},
        "listed": [],
        "search": {"shared": [], "apples": []},
        "working_memory": None,
        "states": [],
    }
    if has(memory, "states"):
        assert await memory.get_state(resource_id="alice", key="run-1") is None
    assert await snapshot(memory, "bob", ["empty", "t1", "t2"], words) == bob_before
    again = await memory.delete_resource(resource_id="alice")
    assert (again.threads, again.messages, again.working_memories, again.states) == (0, 0, 0, 0)
