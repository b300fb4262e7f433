"""Full-text indexing runs off the write path, in batches, yet search always sees every saved
message: its own, and those another connection (another process) saved."""

from __future__ import annotations

from pathlib import Path

from memvault import Memory, Message
from memvault.stores.sqlite.schema import unindexed
from memvault.stores.sqlite.store import INDEX_BATCH, SqliteStore


async def _unindexed(store: SqliteStore) -> int:
    return await store._worker.read_one(unindexed)


async def test_indexing_happens_in_batches_without_a_search(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "i.db")
    memory = Memory(store)
    await memory.save_messages([Message.user("first words")], thread_id="t", resource_id="r")
    assert await _unindexed(store) == 1  # not on the write path
    for i in range(INDEX_BATCH):
        await memory.save_messages([Message.user(f"note {i}")], thread_id="t", resource_id="r")
    await memory.get_thread(thread_id="t", resource_id="r")  # the batch ran meanwhile
    assert await _unindexed(store) < INDEX_BATCH
    await memory.close()
    reopened = await SqliteStore.open(tmp_path / "i.db")
    assert await _unindexed(reopened) == 0  # closing indexed the rest
    await reopened.close()


async def test_search_sees_what_another_connection_saved(tmp_path: Path) -> None:
    writer = await Memory.open(f"sqlite:///{tmp_path}/shared.db")
    reader = await Memory.open(f"sqlite:///{tmp_path}/shared.db")
    await writer.save_messages([Message.user("oolong tastes smoky", id="m1")], thread_id="t", resource_id="r")
    hits = await reader.search_messages(resource_id="r", query="oolong")
    assert [h.message.id for h in hits] == ["m1"]
    await writer.save_messages([Message.user("now jasmine", id="m1")], thread_id="t", resource_id="r")
    assert await reader.search_messages(resource_id="r", query="oolong") == []
    assert [h.message.id for h in await reader.search_messages(resource_id="r", query="jasmine")] == ["m1"]
    await writer.delete_messages(["m1"], thread_id="t", resource_id="r")
    assert await reader.search_messages(resource_id="r", query="jasmine") == []
    await writer.close()
    await reader.close()
