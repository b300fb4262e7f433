"""The write-ahead log stays bounded: ``wal_autocheckpoint`` copies it into the file every
thousand pages, and ``journal_size_limit`` truncates it once a checkpoint has reset it. A reader
that keeps a read transaction open pins the log: it grows while the reader lasts (SQLite cannot
reuse pages the reader may still need), and shrinks back after the reader ends."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memvault import Memory, Message
from memvault.stores.sqlite.worker import JOURNAL_SIZE_LIMIT, WAL_AUTOCHECKPOINT_PAGES

LIMIT = 256 * 1024  # a small limit for the test (the default is JOURNAL_SIZE_LIMIT)


def _wal(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


async def _write(memory: Memory, count: int, start: int = 0) -> None:
    for i in range(start, start + count, 50):
        await memory.save_messages([Message.user(f"{j} " + "words " * 150) for j in range(i, i + 50)],
                                   thread_id="t", resource_id="r")


async def test_the_pragmas_are_set(tmp_path: Path) -> None:
    async with await Memory.open(f"sqlite:///{tmp_path}/m.db") as memory:
        conn = memory.store._worker.connection()  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == JOURNAL_SIZE_LIMIT
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_AUTOCHECKPOINT_PAGES


async def test_a_long_reader_pins_the_log_and_it_shrinks_after(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    async with await Memory.open(f"sqlite:///{path}") as memory:
        for conn in memory.store._worker.connections():  # type: ignore[attr-defined]
            conn.execute(f"PRAGMA journal_size_limit = {LIMIT}")  # whichever connection resets the log
        await _write(memory, 200)
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM messages").fetchone()  # a snapshot, held
        await _write(memory, 3000, 200)
        pinned = _wal(path)
        assert pinned > WAL_AUTOCHECKPOINT_PAGES * 4096  # past the checkpoint threshold: pinned
        reader.execute("COMMIT")
        reader.close()
        await _write(memory, 300, 3200)  # a checkpoint completes; a later write resets the log
        await _write(memory, 300, 3500)
        # once reset, the log grows again only up to the checkpoint threshold (plus one commit)
        assert _wal(path) <= WAL_AUTOCHECKPOINT_PAGES * 4096 + 1024 * 1024 < pinned
        assert await memory.count_messages(thread_id="t", resource_id="r") == 3800
