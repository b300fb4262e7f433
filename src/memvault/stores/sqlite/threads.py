"""Transaction bodies of the SQLite store's threads, and of deleting a whole resource.

Every write is one ``BEGIN IMMEDIATE`` transaction (:mod:`.worker`), so a thread's row and its
messages never change between a body's read and its write.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memvault.errors import ThreadExistsError, ThreadNotFoundError
from memvault.model import Thread, ThreadPage, note_key
from memvault.stores import rows
from memvault.stores import thread_queries as tq
from memvault.stores.base import Deleted, ThreadQuery
from memvault.stores.common import changed_thread, to_micros

DIALECT = tq.Dialect(p="?", contains="instr(coalesce(title_fold, ''), ?) > 0",
                     metadata="memvault_metadata_matches(metadata, ?)",
                     string_key="json_extract(metadata, ?) = ?")
"""The thread filters in SQLite (``memvault_metadata_matches``: registered on each connection,
:func:`memvault.stores.thread_queries.sqlite_metadata_matches`; a wanted string is first looked
up by ``json_extract``, in C, so that only candidates reach the Python function)."""


def create_thread(conn: sqlite3.Connection, thread: Thread, exist_ok: bool) -> Thread:
    inserted = conn.execute(
        f"INSERT INTO threads ({rows.THREAD_WRITE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        rows.thread_values(thread),
    ).rowcount
    if not inserted and not exist_ok:
        raise ThreadExistsError(thread.id)
    found = get_thread(conn, thread.resource_id, thread.id)
    assert found is not None
    return found


def get_thread(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> Thread | None:
    row = conn.execute(
        f"SELECT {rows.THREAD_COLUMNS} FROM threads WHERE resource_id = ? AND id = ?",
        (resource_id, thread_id),
    ).fetchone()
    return rows.thread(row) if row else None


def list_threads(
    conn: sqlite3.Connection, resource_id: str, limit: int, after: tuple[int, str] | None, query: ThreadQuery
) -> ThreadPage:
    sql, args = tq.thread_page_sql(query, after, limit, DIALECT, rows.THREAD_COLUMNS)
    return tq.page([rows.thread(r) for r in conn.execute(sql, (resource_id, *args))], limit, query)


def count_threads(conn: sqlite3.Connection, resource_id: str, query: ThreadQuery) -> int:
    sql, args = tq.count_sql(query, DIALECT)
    (count,) = conn.execute(sql, (resource_id, *args)).fetchone()
    return int(count)


def update_thread(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, title: Any, metadata: Any
) -> Thread:
    thread = get_thread(conn, resource_id, thread_id)
    if thread is None:
        raise ThreadNotFoundError(thread_id)
    thread = changed_thread(thread, title, metadata)
    conn.execute(
        "UPDATE threads SET title = ?, title_fold = ?, metadata = ?, updated_us = ?"
        " WHERE resource_id = ? AND id = ?",
        (thread.title, rows.title_fold(thread.title), rows.dumps(thread.metadata),
         to_micros(thread.updated_at), resource_id, thread_id),
    )
    return thread


def delete_thread(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> bool:
    key = (resource_id, thread_id)
    conn.execute("DELETE FROM messages WHERE resource_id = ? AND thread_id = ?", key)
    conn.execute(
        "DELETE FROM working_memory WHERE resource_id = ? AND key = ?",
        (resource_id, note_key(thread_id)),
    )
    conn.execute("DELETE FROM states WHERE resource_id = ? AND thread_id = ?", key)
    return conn.execute("DELETE FROM threads WHERE resource_id = ? AND id = ?", key).rowcount > 0


def delete_resource(conn: sqlite3.Connection, resource_id: str) -> Deleted:
    def delete(table: str) -> int:
        return int(conn.execute(f"DELETE FROM {table} WHERE resource_id = ?", (resource_id,)).rowcount)

    deleted = Deleted(
        messages=delete("messages"),
        threads=delete("threads"),
        working_memories=delete("working_memory"),
        states=delete("states"),
    )
    delete("retention")  # its own policy (never the store-wide one: no resource id is empty)
    return deleted
