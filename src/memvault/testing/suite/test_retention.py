"""Retention: a store-wide and per-resource maximum age. Expired messages are left out of every
read from the moment they expire (as if deleted), and the sweep erases them with their derived
data; resources without a policy are untouched."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, MemoryOptions, Message, RecallOptions, ValidationError
from memvault.model import now
from memvault.testing.support import ids

pytestmark = pytest.mark.capability("retention")

R, OTHER, T = "ada", "bob", "t1"
DAY = timedelta(days=1)


def _aged(text: str, days: float, message_id: str) -> Message:
    return Message.user(text, id=message_id, created_at=now() - days * DAY)


async def _conversation(memory: Memory, resource_id: str = R, thread_id: str = T) -> None:
    """o1..o3 are 100 days old, n1..n3 a day old, interleaved so that expiry leaves holes."""
    messages = [_aged("old walrus note", 100, "o1"), _aged("new walrus note", 1, "n1"),
                _aged("old walrus story", 100, "o2"), _aged("new walrus story", 1, "n2"),
                _aged("old walrus tale", 100, "o3"), _aged("new walrus tale", 1, "n3")]
    await memory.save_messages(messages, thread_id=thread_id, resource_id=resource_id)


async def _read_all(memory: Memory, resource_id: str = R) -> dict[str, list[str]]:
    """Every read a caller has, by name, as message ids."""
    turn = await memory.read_turn(thread_id=T, resource_id=resource_id, last_n=10)
    recall = await memory.recall(resource_id=resource_id, query="walrus", thread_id="elsewhere",
                                 options=RecallOptions(top_k=10))
    return {
        "all": ids(await memory.get_messages(thread_id=T, resource_id=resource_id)),
        "last_n": ids(await memory.get_messages(thread_id=T, resource_id=resource_id, last_n=2)),
        "first_n": ids(await memory.get_messages(thread_id=T, resource_id=resource_id, first_n=2)),
        "ids": ids(await memory.get_messages(thread_id=T, resource_id=resource_id, ids=["o2", "n2"],
                                             message_range=1)),
        "after": ids(await memory.get_messages(thread_id=T, resource_id=resource_id, after="n1")),
        "before": ids(await memory.get_messages(thread_id=T, resource_id=resource_id, before="n3")),
        "history": ids(await memory.get_history(thread_id=T, resource_id=resource_id)),
        "turn": ids(turn.messages),
        "search": sorted(ids(await memory.search_messages(resource_id=resource_id, query="walrus"))),
        "recall": sorted(h.message.id for h in recall.hits),
    }


EVERYTHING = {"all": ["o1", "n1", "o2", "n2", "o3", "n3"], "last_n": ["o3", "n3"], "first_n": ["o1", "n1"],
              "ids": ["n1", "o2", "n2", "o3"], "after": ["o2", "n2", "o3", "n3"],
              "before": ["o1", "n1", "o2", "n2", "o3"], "history": ["o1", "n1", "o2", "n2", "o3", "n3"],
              "turn": ["o1", "n1", "o2", "n2", "o3", "n3"],
              "search": ["n1", "n2", "n3", "o1", "o2", "o3"], "recall": ["n1", "n2", "n3", "o1", "o2", "o3"]}
RECENT = {"all": ["n1", "n2", "n3"], "last_n": ["n2", "n3"], "first_n": ["n1", "n2"],
          "ids": ["n1", "n2", "n3"], "after": ["n2", "n3"], "before": ["n1", "n2"],
          "history": ["n1", "n2", "n3"], "turn": ["n1", "n2", "n3"], "search": ["n1", "n2", "n3"],
          "recall": ["n1", "n2", "n3"]}
"""What each read returns with a 90-day policy: exactly what it returns once o1..o3 are deleted
(``ids`` asks for o2 and n2 with one neighbour each: n1, n2, n3 among what is left)."""


async def test_no_policy_keeps_everything(memory: Memory) -> None:
    await _conversation(memory)
    assert await memory.get_retention(resource_id=R) is None
    assert await memory.retention_policies() == {}
    assert await _read_all(memory) == EVERYTHING
    assert await memory.sweep() == {"messages": 0, "threads": 0, "resources": 0}
    assert await _read_all(memory) == EVERYTHING


@pytest.mark.parametrize("scope", ["store", "resource"])
async def test_expired_messages_are_never_read(memory: Memory, scope: str) -> None:
    await _conversation(memory)
    await memory.set_retention(90 * DAY, resource_id=None if scope == "store" else R)
    assert await memory.get_retention(resource_id=R) == 90 * DAY
    assert await _read_all(memory) == RECENT  # before any sweep
    # a page cursor naming an expired message still works until the sweep erases it
    assert ids(await memory.get_messages(thread_id=T, resource_id=R, after="o1")) == ["n1", "n2", "n3"]


async def test_deleting_the_expired_gives_the_same_reads(memory: Memory) -> None:
    """The reference for "as if deleted": the same conversation with o1..o3 deleted instead."""
    await _conversation(memory, resource_id=OTHER)
    await memory.delete_messages(["o1", "o2", "o3"], thread_id=T, resource_id=OTHER)
    assert await _read_all(memory, OTHER) == RECENT


async def test_resource_policy_replaces_the_store_policy(memory: Memory) -> None:
    await _conversation(memory, resource_id=R)
    await _conversation(memory, resource_id=OTHER)
    await memory.set_retention(90 * DAY)
    await memory.set_retention(365 * DAY, resource_id=OTHER)
    assert await memory.retention_policies() == {None: 90 * DAY, OTHER: 365 * DAY}
    assert await memory.get_retention() == 90 * DAY
    assert await memory.get_retention(resource_id=OTHER) == 365 * DAY
    assert await _read_all(memory, R) == RECENT
    assert await _read_all(memory, OTHER) == EVERYTHING
    await memory.set_retention(None, resource_id=OTHER)  # back to the store's policy
    assert await _read_all(memory, OTHER) == RECENT


async def test_a_resource_policy_touches_no_other_resource(memory: Memory) -> None:
    await _conversation(memory, resource_id=R)
    await _conversation(memory, resource_id=OTHER)
    await memory.set_retention(90 * DAY, resource_id=R)
    assert await memory.get_retention(resource_id=OTHER) is None
    assert await memory.sweep() == {"messages": 3, "threads": 0, "resources": 1}
    assert await _read_all(memory, OTHER) == EVERYTHING
    assert await _read_all(memory, R) == RECENT


async def test_sweep_erases_for_good(memory: Memory) -> None:
    await _conversation(memory)
    await memory.set_retention(90 * DAY)
    assert await memory.sweep() == {"messages": 3, "threads": 0, "resources": 1}
    await memory.set_retention(None)  # without the policy, only what the sweep left is there
    assert await memory.retention_policies() == {}
    assert await _read_all(memory) == RECENT
    assert await memory.sweep() == {"messages": 0, "threads": 0, "resources": 0}


async def test_removing_a_policy_before_the_sweep_shows_the_messages_again(memory: Memory) -> None:
    await _conversation(memory)
    await memory.set_retention(90 * DAY)
    assert await _read_all(memory) == RECENT
    await memory.set_retention(None)
    assert await _read_all(memory) == EVERYTHING


async def test_sweep_of_one_resource(memory: Memory) -> None:
    await _conversation(memory, resource_id=R)
    await _conversation(memory, resource_id=OTHER)
    await memory.set_retention(90 * DAY)
    assert await memory.sweep(resource_id=OTHER) == {"messages": 3, "threads": 0, "resources": 1}
    await memory.set_retention(None)
    assert await _read_all(memory, R) == EVERYTHING
    assert await _read_all(memory, OTHER) == RECENT


@pytest.mark.capability("summaries")
async def test_sweep_drops_the_summary_of_expired_messages(memory: Memory) -> None:
    await _conversation(memory)
    await memory.save_summary("o1..n2", thread_id=T, resource_id=R, through_message_id="n2",
                              expected_version=None)
    await memory.set_retention(90 * DAY)
    await memory.sweep()
    assert await memory.get_summary(thread_id=T, resource_id=R) is None


@pytest.mark.capability("export")
async def test_sweep_deletes_threads_left_empty_and_idle(memory: Memory) -> None:
    """A thread whose messages all expired and that nobody wrote to within the period goes (its
    title derives from what expired); one written to recently stays, empty."""
    old = [_aged("old walrus", 100, "o1")]
    for thread_id in ("idle", "active"):
        await memory.save_messages(old, thread_id=thread_id, resource_id=R)
    idle = await memory.get_thread(thread_id="idle", resource_id=R)
    assert idle is not None
    await memory.store.restore_thread(  # type: ignore[attr-defined]
        idle.model_copy(update={"updated_at": now() - 100 * DAY, "title": "about the walrus"}))
    await memory.set_retention(90 * DAY)
    assert await memory.sweep() == {"messages": 2, "threads": 1, "resources": 1}
    assert await memory.get_thread(thread_id="idle", resource_id=R) is None
    assert await memory.get_thread(thread_id="active", resource_id=R) is not None


@pytest.mark.capability("embeddings")
async def test_sweep_drops_the_vectors_of_expired_messages(memory: Memory) -> None:
    await _conversation(memory)
    store = memory.store
    rows = [(R, T, m, b"\x00\x00\x80?") for m in ("o1", "n1", "o2", "n2", "o3", "n3")]
    assert await store.save_embeddings("test-model", 1, rows) == 6  # type: ignore[attr-defined]
    await memory.set_retention(90 * DAY)
    await memory.sweep()
    loaded = await store.load_embeddings()  # type: ignore[attr-defined]
    assert sorted(row[3] for row in loaded) == ["n1", "n2", "n3"]


async def test_deleting_a_resource_deletes_its_policy(memory: Memory) -> None:
    await _conversation(memory)
    await memory.set_retention(30 * DAY)
    await memory.set_retention(90 * DAY, resource_id=R)
    await memory.delete_resource(resource_id=R)
    assert await memory.retention_policies() == {None: 30 * DAY}


@pytest.mark.parametrize("bad", [timedelta(0), -DAY, timedelta(milliseconds=10), 36_526 * DAY, 90, "90d",
                                 True])
async def test_bad_policy_is_refused_and_writes_nothing(memory: Memory, bad: object) -> None:
    with pytest.raises(ValidationError):
        await memory.set_retention(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await memory.set_retention(DAY, resource_id="")
    with pytest.raises(ValidationError):
        await memory.set_retention(DAY, resource_id="memvault:api-keys")
    assert await memory.retention_policies() == {}


async def test_background_sweep(memory: Memory) -> None:
    """A Memory sweeps by itself every ``sweep_interval`` seconds once sweeping starts
    (:meth:`Memory.open` starts it)."""
    sweeping = Memory(memory.store, MemoryOptions(sweep_interval=0.05))
    await _conversation(sweeping)
    await sweeping.set_retention(90 * DAY, resource_id=R)
    sweeping.start_sweeping()
    try:
        for _ in range(200):
            await asyncio.sleep(0.05)
            if (await memory.stats(resource_id=R))["messages"] == 3:
                break
    finally:
        await sweeping.stop_sweeping()
    await memory.set_retention(None, resource_id=R)
    assert ids(await memory.get_messages(thread_id=T, resource_id=R)) == ["n1", "n2", "n3"]


async def _agree(factory: Any, ages: list[int], keep: int) -> None:
    messages = [_aged(f"walrus {i}", age + 1 / 24, f"m{i}") for i, age in enumerate(ages)]
    young = [m.id for m, age in zip(messages, ages, strict=True) if age < keep]
    with tempfile.TemporaryDirectory() as folder:
        async with factory.memory(Path(folder)) as memory:
            await memory.save_messages(messages, thread_id=T, resource_id=R)
            await memory.set_retention(keep * DAY, resource_id=R)
            assert ids(await memory.get_messages(thread_id=T, resource_id=R)) == young
            hits = await memory.search_messages(resource_id=R, query="walrus", limit=50)
            assert sorted(ids(hits)) == sorted(young)
            swept = await memory.sweep()
            assert swept["messages"] == len(ages) - len(young)
            await memory.set_retention(None, resource_id=R)
            assert ids(await memory.get_messages(thread_id=T, resource_id=R)) == young


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ages=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=12),
       keep=st.integers(min_value=1, max_value=400))
def test_reads_and_sweep_agree_with_the_policy(
    memory: Memory, store_factory: Any, ages: list[int], keep: int
) -> None:
    """Messages aged whole days (plus an hour, off the boundary) under a policy of ``keep`` days:
    reads return exactly the younger ones, and the sweep erases exactly the others. (Each example
    opens a fresh store; ``memory`` only makes a store without the capability skip.)"""
    asyncio.run(_agree(store_factory, ages, keep))
