"""Shared by the SQLite query-plan tests: a store that records every statement it runs, and the
tables ``EXPLAIN QUERY PLAN`` says a statement scans whole."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from memvault.stores.sqlite import SqliteStore


async def traced_store(path: Path, *, reader: bool = False) -> tuple[SqliteStore, list[str]]:
    """A :class:`SqliteStore` opened on ``path`` and the list its writer connection appends each
    statement it runs to (and its reader connection, the one small reads use on the caller's
    thread, with ``reader``)."""
    store = await SqliteStore.open(path)
    statements: list[str] = []
    conn = store._worker.connection()
    await store._worker.run(conn.set_trace_callback, statements.append)
    if reader:
        read = store._worker._reader
        assert read is not None
        read.set_trace_callback(statements.append)
    return store, statements


def scans(probe: sqlite3.Connection, sql: str) -> tuple[list[str], str]:
    """The tables the plan of ``sql`` on ``probe`` scans whole (``SCAN name``), and the plan."""
    plan = " | ".join(row[3] for row in probe.execute(f"EXPLAIN QUERY PLAN {sql}"))
    return re.findall(r"SCAN ([\w.]+)", plan), plan
