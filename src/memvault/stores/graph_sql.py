"""The SQL both database stores run for :class:`~memvault.stores.checkpoints.CheckpointStore`
and :class:`~memvault.stores.items.ItemStore`, and its row mapping: one text for SQLite (``?``)
and PostgreSQL (``%s``), so the two stores cannot drift apart.

Tables (migrations of each store): ``graph_checkpoints`` and ``graph_writes`` (a checkpoint's
pending writes), keyed by ``(resource_id, thread_id, ns, checkpoint_id)``; ``graph_items``,
keyed by ``(resource_id, namespace, key)``. Times are microseconds since the epoch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memvault.stores.checkpoints import Blob, CheckpointRecord, PendingWrite
from memvault.stores.common import from_micros, to_micros
from memvault.stores.items import ItemRecord, Namespace, namespace_of, namespace_path, prefix_bounds

CHECKPOINT_KEY = "resource_id, thread_id, ns, checkpoint_id"
CHECKPOINT_COLUMNS = (
    f"{CHECKPOINT_KEY}, parent_id, run_id, checkpoint_type, checkpoint, metadata_type, metadata"
)
WRITE_KEY = f"{CHECKPOINT_KEY}, task_id, idx"
WRITE_COLUMNS = f"{WRITE_KEY}, channel, value_type, value, task_path"
ITEM_KEY = "resource_id, namespace, key"
ITEM_COLUMNS = f"{ITEM_KEY}, value, created_us, updated_us, expires_us, ttl_minutes, words, vector"
_LIVE = "(expires_us IS NULL OR expires_us > {p})"


def marks(count: int, p: str) -> str:
    """``count`` placeholders, comma-separated."""
    return ", ".join([p] * count)


def _set(columns: str, keep: Sequence[str]) -> str:
    return ", ".join(f"{c} = excluded.{c}" for c in (n.strip() for n in columns.split(",")) if c not in keep)


def put_checkpoint(p: str) -> str:
    keys = [k.strip() for k in CHECKPOINT_KEY.split(",")]
    return (
        f"INSERT INTO graph_checkpoints ({CHECKPOINT_COLUMNS}) VALUES ({marks(10, p)}) "
        f"ON CONFLICT ({CHECKPOINT_KEY}) DO UPDATE SET {_set(CHECKPOINT_COLUMNS, keys)}"
    )


def put_write(p: str, replace: bool) -> str:
    """Insert a write; on its key, overwrite it (``replace``) or keep the stored one."""
    keys = [k.strip() for k in WRITE_KEY.split(",")]
    action = f"DO UPDATE SET {_set(WRITE_COLUMNS, keys)}" if replace else "DO NOTHING"
    insert = f"INSERT INTO graph_writes ({WRITE_COLUMNS}) VALUES ({marks(10, p)})"
    return f"{insert} ON CONFLICT ({WRITE_KEY}) {action}"


def checkpoint_values(resource_id: str, r: CheckpointRecord) -> tuple[Any, ...]:
    return (
        resource_id,
        r.thread_id,
        r.ns,
        r.checkpoint_id,
        r.parent_id,
        r.run_id,
        r.checkpoint.type,
        bytes(r.checkpoint.data),
        r.metadata.type,
        bytes(r.metadata.data),
    )


def write_values(
    resource_id: str, thread_id: str, ns: str, checkpoint_id: str, w: PendingWrite
) -> tuple[Any, ...]:
    return (
        resource_id,
        thread_id,
        ns,
        checkpoint_id,
        w.task_id,
        w.idx,
        w.channel,
        w.value.type,
        bytes(w.value.data),
        w.task_path,
    )


def select_checkpoints(
    p: str,
    *,
    thread_id: str | None,
    ns: str | None,
    checkpoint_id: str | None,
    before: str | None,
    limit: int | None,
) -> tuple[str, list[Any]]:
    """The ``SELECT`` of the checkpoints a list asks for (newest first) and its parameters."""
    where, params = ["resource_id = {p}"], []
    for column, value in (("thread_id", thread_id), ("ns", ns), ("checkpoint_id", checkpoint_id)):
        if value is not None:
            where.append(f"{column} = {{p}}")
            params.append(value)
    if before is not None:
        where.append("checkpoint_id < {p}")
        params.append(before)
    query = (
        f"SELECT {CHECKPOINT_COLUMNS} FROM graph_checkpoints WHERE {' AND '.join(where)}"
        " ORDER BY checkpoint_id DESC, thread_id DESC, ns DESC"
    ).replace("{p}", p)
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    return query, params


def select_writes(checkpoints_query: str, p: str) -> str:
    """The writes of the checkpoints ``checkpoints_query`` selects (same parameters, then the
    resource id again), in apply order."""
    return (
        f"SELECT w.thread_id, w.ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.value_type, w.value,"
        f" w.task_path FROM graph_writes w JOIN ({checkpoints_query}) c"
        " ON w.thread_id = c.thread_id AND w.ns = c.ns AND w.checkpoint_id = c.checkpoint_id"
        f" WHERE w.resource_id = {p} ORDER BY w.task_path, w.task_id, w.idx"
    )


def checkpoints(found: Sequence[Any], writes: Sequence[Any]) -> list[CheckpointRecord]:
    """Checkpoint rows (in order) with their write rows."""
    by_key: dict[tuple[str, str, str], list[PendingWrite]] = {}
    for thread, ns, checkpoint_id, task_id, idx, channel, value_type, value, task_path in writes:
        by_key.setdefault((thread, ns, checkpoint_id), []).append(
            PendingWrite(task_id, int(idx), channel, Blob(value_type, bytes(value)), task_path)
        )
    return [
        CheckpointRecord(
            thread,
            ns,
            checkpoint_id,
            parent_id,
            Blob(c_type, bytes(c)),
            Blob(m_type, bytes(m)),
            run_id,
            tuple(by_key.get((thread, ns, checkpoint_id), ())),
        )
        for _, thread, ns, checkpoint_id, parent_id, run_id, c_type, c, m_type, m in found
    ]


def delete_threads(table: str, count: int, p: str) -> str:
    return f"DELETE FROM {table} WHERE resource_id = {p} AND thread_id IN ({marks(count, p)})"


def delete_runs(count: int, p: str) -> tuple[str, str]:
    """The deletions of the writes, then the checkpoints, of ``count`` runs (parameters: the
    resource id, then the run ids, for each)."""
    runs = f"resource_id = {p} AND run_id IN ({marks(count, p)})"
    return (
        f"DELETE FROM graph_writes WHERE (resource_id, thread_id, ns, checkpoint_id) IN "
        f"(SELECT {CHECKPOINT_KEY} FROM graph_checkpoints WHERE {runs})",
        f"DELETE FROM graph_checkpoints WHERE {runs}",
    )


def copy_thread(table: str, columns: str, key: str, p: str) -> str:
    """Copy a thread's rows of ``table`` to another thread (parameters: target, resource, source)."""
    names = [c.strip() for c in columns.split(",")]
    chosen = ", ".join(p if c == "thread_id" else c for c in names)
    keys = [k.strip() for k in key.split(",")]
    return (
        f"INSERT INTO {table} ({columns}) SELECT {chosen} FROM {table} WHERE resource_id = {p} AND "
        f"thread_id = {p} ON CONFLICT ({key}) DO UPDATE SET {_set(columns, keys)}"
    )


def prune_older(count: int, p: str) -> str:
    """Delete all but each namespace's newest checkpoint of ``count`` threads (parameters: the
    resource id, then the thread ids)."""
    return (
        f"DELETE FROM graph_checkpoints WHERE resource_id = {p} AND thread_id IN ({marks(count, p)}) "
        "AND checkpoint_id < (SELECT max(m.checkpoint_id) FROM graph_checkpoints m WHERE "
        "m.resource_id = graph_checkpoints.resource_id AND m.thread_id = graph_checkpoints.thread_id "
        "AND m.ns = graph_checkpoints.ns)"
    )


def prune_orphan_writes(count: int, p: str) -> str:
    """Delete the writes of ``count`` threads whose checkpoint is gone (parameters: the resource
    id, then the thread ids)."""
    return (
        f"DELETE FROM graph_writes WHERE resource_id = {p} AND thread_id IN ({marks(count, p)}) AND NOT "
        "EXISTS (SELECT 1 FROM graph_checkpoints c WHERE c.resource_id = graph_writes.resource_id AND "
        "c.thread_id = graph_writes.thread_id AND c.ns = graph_writes.ns AND "
        "c.checkpoint_id = graph_writes.checkpoint_id)"
    )


# items


def put_item(p: str) -> str:
    keys = [k.strip() for k in ITEM_KEY.split(",")] + ["created_us"]
    return (
        f"INSERT INTO graph_items ({ITEM_COLUMNS}) VALUES ({marks(10, p)}) "
        f"ON CONFLICT ({ITEM_KEY}) DO UPDATE SET {_set(ITEM_COLUMNS, keys)}"
    )


def item_values(resource_id: str, item: ItemRecord) -> tuple[Any, ...]:
    return (
        resource_id,
        namespace_path(item.namespace),
        item.key,
        json.dumps(item.value, ensure_ascii=False, separators=(",", ":")),
        to_micros(item.created_at),
        to_micros(item.updated_at),
        to_micros(item.expires_at) if item.expires_at else None,
        item.ttl_minutes,
        item.words,
        bytes(item.vector),
    )


def item(row: Any) -> ItemRecord:
    _, path, key, value, created, updated, expires, ttl, words, vector = row
    return ItemRecord(
        namespace_of(path),
        key,
        json.loads(value),
        from_micros(created),
        from_micros(updated),
        from_micros(expires) if expires is not None else None,
        float(ttl) if ttl is not None else None,
        words,
        bytes(vector),
    )


def get_item(p: str) -> str:
    return (
        f"SELECT {ITEM_COLUMNS} FROM graph_items WHERE resource_id = {p} AND namespace = {p} AND key = {p}"
        f" AND {_LIVE.format(p=p)}"
    )


def scan_items(p: str, resource_id: str, prefix: Namespace, now: datetime) -> tuple[str, list[Any]]:
    """The ``SELECT`` of :meth:`~memvault.stores.items.ItemStore.scan_items` and its parameters."""
    where: list[str] = [f"resource_id = {p}"]
    params: list[Any] = [resource_id]
    if prefix:
        where.append(f"(namespace = {p} OR (namespace >= {p} AND namespace < {p}))")
        params.extend(prefix_bounds(prefix))
    where.append(_LIVE.format(p=p))
    params.append(to_micros(now))
    return (
        f"SELECT {ITEM_COLUMNS} FROM graph_items WHERE {' AND '.join(where)}"
        " ORDER BY updated_us DESC, namespace, key",
        params,
    )


def item_namespaces(p: str) -> str:
    return f"SELECT DISTINCT namespace FROM graph_items WHERE resource_id = {p} AND {_LIVE.format(p=p)}"


def refresh_item(p: str) -> str:
    """Parameters: now, resource, namespace path, key, now."""
    return (
        f"UPDATE graph_items SET expires_us = {p} + CAST(ttl_minutes * 60000000 AS BIGINT) WHERE "
        f"resource_id = {p} AND namespace = {p} AND key = {p} AND ttl_minutes IS NOT NULL AND "
        f"{_LIVE.format(p=p)}"
    )


def delete_item(p: str) -> str:
    return f"DELETE FROM graph_items WHERE resource_id = {p} AND namespace = {p} AND key = {p}"


def expire_items(p: str) -> str:
    return f"DELETE FROM graph_items WHERE expires_us IS NOT NULL AND expires_us <= {p}"
