"""Transaction bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.SummaryStore`
capability. A summary goes with its thread (``ON DELETE CASCADE``), and triggers (migration 4)
delete it with any message it summarises, or when such a message's parts change."""

from __future__ import annotations

from memvault.model import Summary, now
from memvault.stores import rows
from memvault.stores.postgres.db import Conn, Cursor

_THREAD = "resource_id = %s AND thread_id = %s"


GET_SUMMARY = f"SELECT {rows.SUMMARY_COLUMNS} FROM summaries WHERE {_THREAD}"
"""A thread's summary row (arguments: the resource and the thread)."""


async def get_summary(conn: Conn, resource_id: str, thread_id: str) -> Summary | None:
    return await summary_of(await conn.execute(GET_SUMMARY, (resource_id, thread_id)))


async def summary_of(cursor: Cursor) -> Summary | None:
    """The summary of an executed :data:`GET_SUMMARY` statement (``None``: the thread has none)."""
    row = await cursor.fetchone()
    return rows.summary(row) if row else None


async def save_summary(conn: Conn, summary: Summary, expected_version: int | None) -> Summary | None:
    """Compare-and-set on the version, in one transaction that holds share locks on the thread
    and on the message at ``through_seq``: a concurrent delete or edit of it waits, then its
    trigger sees (and deletes) this summary."""
    key = (summary.resource_id, summary.thread_id)
    # the thread's row first (the store's lock order), shared: saving messages is not blocked
    await conn.execute("SELECT 1 FROM threads WHERE resource_id = %s AND id = %s FOR KEY SHARE", key)
    cursor = await conn.execute(
        f"SELECT seq FROM messages WHERE {_THREAD} AND id = %s FOR SHARE",
        (*key, summary.through_message_id),
    )
    through = await cursor.fetchone()
    if through is None or int(through[0]) != summary.through_seq:
        return None
    saved = summary.model_copy(update={"version": (expected_version or 0) + 1, "updated_at": now()})
    values = rows.summary_values(saved)
    if expected_version is None:
        cursor = await conn.execute(
            f"INSERT INTO summaries ({rows.SUMMARY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            values,
        )
    else:
        cursor = await conn.execute(
            "UPDATE summaries SET text = %s, through_seq = %s, through_message_id = %s, version = %s,"
            f" updated_us = %s WHERE {_THREAD} AND version = %s",
            (*values[2:], *key, expected_version),
        )
    return saved if cursor.rowcount else None


async def delete_summary(conn: Conn, resource_id: str, thread_id: str) -> bool:
    cursor = await conn.execute(f"DELETE FROM summaries WHERE {_THREAD}", (resource_id, thread_id))
    return cursor.rowcount > 0
