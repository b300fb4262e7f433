"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.ExportStore`
capability. Every listing reads a primary key (``(resource_id, ...)``) in index order."""

from __future__ import annotations

import sqlite3

from memvault.model import State, Summary, Thread
from memvault.stores import rows
from memvault.stores.common import RECORD_TABLES, RESOURCE_IDS_SQL, record_counts_sql, upsert_sql
from memvault.stores.sqlite.records import UPSERT_STATE, check_state_thread, state_values
from memvault.stores.sqlite.summaries import UPSERT_SUMMARY


def resource_ids(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute(RESOURCE_IDS_SQL)]


_COUNTS = record_counts_sql("?")
_UPSERT_THREAD = upsert_sql("threads", rows.THREAD_WRITE_COLUMNS, "resource_id, id", "?")


def record_counts(conn: sqlite3.Connection, resource_id: str) -> dict[str, int]:
    row = conn.execute(_COUNTS, (resource_id,) * len(RECORD_TABLES)).fetchone()
    return {kind: int(count) for (kind, _), count in zip(RECORD_TABLES, row, strict=True)}


def working_memory_keys(conn: sqlite3.Connection, resource_id: str) -> list[str]:
    return [str(r[0]) for r in conn.execute(
        "SELECT key FROM working_memory WHERE resource_id = ? ORDER BY key", (resource_id,)
    )]


def state_keys(conn: sqlite3.Connection, resource_id: str) -> list[str]:
    return [str(r[0]) for r in conn.execute(
        "SELECT key FROM states WHERE resource_id = ? ORDER BY key", (resource_id,)
    )]


def restore_thread(conn: sqlite3.Connection, thread: Thread) -> None:
    conn.execute(_UPSERT_THREAD, rows.thread_values(thread))


def restore_state(conn: sqlite3.Connection, state: State) -> None:
    check_state_thread(conn, state)
    conn.execute(UPSERT_STATE, state_values(state))


def restore_summary(conn: sqlite3.Connection, summary: Summary) -> None:
    conn.execute(UPSERT_SUMMARY, rows.summary_values(summary))
