"""Transaction bodies of the PostgreSQL store's threads, and of deleting a whole resource.

Lock order: whatever changes a thread's messages, or needs them to stay, first locks the
thread's row (saving does it by upserting it), so writers of one thread queue on that row
instead of deadlocking on message rows; deleting a resource locks its threads in id order,
saving vectors share-locks the threads of its messages and expiry locks the threads of the
messages it deletes, both in ``(resource_id, id)`` order.
Working-memory rows come after thread rows.
"""

from __future__ import annotations

from typing import Any

from memvault.errors import ThreadExistsError, ThreadNotFoundError
from memvault.model import Thread, ThreadPage, note_key
from memvault.stores import rows
from memvault.stores import thread_queries as tq
from memvault.stores.base import Deleted, ThreadQuery
from memvault.stores.common import changed_thread, to_micros
from memvault.stores.postgres.db import Conn

DIALECT = tq.Dialect(
    p="%s", contains="strpos(coalesce(title_fold, ''), %s) > 0",
    metadata="(SELECT bool_and(coalesce((metadata::jsonb -> w.key) = w.value, false))"
             " FROM jsonb_each(%s::jsonb) AS w)")
"""The thread filters in PostgreSQL: jsonb equality is :func:`~memvault.stores.thread_queries.json_equal`
(numbers by value, objects in any key order, ``true`` is not ``1``)."""


async def lock_thread(conn: Conn, resource_id: str, thread_id: str) -> bool:
    """Lock the thread's row until the transaction ends; ``False`` if there is no such thread."""
    cursor = await conn.execute(
        "SELECT 1 FROM threads WHERE resource_id = %s AND id = %s FOR NO KEY UPDATE",
        (resource_id, thread_id),
    )
    return await cursor.fetchone() is not None


async def create_thread(conn: Conn, thread: Thread, exist_ok: bool) -> Thread:
    cursor = await conn.execute(
        f"INSERT INTO threads ({rows.THREAD_WRITE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        rows.thread_values(thread),
    )
    if not cursor.rowcount and not exist_ok:
        raise ThreadExistsError(thread.id)
    found = await get_thread(conn, thread.resource_id, thread.id)
    assert found is not None
    return found


async def get_thread(conn: Conn, resource_id: str, thread_id: str, *, lock: bool = False) -> Thread | None:
    cursor = await conn.execute(
        f"SELECT {rows.THREAD_COLUMNS} FROM threads WHERE resource_id = %s AND id = %s"
        + (" FOR NO KEY UPDATE" if lock else ""),
        (resource_id, thread_id),
    )
    row = await cursor.fetchone()
    return rows.thread(row) if row else None


async def list_threads(
    conn: Conn, resource_id: str, limit: int, after: tuple[int, str] | None, query: ThreadQuery
) -> ThreadPage:
    sql, args = tq.thread_page_sql(query, after, limit, DIALECT, rows.THREAD_COLUMNS)
    cursor = await conn.execute(sql, (resource_id, *args))
    return tq.page([rows.thread(r) for r in await cursor.fetchall()], limit, query)


async def count_threads(conn: Conn, resource_id: str, query: ThreadQuery) -> int:
    sql, args = tq.count_sql(query, DIALECT)
    cursor = await conn.execute(sql, (resource_id, *args))
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def update_thread(conn: Conn, resource_id: str, thread_id: str, title: Any, metadata: Any) -> Thread:
    thread = await get_thread(conn, resource_id, thread_id, lock=True)
    if thread is None:
        raise ThreadNotFoundError(thread_id)
    thread = changed_thread(thread, title, metadata)
    await conn.execute(
        "UPDATE threads SET title = %s, title_fold = %s, metadata = %s, updated_us = %s"
        " WHERE resource_id = %s AND id = %s",
        (thread.title, rows.title_fold(thread.title), rows.dumps(thread.metadata),
         to_micros(thread.updated_at), resource_id, thread_id),
    )
    return thread


async def delete_thread(conn: Conn, resource_id: str, thread_id: str) -> bool:
    """Messages, their vectors, the summary and the thread's states go with the thread
    (``ON DELETE CASCADE``)."""
    cursor = await conn.execute(
        "DELETE FROM threads WHERE resource_id = %s AND id = %s", (resource_id, thread_id)
    )
    await conn.execute(
        "DELETE FROM working_memory WHERE resource_id = %s AND key = %s",
        (resource_id, note_key(thread_id)),
    )
    return cursor.rowcount > 0


async def delete_resource(conn: Conn, resource_id: str) -> Deleted:
    """Lock the resource's threads (in id order, for deletion), then delete them with their
    messages, and the resource's working memories and states. A thread that a concurrent save
    creates after the lock is that save's, made after this deletion, and stays."""
    cursor = await conn.execute(
        "SELECT id FROM threads WHERE resource_id = %s ORDER BY id FOR UPDATE", (resource_id,)
    )
    locked = [row[0] for row in await cursor.fetchall()]

    async def delete(query: str, *args: Any) -> int:
        cursor = await conn.execute(query, (resource_id, *args))
        return cursor.rowcount

    states = await delete("DELETE FROM states WHERE resource_id = %s")  # before the threads they cascade from
    deleted = Deleted(
        messages=await delete(
            "DELETE FROM messages WHERE resource_id = %s AND thread_id = ANY(%s::text[])", locked
        ),
        threads=await delete("DELETE FROM threads WHERE resource_id = %s AND id = ANY(%s::text[])", locked),
        working_memories=await delete("DELETE FROM working_memory WHERE resource_id = %s"),
        states=states,
    )
    await delete("DELETE FROM retention WHERE resource_id = %s")  # its own policy, not the store's
    return deleted
