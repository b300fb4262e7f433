"""The PostgreSQL store's :class:`~memvault.stores.checkpoints.CheckpointStore` and
:class:`~memvault.stores.items.ItemStore` methods (a mixin of
:class:`~memvault.stores.postgres.store.PostgresStore`): each write is one transaction,
retried whole after a deadlock, a serialization failure or a lost connection (:mod:`.db`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvault.stores.checkpoints import CheckpointRecord, PendingWrite
from memvault.stores.closing import refuses_when_closed
from memvault.stores.common import check_limit
from memvault.stores.items import ItemKey, ItemRecord, Namespace
from memvault.stores.postgres import graph as _graph
from memvault.stores.postgres.db import Database


@refuses_when_closed()
class PostgresGraph:
    """Graph checkpoints and long-term items in the store's schema."""

    closed: bool
    _db: Database

    async def put_checkpoint(self, resource_id: str, record: CheckpointRecord) -> None:
        await self._db.write(_graph.put_checkpoint, resource_id, record)

    async def put_checkpoint_writes(
        self, resource_id: str, thread_id: str, ns: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        if writes:
            await self._db.write(_graph.put_writes, resource_id, thread_id, ns, checkpoint_id, list(writes))

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
        if limit is not None:
            check_limit(limit, maximum=2**62)
        return await self._db.read(
            _graph.list_checkpoints, resource_id, thread_id, ns, checkpoint_id, before, limit
        )

    async def delete_checkpoint_threads(self, resource_id: str, thread_ids: Sequence[str]) -> int:
        if not thread_ids:
            return 0
        return await self._db.write(_graph.delete_threads, resource_id, list(thread_ids))

    async def delete_checkpoint_runs(self, resource_id: str, run_ids: Sequence[str]) -> int:
        if not run_ids:
            return 0
        return await self._db.write(_graph.delete_runs, resource_id, list(run_ids))

    async def copy_checkpoint_thread(self, resource_id: str, source: str, target: str) -> int:
        return await self._db.write(_graph.copy_thread, resource_id, source, target)

    async def prune_checkpoints(
        self, resource_id: str, thread_ids: Sequence[str], *, keep_latest: bool
    ) -> int:
        if not thread_ids:
            return 0
        return await self._db.write(_graph.prune, resource_id, list(thread_ids), keep_latest)

    async def put_items(self, resource_id: str, items: Sequence[ItemRecord]) -> None:
        if items:
            await self._db.write(_graph.put_items, resource_id, list(items))

    async def delete_items(self, resource_id: str, keys: Sequence[ItemKey]) -> int:
        if not keys:
            return 0
        return await self._db.write(_graph.delete_items, resource_id, list(keys))

    async def get_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> list[ItemRecord]:
        if not keys:
            return []
        return await self._db.read(_graph.get_items, resource_id, list(keys), now)

    async def scan_items(self, resource_id: str, prefix: Namespace, now: datetime) -> list[ItemRecord]:
        return await self._db.read(_graph.scan_items, resource_id, prefix, now)

    async def item_namespaces(self, resource_id: str, now: datetime) -> list[Namespace]:
        return await self._db.read(_graph.item_namespaces, resource_id, now)

    async def refresh_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> None:
        if keys:
            await self._db.write(_graph.refresh_items, resource_id, list(keys), now)

    async def expire_items(self, now: datetime) -> int:
        return await self._db.write(_graph.expire_items, now)
