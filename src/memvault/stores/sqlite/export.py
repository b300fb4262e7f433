"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.ExportStore`
capability. Every listing reads a primary key (``(resource_id, ...)``) in index order."""

from __future__ import annotations

import json
import sqlite3

from memvault.model import State, Summary, Thread
from memvault.stores import rows
from memvault.stores.common import RECORD_TABLES, record_counts_sql, to_micros


def resource_ids(conn: sqlite3.Connection) -> list[str]:
    return [
        str(r[0]) for r in conn.execute(
            "SELECT resource_id FROM threads UNION SELECT resource_id FROM working_memory"
            " UNION SELECT resource_id FROM states ORDER BY 1"
        )
    ]


_COUNTS = record_counts_sql("?")


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
    conn.execute(
        "INSERT INTO threads (resource_id, id, title, metadata, created_us, updated_us)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET title = excluded.title,"
        " metadata = excluded.metadata, created_us = excluded.created_us, updated_us = excluded.updated_us",
        (thread.resource_id, thread.id, thread.title, rows.dumps(thread.metadata),
         to_micros(thread.created_at), to_micros(thread.updated_at)),
    )


def restore_state(conn: sqlite3.Connection, state: State) -> None:
    conn.execute(
        "INSERT INTO states (resource_id, key, value, status, version, updated_us)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET value = excluded.value,"
        " status = excluded.status, version = excluded.version, updated_us = excluded.updated_us",
        (state.resource_id, state.key, json.dumps(state.value, ensure_ascii=False), state.status,
         state.version, to_micros(state.updated_at)),
    )


def restore_summary(conn: sqlite3.Connection, summary: Summary) -> None:
    conn.execute(
        "INSERT INTO summaries (resource_id, thread_id, text, through_seq, through_message_id, version,"
        " updated_us) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET text = excluded.text,"
        " through_seq = excluded.through_seq, through_message_id = excluded.through_message_id,"
        " version = excluded.version, updated_us = excluded.updated_us",
        (summary.resource_id, summary.thread_id, summary.text, summary.through_seq,
         summary.through_message_id, summary.version, to_micros(summary.updated_at)),
    )
