"""Transaction bodies of the SQLite store's :class:`~memvault.stores.checkpoints.CheckpointStore`
and :class:`~memvault.stores.items.ItemStore` (the SQL is :mod:`memvault.stores.graph_sql`,
shared with PostgreSQL), and :func:`delete_resource`, which deletes a resource's checkpoints and
items with the rest of it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from memvault.stores import graph_sql as q
from memvault.stores.base import Deleted
from memvault.stores.checkpoints import CheckpointRecord, PendingWrite
from memvault.stores.common import to_micros
from memvault.stores.items import ItemKey, ItemRecord, Namespace, namespace_of, namespace_path
from memvault.stores.sqlite import threads as _threads

P = "?"


def delete_resource(conn: sqlite3.Connection, resource_id: str) -> Deleted:
    """:func:`memvault.stores.sqlite.threads.delete_resource`, and the resource's checkpoints,
    writes and items (counted in ``extra``), in the same transaction."""
    deleted = _threads.delete_resource(conn, resource_id)
    for name, table in (("checkpoints", "graph_checkpoints"), ("items", "graph_items")):
        count = conn.execute(f"DELETE FROM {table} WHERE resource_id = ?", (resource_id,)).rowcount
        if count:
            deleted.extra[name] = count
    conn.execute("DELETE FROM graph_writes WHERE resource_id = ?", (resource_id,))
    return deleted


def put_checkpoint(conn: sqlite3.Connection, resource_id: str, record: CheckpointRecord) -> None:
    conn.execute(q.put_checkpoint(P), q.checkpoint_values(resource_id, record))


def put_writes(
    conn: sqlite3.Connection,
    resource_id: str,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    writes: Sequence[PendingWrite],
) -> None:
    for write in writes:
        conn.execute(
            q.put_write(P, write.idx < 0), q.write_values(resource_id, thread_id, ns, checkpoint_id, write)
        )


def list_checkpoints(
    conn: sqlite3.Connection,
    resource_id: str,
    thread_id: str | None,
    ns: str | None,
    checkpoint_id: str | None,
    before: str | None,
    limit: int | None,
) -> list[CheckpointRecord]:
    query, params = q.select_checkpoints(
        P, thread_id=thread_id, ns=ns, checkpoint_id=checkpoint_id, before=before, limit=limit
    )
    found = conn.execute(query, (resource_id, *params)).fetchall()
    if not found:
        return []
    writes = conn.execute(q.select_writes(query, P), (resource_id, *params, resource_id)).fetchall()
    return q.checkpoints(found, writes)


def delete_threads(conn: sqlite3.Connection, resource_id: str, thread_ids: Sequence[str]) -> int:
    conn.execute(q.delete_threads("graph_writes", len(thread_ids), P), (resource_id, *thread_ids))
    return conn.execute(
        q.delete_threads("graph_checkpoints", len(thread_ids), P), (resource_id, *thread_ids)
    ).rowcount


def delete_runs(conn: sqlite3.Connection, resource_id: str, run_ids: Sequence[str]) -> int:
    writes, checkpoints = q.delete_runs(len(run_ids), P)
    conn.execute(writes, (resource_id, *run_ids))
    return conn.execute(checkpoints, (resource_id, *run_ids)).rowcount


def copy_thread(conn: sqlite3.Connection, resource_id: str, source: str, target: str) -> int:
    copied = conn.execute(
        q.copy_thread("graph_checkpoints", q.CHECKPOINT_COLUMNS, q.CHECKPOINT_KEY, P),
        (target, resource_id, source),
    ).rowcount
    conn.execute(
        q.copy_thread("graph_writes", q.WRITE_COLUMNS, q.WRITE_KEY, P), (target, resource_id, source)
    )
    return copied


def prune(conn: sqlite3.Connection, resource_id: str, thread_ids: Sequence[str], keep_latest: bool) -> int:
    if not keep_latest:
        return delete_threads(conn, resource_id, thread_ids)
    pruned = conn.execute(q.prune_older(len(thread_ids), P), (resource_id, *thread_ids)).rowcount
    conn.execute(q.prune_orphan_writes(len(thread_ids), P), (resource_id, *thread_ids))
    return pruned


def put_items(conn: sqlite3.Connection, resource_id: str, items: Sequence[ItemRecord]) -> None:
    conn.executemany(q.put_item(P), [q.item_values(resource_id, item) for item in items])


def delete_items(conn: sqlite3.Connection, resource_id: str, keys: Sequence[ItemKey]) -> int:
    return sum(
        conn.execute(q.delete_item(P), (resource_id, namespace_path(ns), key)).rowcount
        for ns, key in dict.fromkeys(keys)
    )


def get_items(
    conn: sqlite3.Connection, resource_id: str, keys: Sequence[ItemKey], now: datetime
) -> list[ItemRecord]:
    found = []
    for ns, key in dict.fromkeys(keys):
        row = conn.execute(q.get_item(P), (resource_id, namespace_path(ns), key, to_micros(now))).fetchone()
        if row is not None:
            found.append(q.item(row))
    return found


def scan_items(
    conn: sqlite3.Connection, resource_id: str, prefix: Namespace, now: datetime
) -> list[ItemRecord]:
    query, params = q.scan_items(P, resource_id, prefix, now)
    return [q.item(row) for row in conn.execute(query, params).fetchall()]


def item_namespaces(conn: sqlite3.Connection, resource_id: str, now: datetime) -> list[Namespace]:
    rows = conn.execute(q.item_namespaces(P), (resource_id, to_micros(now))).fetchall()
    return sorted(namespace_of(row[0]) for row in rows)


def refresh_items(conn: sqlite3.Connection, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> None:
    at = to_micros(now)
    conn.executemany(q.refresh_item(P), [(at, resource_id, namespace_path(ns), key, at) for ns, key in keys])


def expire_items(conn: sqlite3.Connection, now: datetime) -> int:
    return int(conn.execute(q.expire_items(P), (to_micros(now),)).rowcount)
