"""Retention through Memory on real SQLite files (the store behaviour itself is in the conformance
suite, ``memvault.testing.suite.test_retention``): a policy set by one connection or process
hides expired messages from every other at once and survives a restart; recall by meaning never
brings an expired message back; copy carries the policies; the background sweep starts with
``Memory.open`` and stops with ``close``; the sync twin does the same."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memvault import Memory, MemoryOptions, Message
from memvault.recall import RecallOptions
from memvault.sync import Memory as SyncMemory
from memvault.transfer.copier import copy_store
from test_semantic import Concepts, embedder

OLD = datetime.now(UTC) - timedelta(days=100)
DAYS_90 = timedelta(days=90)


def _conversation() -> list[Message]:
    return [Message.user("I drink matcha in Kyoto", id="old", created_at=OLD),
            Message.user("I drink coffee in Tokyo", id="new")]


async def test_a_policy_is_seen_by_every_connection_at_once_and_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/r.db"
    async with await Memory.open(url) as writer, await Memory.open(url) as reader:
        await writer.save_messages(_conversation(), thread_id="t", resource_id="ada")
        assert len(await reader.get_history(thread_id="t", resource_id="ada")) == 2
        await writer.set_retention(DAYS_90)
        assert [m.id for m in await reader.get_history(thread_id="t", resource_id="ada")] == ["new"]
    async with await Memory.open(url) as reopened:
        assert await reopened.retention_policies() == {None: DAYS_90}
        assert [m.id for m in await reopened.get_messages(thread_id="t", resource_id="ada")] == ["new"]


async def test_recall_by_meaning_never_returns_an_expired_message(tmp_path: Path) -> None:
    """The vector index of an open memory still holds the expired message's vector until the
    sweep: recall drops it all the same, and after the sweep the vector is gone."""
    url = f"sqlite:///{tmp_path}/s.db"
    memory = await Memory.open(url, embedder=embedder(Concepts()))
    try:
        await memory.save_messages(_conversation(), thread_id="t", resource_id="ada")
        await memory.flush()
        options = RecallOptions(message_range=0, min_vector_score=0.1, top_k=5)
        found = await memory.recall(resource_id="ada", query="a beverage in japan", options=options)
        assert sorted(h.message.id for h in found.hits) == ["new", "old"]
        await memory.set_retention(DAYS_90, resource_id="ada")
        found = await memory.recall(resource_id="ada", query="a beverage in japan", options=options)
        assert [h.message.id for h in found.hits] == ["new"]
        assert await memory.sweep() == {"messages": 1, "threads": 0, "resources": 1}
        assert memory.semantic is not None and memory.semantic.stored is not None
        assert memory.semantic.stored.loaded()["ada"] == 1  # the swept vector left memory too
    finally:
        await memory.close()


async def test_copy_carries_the_policies_and_leaves_expired_messages_behind(tmp_path: Path) -> None:
    async with await Memory.open(f"sqlite:///{tmp_path}/a.db") as source, \
            await Memory.open(f"sqlite:///{tmp_path}/b.db") as target:
        await source.save_messages(_conversation(), thread_id="t", resource_id="ada")
        await source.save_messages(_conversation(), thread_id="t", resource_id="bob")
        await source.set_retention(DAYS_90, resource_id="ada")
        await source.set_retention(timedelta(days=365))
        report = await copy_store(source, target)
        assert report.ok, report.mismatches
        assert report.copied["messages"] == 3
        assert await target.retention_policies() == {None: timedelta(days=365), "ada": DAYS_90}
        await target.set_retention(None, resource_id="ada")
        assert [m.id for m in await target.get_messages(thread_id="t", resource_id="ada")] == ["new"]


def _sweep_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "memvault-sweep"]


async def test_open_starts_the_background_sweep_and_close_stops_it(tmp_path: Path) -> None:
    memory = await Memory.open(f"sqlite:///{tmp_path}/b.db")
    assert len(_sweep_tasks()) == 1
    await memory.close()
    assert _sweep_tasks() == []
    quiet = await Memory.open(f"sqlite:///{tmp_path}/b.db", options=MemoryOptions(sweep_interval=None))
    assert _sweep_tasks() == []
    await quiet.close()


async def test_the_background_sweep_of_an_opened_memory_erases(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/b.db"
    async with await Memory.open(url, options=MemoryOptions(sweep_interval=None)) as setup:
        await setup.save_messages(_conversation(), thread_id="t", resource_id="ada")
        await setup.set_retention(DAYS_90)
    async with await Memory.open(url, options=MemoryOptions(sweep_interval=0.05)) as memory:
        for _ in range(200):
            if (await memory.stats(resource_id="ada"))["messages"] == 1:
                break
            await asyncio.sleep(0.05)
        assert (await memory.stats(resource_id="ada"))["messages"] == 1


def test_the_sync_twin(tmp_path: Path) -> None:
    with SyncMemory.open(f"sqlite:///{tmp_path}/y.db") as memory:
        memory.save_messages(_conversation(), thread_id="t", resource_id="ada")
        memory.set_retention(DAYS_90, resource_id="ada")
        assert memory.get_retention(resource_id="ada") == DAYS_90
        assert memory.get_retention(resource_id="bob") is None
        assert [m.id for m in memory.get_history(thread_id="t", resource_id="ada")] == ["new"]
        assert memory.sweep(resource_id="ada") == {"messages": 1, "threads": 0, "resources": 1}
        memory.stop_sweeping()
        memory.start_sweeping()
