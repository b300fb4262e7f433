"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.SummaryStore`
capability. Triggers (migration 4) delete a summary with any message it summarises."""

from __future__ import annotations

import sqlite3

from memvault.model import Summary, now
from memvault.stores import rows
from memvault.stores.common import upsert_sql

UPSERT_SUMMARY = upsert_sql("summaries", rows.SUMMARY_COLUMNS, "resource_id, thread_id", "?")
"""Write a whole summary row (its values as :func:`memvault.stores.rows.summary_values` gives them)."""


def get_summary(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> Summary | None:
    row = conn.execute(
        f"SELECT {rows.SUMMARY_COLUMNS} FROM summaries WHERE resource_id = ? AND thread_id = ?",
        (resource_id, thread_id),
    ).fetchone()
    return rows.summary(row) if row else None


def save_summary(conn: sqlite3.Connection, summary: Summary, expected_version: int | None) -> Summary | None:
    current = get_summary(conn, summary.resource_id, summary.thread_id)
    if (current.version if current else None) != expected_version:
        return None
    through = conn.execute(
        "SELECT seq FROM messages WHERE resource_id = ? AND thread_id = ? AND id = ?",
        (summary.resource_id, summary.thread_id, summary.through_message_id),
    ).fetchone()
    if through is None or int(through[0]) != summary.through_seq:
        return None
    saved = summary.model_copy(update={"version": (expected_version or 0) + 1, "updated_at": now()})
    conn.execute(UPSERT_SUMMARY, rows.summary_values(saved))
    return saved


def delete_summary(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> bool:
    return conn.execute(
        "DELETE FROM summaries WHERE resource_id = ? AND thread_id = ?", (resource_id, thread_id)
    ).rowcount > 0
