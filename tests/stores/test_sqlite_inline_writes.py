"""Small writes at durability=normal run on the caller's thread when the worker is idle
(:meth:`SqliteWorker.write_small`): the loop never checkpoints the WAL and never waits long for
a lock, and at durability=full every write stays on the worker (the loop never waits for an
fsync)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.stores.sqlite import SqliteStore
from memvault.stores.sqlite.worker import WAL_AUTOCHECKPOINT_PAGES


async def _traced(path: Path, durability: str) -> tuple[Memory, list[tuple[int, str]]]:
    """A memory whose writing connections record (thread, statement) for every statement."""
    store = await SqliteStore.open(path, durability=durability)
    seen: list[tuple[int, str]] = []
    for conn in store._worker.connections():
        await store._worker.run(conn.set_trace_callback, lambda s: seen.append((threading.get_ident(), s)))
    return Memory(store), seen


def _wal(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


def _threads_of(seen: list[tuple[int, str]], prefix: str) -> set[int]:
    return {thread for thread, statement in seen if statement.startswith(prefix)}


@pytest.mark.parametrize(("durability", "on_loop"), [("normal", True), ("full", False)])
async def test_a_save_runs_on_the_callers_thread_only_at_normal(
    tmp_path: Path, durability: str, on_loop: bool
) -> None:
    memory, seen = await _traced(tmp_path / "m.db", durability)
    async with memory:
        saved = await memory.save_messages([Message.user("tea")], thread_id="t", resource_id="r")
        assert (_threads_of(seen, "INSERT INTO messages") == {threading.get_ident()}) is on_loop
        commits = _threads_of(seen, "COMMIT")
        assert commits and (threading.get_ident() in commits) is on_loop
        assert [m.text for m in await memory.get_messages(thread_id="t", resource_id="r")] == ["tea"]
        assert saved[0].seq == 1


async def test_the_loop_never_checkpoints_the_wal(tmp_path: Path) -> None:
    """Past the checkpoint threshold of small writes, the worker checkpoints (PASSIVE), never
    the loop's connection, which has automatic checkpoints off; the log stays bounded."""
    path = tmp_path / "m.db"
    memory, seen = await _traced(path, "normal")
    async with memory:
        store = memory.store
        assert isinstance(store, SqliteStore)
        inline = store._worker.connections()[-1]
        assert inline.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        for i in range(300):  # ~3 pages each: past the threshold
            await memory.save_messages([Message.user(f"{i} " + "words " * 200)], thread_id="t",
                                       resource_id="r")
        await asyncio.sleep(0.2)
        checkpoints = _threads_of(seen, "PRAGMA wal_checkpoint")
        assert checkpoints and threading.get_ident() not in checkpoints
        assert threading.get_ident() in _threads_of(seen, "INSERT INTO messages")
        assert _wal(path) <= 2 * WAL_AUTOCHECKPOINT_PAGES * 4120


async def test_a_locked_file_sends_the_save_to_the_worker(tmp_path: Path) -> None:
    """Another connection holds the write lock: the save waits on the worker thread, not on the
    loop, and commits once the lock is released."""
    path = tmp_path / "m.db"
    memory, seen = await _traced(path, "normal")
    async with memory:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        save = asyncio.ensure_future(
            memory.save_messages([Message.user("later")], thread_id="t", resource_id="r"))
        ticks, start = 0, time.monotonic()
        while time.monotonic() - start < 0.5:  # the loop keeps running meanwhile
            await asyncio.sleep(0.01)
            ticks += 1
        assert not save.done() and ticks > 10
        other.execute("COMMIT")
        other.close()
        saved = await asyncio.wait_for(save, 10)
        assert saved[0].seq == 1
        inserts = [t for t, s in seen if s.startswith("INSERT INTO messages")]
        assert inserts[-1] != threading.get_ident()  # committed by the worker


async def test_saves_gathered_before_a_close_commit(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory = await Memory.open(f"sqlite:///{path}")
    saves = [asyncio.ensure_future(memory.save_messages([Message.user(f"m{i}")], thread_id="t",
                                                         resource_id="r")) for i in range(5)]
    await asyncio.sleep(0)  # the saves are gathered, not yet run
    await memory.close()
    results = await asyncio.gather(*saves, return_exceptions=True)
    async with await Memory.open(f"sqlite:///{path}") as reopened:
        stored = await reopened.get_messages(thread_id="t", resource_id="r")
    assert len(stored) == sum(1 for r in results if not isinstance(r, BaseException))
