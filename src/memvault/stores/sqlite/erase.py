"""Erasure that is real in a SQLite file: deleted text cannot be read back from the database
file or its write-ahead log once a deletion returns.

Three things keep deleted bytes around in SQLite, and each is handled here:

- freed space in pages: every connection sets ``PRAGMA secure_delete = ON`` (:mod:`.worker`),
  so SQLite overwrites deleted cells and freed pages with zeros, whatever the build's default;
- the full-text index: FTS5 records a deletion as a tombstone in a new segment and keeps the
  old segment (with the deleted words) until segments are merged; :func:`erasing` wraps a
  deletion's transaction body so that, when it deleted anything, the index is merged into one
  segment in the same transaction (``'optimize'``), dropping every deleted word from the
  shadow tables (``messages_fts_data``, ``messages_fts_idx``; ``messages_fts_vocab`` reads
  them);
- the write-ahead log: the ``-wal`` file holds old page images (with the text) until a
  checkpoint; after a deletion the store checkpoints and truncates it
  (``PRAGMA wal_checkpoint(TRUNCATE)``, :func:`checkpoint`). Another process reading the file
  at that moment can keep the checkpoint from completing: the store logs a warning, and
  :func:`purge` (``memvault purge``) finishes the job.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("memvault.sqlite")
CHECKPOINT_WAIT_MS = 2000
"""How long the checkpoint after a deletion waits for other processes' readers (milliseconds)."""


def optimize_index(conn: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment (drops deleted entries), in the caller's
    transaction."""
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")


def erasing(body: Callable[..., T]) -> Callable[..., T]:
    """``body`` (a deletion's transaction body), followed in the same transaction by
    :func:`optimize_index` when it changed anything."""

    @functools.wraps(body)
    def run(conn: sqlite3.Connection, *args: Any) -> T:
        before = conn.total_changes
        result = body(conn, *args)
        if conn.total_changes != before:
            optimize_index(conn)
        return result

    return run


def checkpoint(
    conn: sqlite3.Connection,
    busy_timeout: float,
    wait_ms: int = CHECKPOINT_WAIT_MS,
    errors: type[Exception] = sqlite3.OperationalError,
) -> bool:
    """Copy the WAL into the database file and truncate it to zero bytes, waiting at most
    ``wait_ms`` for other readers; ``True`` when it completed. Outside any transaction.
    ``errors``: the connection's driver's ``OperationalError`` (SQLCipher has its own)."""
    conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except errors as exc:
        log.warning("WAL checkpoint after a deletion failed (%s); run `memvault purge`", exc)
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    if busy:
        log.warning("another process kept the WAL checkpoint after a deletion from completing: "
                    "deleted text may remain in the -wal file until `memvault purge` runs")
    return not busy


def purge(
    conn: sqlite3.Connection, busy_timeout: float, errors: type[Exception] = sqlite3.OperationalError
) -> dict[str, Any]:
    """The thorough step (``memvault purge``): merge the full-text index, rebuild the whole file
    (``VACUUM``, which leaves no free page behind) and checkpoint-truncate the WAL, waiting for
    other processes as long as ``busy_timeout``. Outside any transaction. ``errors``: as for
    :func:`checkpoint`."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        optimize_index(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("VACUUM")
    done = checkpoint(conn, busy_timeout, wait_ms=int(busy_timeout * 1000), errors=errors)
    return {"vacuumed": True, "wal_truncated": done}
