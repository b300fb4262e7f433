"""Transaction bodies of the PostgreSQL store's
:class:`~memvault.stores.checkpoints.CheckpointStore` and :class:`~memvault.stores.items.ItemStore`
(the SQL is :mod:`memvault.stores.graph_sql`, shared with SQLite), and :func:`delete_resource`,
which deletes a resource's checkpoints and items with the rest of it. As for messages, a
deletion leaves dead rows until ``purge`` (``VACUUM FULL``) runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvault.stores import graph_sql as q
from memvault.stores.base import Deleted
from memvault.stores.checkpoints import CheckpointRecord, PendingWrite
from memvault.stores.common import to_micros
from memvault.stores.items import ItemKey, ItemRecord, Namespace, namespace_of, namespace_path
from memvault.stores.postgres import threads as _threads
from memvault.stores.postgres.db import Conn

P = "%s"


async def delete_resource(conn: Conn, resource_id: str) -> Deleted:
    """:func:`memvault.stores.postgres.threads.delete_resource`, and the resource's checkpoints,
    writes and items (counted in ``extra``), in the same transaction."""
    deleted = await _threads.delete_resource(conn, resource_id)
    for name, table in (("checkpoints", "graph_checkpoints"), ("items", "graph_items")):
        cursor = await conn.execute(f"DELETE FROM {table} WHERE resource_id = %s", (resource_id,))
        if cursor.rowcount:
            deleted.extra[name] = cursor.rowcount
    await conn.execute("DELETE FROM graph_writes WHERE resource_id = %s", (resource_id,))
    return deleted


async def put_checkpoint(conn: Conn, resource_id: str, record: CheckpointRecord) -> None:
    await conn.execute(q.put_checkpoint(P), q.checkpoint_values(resource_id, record))


async def put_writes(
    conn: Conn, resource_id: str, thread_id: str, ns: str, checkpoint_id: str, writes: Sequence[PendingWrite]
) -> None:
    for write in writes:
        await conn.execute(
            q.put_write(P, write.idx < 0), q.write_values(resource_id, thread_id, ns, checkpoint_id, write)
        )


async def list_checkpoints(
    conn: Conn,
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
    found = await (await conn.execute(query, (resource_id, *params))).fetchall()
    if not found:
        return []
    writes = await (
        await conn.execute(q.select_writes(query, P), (resource_id, *params, resource_id))
    ).fetchall()
    return q.checkpoints(found, writes)


async def delete_threads(conn: Conn, resource_id: str, thread_ids: Sequence[str]) -> int:
    await conn.execute(q.delete_threads("graph_writes", len(thread_ids), P), (resource_id, *thread_ids))
    cursor = await conn.execute(
        q.delete_threads("graph_checkpoints", len(thread_ids), P), (resource_id, *thread_ids)
    )
    return cursor.rowcount


async def delete_runs(conn: Conn, resource_id: str, run_ids: Sequence[str]) -> int:
    writes, checkpoints = q.delete_runs(len(run_ids), P)
    await conn.execute(writes, (resource_id, *run_ids))
    return (await conn.execute(checkpoints, (resource_id, *run_ids))).rowcount


async def copy_thread(conn: Conn, resource_id: str, source: str, target: str) -> int:
    cursor = await conn.execute(
        q.copy_thread("graph_checkpoints", q.CHECKPOINT_COLUMNS, q.CHECKPOINT_KEY, P),
        (target, resource_id, source),
    )
    await conn.execute(
        q.copy_thread("graph_writes", q.WRITE_COLUMNS, q.WRITE_KEY, P), (target, resource_id, source)
    )
    return cursor.rowcount


async def prune(conn: Conn, resource_id: str, thread_ids: Sequence[str], keep_latest: bool) -> int:
    if not keep_latest:
        return await delete_threads(conn, resource_id, thread_ids)
    pruned = (await conn.execute(q.prune_older(len(thread_ids), P), (resource_id, *thread_ids))).rowcount
    await conn.execute(q.prune_orphan_writes(len(thread_ids), P), (resource_id, *thread_ids))
    return pruned


async def put_items(conn: Conn, resource_id: str, items: Sequence[ItemRecord]) -> None:
    for item in items:
        await conn.execute(q.put_item(P), q.item_values(resource_id, item))


async def delete_items(conn: Conn, resource_id: str, keys: Sequence[ItemKey]) -> int:
    deleted = 0
    for ns, key in dict.fromkeys(keys):
        deleted += (await conn.execute(q.delete_item(P), (resource_id, namespace_path(ns), key))).rowcount
    return deleted


async def get_items(conn: Conn, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> list[ItemRecord]:
    found = []
    for ns, key in dict.fromkeys(keys):
        cursor = await conn.execute(q.get_item(P), (resource_id, namespace_path(ns), key, to_micros(now)))
        row = await cursor.fetchone()
        if row is not None:
            found.append(q.item(row))
    return found


async def scan_items(conn: Conn, resource_id: str, prefix: Namespace, now: datetime) -> list[ItemRecord]:
    query, params = q.scan_items(P, resource_id, prefix, now)
    return [q.item(row) for row in await (await conn.execute(query, params)).fetchall()]


async def item_namespaces(conn: Conn, resource_id: str, now: datetime) -> list[Namespace]:
    rows = await (await conn.execute(q.item_namespaces(P), (resource_id, to_micros(now)))).fetchall()
    return sorted(namespace_of(row[0]) for row in rows)


async def refresh_items(conn: Conn, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> None:
    at = to_micros(now)
    for ns, key in keys:
        await conn.execute(q.refresh_item(P), (at, resource_id, namespace_path(ns), key, at))


async def expire_items(conn: Conn, now: datetime) -> int:
    return (await conn.execute(q.expire_items(P), (to_micros(now),))).rowcount
