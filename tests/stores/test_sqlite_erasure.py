"""Erasure is real in SQLite (ARCHITECTURE.md, invariant 4): once ``delete_messages``,
``clear_thread``, ``delete_thread`` or ``delete_resource`` returns, a unique marker written only in
the deleted records is in none of the store's files (main database, ``-wal``, ``-shm``), with the
store still open and after it is closed; the rest of the data is still there, and still found.

The marker is one word (it ends in a digit, so the stemmer keeps it whole), repeated in many
messages, so that before the deletion it sits in the table pages, the full-text segments (several,
from several index batches) and the WAL."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import Memory
from memvault.stores.sqlite import SqliteStore

FILES = ("", "-wal", "-shm")
Deletion = Callable[[Memory, str], Awaitable[object]]


def copies(db: Path, marker: str) -> dict[str, int]:
    """How many times ``marker`` occurs in the raw bytes of each file of the database."""
    found = {}
    for suffix in FILES:
        path = Path(f"{db}{suffix}")
        found[suffix or "db"] = path.read_bytes().count(marker.encode()) if path.exists() else 0
    return found


def wal_size(db: Path) -> int:
    return Path(f"{db}-wal").stat().st_size


def text(i: int, word: str) -> dict[str, object]:
    return {"id": f"m{i}", "role": "user" if i % 2 else "assistant",
            "parts": [{"type": "text", "text": f"note {i} about {word} and the weather {i * 7}"}]}


async def seed(memory: Memory, marker: str) -> None:
    """Resource ``ann``: thread ``doomed`` (title, note, summary and 150 messages carrying the
    marker, saved in batches and indexed between them) and thread ``kept`` (no marker); a state
    and a resource note with the marker. Resource ``bob``: one thread, no marker."""
    await memory.create_thread(resource_id="ann", thread_id="doomed", title=f"about {marker}")
    await memory.create_thread(resource_id="ann", thread_id="kept")
    await memory.create_thread(resource_id="bob", thread_id="b")
    for batch in range(5):
        await memory.save_messages([text(batch * 30 + i, marker) for i in range(30)],
                                   thread_id="doomed", resource_id="ann")
        await memory.save_messages([text(batch * 30 + i, "lighthouses") for i in range(30)],
                                   thread_id="kept", resource_id="ann")
        await memory.save_messages([text(batch * 30 + i, "lighthouses") for i in range(30)],
                                   thread_id="b", resource_id="bob")
        assert await memory.search_messages(resource_id="ann", query=marker)  # indexes the batch
    await memory.update_working_memory(f"likes {marker}", resource_id="ann", thread_id="doomed",
                                       scope="thread", mode="replace")
    await memory.save_summary(f"talked about {marker}", thread_id="doomed", resource_id="ann",
                              through_message_id="m10", expected_version=None)


async def delete_messages(memory: Memory, marker: str) -> object:
    return await memory.delete_messages([f"m{i}" for i in range(150)], thread_id="doomed",
                                        resource_id="ann")


async def clear_thread(memory: Memory, marker: str) -> object:
    return await memory.clear_thread(thread_id="doomed", resource_id="ann")


async def delete_thread(memory: Memory, marker: str) -> object:
    return await memory.delete_thread(thread_id="doomed", resource_id="ann")


async def delete_resource(memory: Memory, marker: str) -> object:
    await memory.set_state({"topic": marker}, resource_id="ann", key="run")
    await memory.update_working_memory(f"resource {marker}", resource_id="ann", scope="resource",
                                       mode="replace")
    return await memory.delete_resource(resource_id="ann")


DELETIONS = {"delete_messages": delete_messages, "clear_thread": clear_thread,
             "delete_thread": delete_thread, "delete_resource": delete_resource}


@pytest.mark.parametrize("name", list(DELETIONS))
async def test_deleted_text_is_in_no_file_once_the_deletion_returns(tmp_path: Path, name: str) -> None:
    db = tmp_path / "m.db"
    marker = f"mk{uuid.uuid4().hex}0"
    memory = await Memory.open(f"sqlite:///{db}")
    try:
        await seed(memory, marker)
        if name in ("delete_messages", "clear_thread"):  # these keep the thread's title and note
            await memory.update_thread(thread_id="doomed", resource_id="ann", title="plain")
            await memory.update_working_memory("", resource_id="ann", thread_id="doomed",
                                               scope="thread", mode="replace")
        before = copies(db, marker)
        assert before["db"] + before["-wal"] > 100, before
        await DELETIONS[name](memory, marker)
        assert copies(db, marker) == {"db": 0, "-wal": 0, "-shm": 0}  # the store still open
        assert not await memory.search_messages(resource_id="ann", query=marker)
        assert len(await memory.search_messages(resource_id="bob", query="lighthouses", limit=50)) == 50
        if name != "delete_resource":
            assert len(await memory.get_messages(thread_id="kept", resource_id="ann")) == 150
        # later writes do not bring anything back, and the WAL is in use again
        await memory.save_messages([text(999, "afterwards")], thread_id="b", resource_id="bob")
        assert copies(db, marker) == {"db": 0, "-wal": 0, "-shm": 0}
    finally:
        await memory.close()
    assert copies(db, marker) == {"db": 0, "-wal": 0, "-shm": 0}  # closed
    with closing(sqlite3.connect(db)) as conn:
        vocab = conn.execute("SELECT count(*) FROM messages_fts_vocab WHERE term = ?", (marker,))
        assert vocab.fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM messages_fts_vocab WHERE term = 'lighthous'"
                            ).fetchone() == (1,)


async def test_secure_delete_is_set_on_every_connection_of_the_store(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "s.db")
    try:
        connections = store._worker.connections()
        assert len(connections) == 4  # the worker's, the reader, the searches', the small saves' at NORMAL
        for conn in connections:
            assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
    finally:
        await store.close()


async def test_the_wal_is_truncated_after_a_deletion(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    async with await Memory.open(f"sqlite:///{db}") as memory:
        await memory.create_thread(resource_id="r", thread_id="t")
        await memory.save_messages([text(i, "x") for i in range(20)], thread_id="t", resource_id="r")
        assert wal_size(db) > 0
        await memory.delete_messages(["m1"], thread_id="t", resource_id="r")
        assert wal_size(db) == 0


async def test_purge_vacuums_and_truncates_the_wal(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    marker = f"mk{uuid.uuid4().hex}0"
    async with await Memory.open(f"sqlite:///{db}") as memory:
        await seed(memory, marker)
        done = await memory.purge()
        assert done == {"vacuumed": True, "wal_truncated": True}
        assert wal_size(db) == 0
        assert len(await memory.get_messages(thread_id="doomed", resource_id="ann")) == 150
        await memory.delete_thread(thread_id="doomed", resource_id="ann")
        assert (await memory.purge())["wal_truncated"]
    assert copies(db, marker) == {"db": 0, "-wal": 0, "-shm": 0}


async def test_the_memory_store_has_a_trivial_purge() -> None:
    async with await Memory.open("memory://") as memory:
        assert await memory.purge() == {}


async def test_swept_messages_are_in_no_file_once_the_sweep_returns(tmp_path: Path) -> None:
    """Retention's sweep erases like a deletion: expired messages (and the summary covering
    them) leave no byte behind, the store open or closed; the young messages stay found."""
    db = tmp_path / "m.db"
    marker = f"mk{uuid.uuid4().hex}0"
    old = datetime.now(UTC) - timedelta(days=100)
    memory = await Memory.open(f"sqlite:///{db}")
    try:
        for batch in range(5):
            await memory.save_messages(
                [{**text(batch * 30 + i, marker), "created_at": old.isoformat()} for i in range(30)]
                + [text(1000 + batch * 30 + i, "lighthouses") for i in range(30)],
                thread_id="t", resource_id="ann")
            assert await memory.search_messages(resource_id="ann", query=marker)  # indexes the batch
        await memory.save_summary(f"talked about {marker}", thread_id="t", resource_id="ann",
                                  through_message_id="m10", expected_version=None)
        before = copies(db, marker)
        assert before["db"] + before["-wal"] > 100, before
        await memory.set_retention(timedelta(days=90), resource_id="ann")
        assert not await memory.search_messages(resource_id="ann", query=marker)  # expired: never read
        assert await memory.sweep() == {"messages": 150, "threads": 0, "resources": 1}
        assert copies(db, marker) == {"db": 0, "-wal": 0, "-shm": 0}  # the store still open
        assert await memory.get_summary(thread_id="t", resource_id="ann") is None
        assert len(await memory.search_messages(resource_id="ann", query="lighthouses", limit=200)) == 150
    finally:
        await memory.close()
    assert copies(db, marker) == {"db": 0, "-wal": 0, "-shm": 0}  # closed
