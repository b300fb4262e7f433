"""Threads: create, get, list (newest activity first, paged), update, delete."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from memvault import Memory, Message, Thread, ThreadExistsError, ThreadNotFoundError, ValidationError
from memvault.testing import has
from memvault.testing.support import save_texts, tick

R = "alice"


async def test_create_with_random_id_gives_distinct_ids(memory: Memory) -> None:
    first = await memory.create_thread(resource_id=R, title="First", metadata={"k": 1})
    second = await memory.create_thread(resource_id=R)
    assert first.id and second.id and first.id != second.id
    assert (first.resource_id, first.title, first.metadata) == (R, "First", {"k": 1})
    assert await memory.get_thread(thread_id=first.id, resource_id=R) == first


async def test_create_with_given_id(memory: Memory) -> None:
    created = await memory.create_thread(resource_id=R, thread_id="t-1", title="Hello")
    assert created.id == "t-1"
    fetched = await memory.get_thread(thread_id="t-1", resource_id=R)
    assert fetched is not None
    assert (fetched.id, fetched.resource_id, fetched.title) == ("t-1", R, "Hello")
    assert fetched.created_at == created.created_at
    assert fetched.created_at.utcoffset() == timedelta(0)


async def test_create_existing_id_raises_unless_exist_ok(memory: Memory) -> None:
    original = await memory.create_thread(resource_id=R, thread_id="t", title="Original")
    with pytest.raises(ThreadExistsError, match="'t' already exists"):
        await memory.create_thread(resource_id=R, thread_id="t", title="Other")
    again = await memory.create_thread(resource_id=R, thread_id="t", title="Other", exist_ok=True)
    assert again == original  # the existing thread, unchanged
    assert (await memory.get_thread(thread_id="t", resource_id=R)) == original
    assert len((await memory.list_threads(resource_id=R)).threads) == 1


async def test_get_missing_thread_is_none(memory: Memory) -> None:
    assert await memory.get_thread(thread_id="nope", resource_id=R) is None


async def test_list_is_newest_activity_first_and_pages_without_gaps(memory: Memory) -> None:
    for i in range(7):
        await memory.create_thread(resource_id=R, thread_id=f"t{i}")
        await tick()
    # activity moves a thread to the front: a new message, a title change
    await memory.save_messages([Message.user("hi")], thread_id="t0", resource_id=R)
    await tick()
    await memory.update_thread(thread_id="t1", resource_id=R, title="renamed")
    expected = ["t1", "t0", "t6", "t5", "t4", "t3", "t2"]

    pages, cursor = [], None
    while True:
        page = await memory.list_threads(resource_id=R, limit=3, cursor=cursor)
        pages.append([t.id for t in page.threads])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == [expected[0:3], expected[3:6], expected[6:]]
    assert [t.id for t in (await memory.list_threads(resource_id=R)).threads] == expected
    assert (await memory.list_threads(resource_id=R, limit=7)).next_cursor is None


async def test_list_of_resource_without_threads_is_empty(memory: Memory) -> None:
    page = await memory.list_threads(resource_id="nobody")
    assert (page.threads, page.next_cursor) == ([], None)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    ["", "not a cursor!", "%%%", "Zm9v", _b64(b"abc:t1"), _b64(b"\xff\xfe:x"), "é", "=" * 8,
     _b64(f"{2**63}:t1".encode()), _b64(f"-{10**30}:t1".encode())],
)
async def test_list_with_bad_cursor_raises_validation_error(memory: Memory, cursor: str) -> None:
    await memory.create_thread(resource_id=R, thread_id="t1")
    with pytest.raises(ValidationError, match="cursor"):
        await memory.list_threads(resource_id=R, cursor=cursor)


@pytest.mark.parametrize("limit", [0, -1, 10_001])
async def test_list_with_bad_limit_raises_validation_error(memory: Memory, limit: int) -> None:
    with pytest.raises(ValidationError):
        await memory.list_threads(resource_id=R, limit=limit)


@pytest.mark.parametrize(
    ("change", "expected_title", "expected_metadata"),
    [
        ({"title": "New"}, "New", {"a": 1}),
        ({"title": None}, None, {"a": 1}),
        ({"metadata": {"b": [2, "ü"]}}, "Old", {"b": [2, "ü"]}),
        ({"metadata": {}}, "Old", {}),
        ({"title": "标题 🎉", "metadata": {"c": None}}, "标题 🎉", {"c": None}),
    ],
    ids=["title", "clear-title", "metadata", "empty-metadata", "both"],
)
async def test_update_thread(
    memory: Memory, change: dict[str, Any], expected_title: str | None, expected_metadata: dict[str, Any]
) -> None:
    before = await memory.create_thread(resource_id=R, thread_id="t", title="Old", metadata={"a": 1})
    await tick()
    updated = await memory.update_thread(thread_id="t", resource_id=R, **change)
    fetched = await memory.get_thread(thread_id="t", resource_id=R)
    assert fetched == updated
    assert (fetched.title, fetched.metadata) == (expected_title, expected_metadata)
    assert fetched.updated_at > before.updated_at
    assert fetched.created_at == before.created_at


@pytest.mark.parametrize("change", [{"title": 3}, {"metadata": "x"}, {"metadata": {"x": {1, 2}}}])
async def test_update_thread_with_bad_input_changes_nothing(memory: Memory, change: dict[str, Any]) -> None:
    before = await memory.create_thread(resource_id=R, thread_id="t", title="Old", metadata={"a": 1})
    with pytest.raises(ValidationError):
        await memory.update_thread(thread_id="t", resource_id=R, **change)
    assert await memory.get_thread(thread_id="t", resource_id=R) == before


async def test_update_missing_thread_raises(memory: Memory) -> None:
    with pytest.raises(ThreadNotFoundError, match="'nope' was not found") as raised:
        await memory.update_thread(thread_id="nope", resource_id=R, title="x")
    assert raised.value.thread_id == "nope"
    assert await memory.get_thread(thread_id="nope", resource_id=R) is None


async def test_delete_thread_removes_messages_and_thread_working_memory(
    memory: Memory, thread_scoped: Memory
) -> None:
    await save_texts(memory, {"m1": "penguins waddle"}, thread_id="t", resource_id=R)
    await save_texts(memory, {"k1": "penguins swim"}, thread_id="keep", resource_id=R)
    await thread_scoped.update_working_memory("thread note", resource_id=R, thread_id="t")
    await thread_scoped.update_working_memory("other note", resource_id=R, thread_id="keep")
    await memory.update_working_memory("resource note", resource_id=R)

    assert await memory.delete_thread(thread_id="t", resource_id=R) is True

    assert await memory.get_thread(thread_id="t", resource_id=R) is None
    assert await memory.get_messages(thread_id="t", resource_id=R) == []
    assert await thread_scoped.get_working_memory(resource_id=R, thread_id="t") is None
    if has(memory, "full_text"):
        hits = await memory.search_messages(resource_id=R, query="penguins")
        assert [h.message.id for h in hits] == ["k1"]
    # the rest of the resource is untouched
    assert [t.id for t in (await memory.list_threads(resource_id=R)).threads] == ["keep"]
    assert await thread_scoped.get_working_memory(resource_id=R, thread_id="keep") == "other note"
    assert await memory.get_working_memory(resource_id=R) == "resource note"
    # a thread recreated under the same id starts empty
    saved = await save_texts(memory, {"n1": "fresh"}, thread_id="t", resource_id=R)
    assert [m.seq for m in saved] == [1]
    assert await memory.delete_thread(thread_id="t", resource_id=R) is True


async def test_delete_missing_thread_is_false(memory: Memory) -> None:
    assert await memory.delete_thread(thread_id="nope", resource_id=R) is False
    await memory.create_thread(resource_id=R, thread_id="t")
    assert await memory.delete_thread(thread_id="t", resource_id=R) is True
    assert await memory.delete_thread(thread_id="t", resource_id=R) is False


async def _created(memory: Memory) -> Thread:
    return await memory.create_thread(resource_id=R, thread_id="t2", metadata={"tags": ["a"]})


async def _fetched(memory: Memory) -> Thread | None:
    return await memory.get_thread(thread_id="t", resource_id=R)


async def _listed(memory: Memory) -> Thread:
    return (await memory.list_threads(resource_id=R)).threads[-1]


async def _updated(memory: Memory) -> Thread:
    return await memory.update_thread(thread_id="t", resource_id=R, title="x")


@pytest.mark.parametrize(
    "returned", [_created, _fetched, _listed, _updated], ids=["create", "get", "list", "update"]
)
async def test_returned_threads_are_snapshots(
    memory: Memory, returned: Callable[[Memory], Awaitable[Thread | None]]
) -> None:
    """Mutating a thread the API returned must not change what is stored."""
    await memory.create_thread(resource_id=R, thread_id="t", metadata={"tags": ["a"]})
    thread = await returned(memory)
    assert thread is not None
    thread.metadata["tags"].append("mutated")
    thread.metadata["new"] = True
    stored = await memory.get_thread(thread_id=thread.id, resource_id=R)
    assert stored is not None
    assert stored.metadata == {"tags": ["a"]}
