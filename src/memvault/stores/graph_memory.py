"""The in-memory store's :class:`~memvault.stores.checkpoints.CheckpointStore` and
:class:`~memvault.stores.items.ItemStore`: the reference the SQLite and PostgreSQL tables follow.
A mixin of :class:`memvault.stores.memory.InMemoryStore`; each call runs without awaiting, so it
is atomic with respect to the event loop."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta

from memvault.stores.checkpoints import CheckpointRecord, PendingWrite, write_order
from memvault.stores.closing import refuses_when_closed
from memvault.stores.items import ItemKey, ItemRecord, Namespace, namespace_path, under

_Key = tuple[str, str, str]  # (thread_id, ns, checkpoint_id)
_Writes = dict[_Key, dict[tuple[str, int], PendingWrite]]  # by checkpoint, by (task_id, idx)
_Tables = tuple[dict[_Key, CheckpointRecord], _Writes, dict[ItemKey, ItemRecord]]


@refuses_when_closed()
class GraphTables:
    """Checkpoints and items, per resource, in dictionaries (the class using it has ``closed``)."""

    closed: bool

    def _graph(self) -> dict[str, _Tables]:
        tables: dict[str, _Tables] | None = self.__dict__.get("_graph_tables")
        if tables is None:
            tables = self.__dict__["_graph_tables"] = {}
        return tables

    def _tables(self, resource_id: str) -> _Tables:
        return self._graph().setdefault(resource_id, ({}, {}, {}))

    def _forget_graph(self, resource_id: str) -> dict[str, int]:
        """Drop the resource's checkpoints and items; their counts (for ``Deleted.extra``)."""
        checkpoints, _, items = self._graph().pop(resource_id, ({}, {}, {}))
        counts = {"checkpoints": len(checkpoints), "items": len(items)}
        return {name: count for name, count in counts.items() if count}

    # checkpoints

    async def put_checkpoint(self, resource_id: str, record: CheckpointRecord) -> None:
        checkpoints, _, _ = self._tables(resource_id)
        key = (record.thread_id, record.ns, record.checkpoint_id)
        checkpoints[key] = dataclasses.replace(record, writes=())

    async def put_checkpoint_writes(self, resource_id: str, thread_id: str, ns: str, checkpoint_id: str,
                                    writes: Sequence[PendingWrite]) -> None:
        stored = self._tables(resource_id)[1].setdefault((thread_id, ns, checkpoint_id), {})
        for write in writes:
            key = (write.task_id, write.idx)
            if write.idx < 0 or key not in stored:
                stored[key] = write

    async def list_checkpoints(
        self,
        resource_id: str,
        *,
        thread_id: str | None = None,
        ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRecord]:
        checkpoints, writes, _ = self._tables(resource_id)
        found = [
            dataclasses.replace(record, writes=tuple(sorted(writes.get(key, {}).values(), key=write_order)))
            for key, record in checkpoints.items()
            if (thread_id is None or key[0] == thread_id) and (ns is None or key[1] == ns)
            and (checkpoint_id is None or key[2] == checkpoint_id) and (before is None or key[2] < before)
        ]
        found.sort(key=lambda r: (r.checkpoint_id, r.thread_id, r.ns), reverse=True)
        return found if limit is None else found[:limit]

    def _drop(self, resource_id: str, doomed: list[_Key]) -> int:
        checkpoints, writes, _ = self._tables(resource_id)
        for key in doomed:
            checkpoints.pop(key, None)
            writes.pop(key, None)
        return len(doomed)

    async def delete_checkpoint_threads(self, resource_id: str, thread_ids: Sequence[str]) -> int:
        checkpoints, writes, _ = self._tables(resource_id)
        wanted = set(thread_ids)
        for key in [k for k in writes if k[0] in wanted]:
            del writes[key]
        return self._drop(resource_id, [k for k in checkpoints if k[0] in wanted])

    async def delete_checkpoint_runs(self, resource_id: str, run_ids: Sequence[str]) -> int:
        checkpoints, _, _ = self._tables(resource_id)
        wanted = set(run_ids)
        return self._drop(resource_id, [k for k, r in checkpoints.items() if r.run_id in wanted])

    async def copy_checkpoint_thread(self, resource_id: str, source: str, target: str) -> int:
        checkpoints, writes, _ = self._tables(resource_id)
        copied = [(k, r) for k, r in checkpoints.items() if k[0] == source]
        for key, record in copied:
            checkpoints[(target, key[1], key[2])] = dataclasses.replace(record, thread_id=target)
        for key, stored in [(k, w) for k, w in writes.items() if k[0] == source]:
            writes[(target, key[1], key[2])] = dict(stored)
        return len(copied)

    async def prune_checkpoints(
        self, resource_id: str, thread_ids: Sequence[str], *, keep_latest: bool
    ) -> int:
        checkpoints, _, _ = self._tables(resource_id)
        wanted = set(thread_ids)
        keys = [k for k in checkpoints if k[0] in wanted]
        newest: dict[tuple[str, str], str] = {}
        for thread, ns, checkpoint_id in keys:
            newest[(thread, ns)] = max(newest.get((thread, ns), ""), checkpoint_id)
        doomed = [k for k in keys if not keep_latest or newest[(k[0], k[1])] != k[2]]
        writes = self._tables(resource_id)[1]
        for key in [k for k in writes if k[0] in wanted]:
            if not keep_latest or newest.get((key[0], key[1])) != key[2]:
                del writes[key]
        return self._drop(resource_id, doomed)

    # items

    async def put_items(self, resource_id: str, items: Sequence[ItemRecord]) -> None:
        stored = self._tables(resource_id)[2]
        for item in items:
            old = stored.pop((item.namespace, item.key), None)
            stored[(item.namespace, item.key)] = (
                item if old is None else dataclasses.replace(item, created_at=old.created_at))

    async def delete_items(self, resource_id: str, keys: Sequence[ItemKey]) -> int:
        stored = self._tables(resource_id)[2]
        return sum(stored.pop(key, None) is not None for key in set(keys))

    async def get_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> list[ItemRecord]:
        stored = self._tables(resource_id)[2]
        found = (stored.get(key) for key in dict.fromkeys(keys))
        return [item for item in found if item is not None and _live(item, now)]

    async def scan_items(self, resource_id: str, prefix: Namespace, now: datetime) -> list[ItemRecord]:
        found = [item for item in self._tables(resource_id)[2].values()
                 if under(item.namespace, prefix) and _live(item, now)]
        found.sort(key=lambda i: (namespace_path(i.namespace), i.key))
        found.sort(key=lambda i: i.updated_at, reverse=True)
        return found

    async def item_namespaces(self, resource_id: str, now: datetime) -> list[Namespace]:
        spaces = {item.namespace for item in self._tables(resource_id)[2].values() if _live(item, now)}
        return sorted(spaces, key=namespace_path)

    async def refresh_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> None:
        stored = self._tables(resource_id)[2]
        for key in keys:
            item = stored.get(key)
            if item is not None and item.ttl_minutes is not None and _live(item, now):
                stored[key] = dataclasses.replace(item, expires_at=now + timedelta(minutes=item.ttl_minutes))

    async def expire_items(self, now: datetime) -> int:
        expired = 0
        for _, _, items in self._graph().values():
            for key in [k for k, item in items.items() if not _live(item, now)]:
                del items[key]
                expired += 1
        return expired


def _live(item: ItemRecord, now: datetime) -> bool:
    return item.expires_at is None or item.expires_at > now
