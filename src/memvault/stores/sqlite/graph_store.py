"""The SQLite store's :class:`~memvault.stores.checkpoints.CheckpointStore` and
:class:`~memvault.stores.items.ItemStore` methods (a mixin of
:class:`~memvault.stores.sqlite.store.SqliteStore`): each call is one transaction on the store's
worker (:mod:`.graph`); a deletion returns once the WAL is checkpointed and truncated, as every
deletion of the store does (:mod:`.erase`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from memvault.stores.checkpoints import CheckpointRecord, PendingWrite
from memvault.stores.closing import refuses_when_closed
from memvault.stores.common import check_limit
from memvault.stores.items import ItemKey, ItemRecord, Namespace
from memvault.stores.sqlite import graph as _graph
from memvault.stores.sqlite.worker import SqliteWorker

_T = TypeVar("_T")


@refuses_when_closed()
class SqliteGraph:
    """Graph checkpoints and long-term items in the store's file."""

    _worker: SqliteWorker

    async def _erased(self, result: _T) -> _T:
        """``result`` of a deletion, once the WAL is checkpointed and truncated."""
        await self._worker.checkpoint()
        return result

    async def put_checkpoint(self, resource_id: str, record: CheckpointRecord) -> None:
        await self._worker.write(_graph.put_checkpoint, resource_id, record)

    async def put_checkpoint_writes(
        self, resource_id: str, thread_id: str, ns: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        if writes:
            await self._worker.write(
                _graph.put_writes, resource_id, thread_id, ns, checkpoint_id, list(writes)
            )

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
        found: list[CheckpointRecord] = await self._worker.read(
            _graph.list_checkpoints, resource_id, thread_id, ns, checkpoint_id, before, limit
        )
        return found

    async def delete_checkpoint_threads(self, resource_id: str, thread_ids: Sequence[str]) -> int:
        return await self._deleting(_graph.delete_threads, resource_id, list(thread_ids))

    async def delete_checkpoint_runs(self, resource_id: str, run_ids: Sequence[str]) -> int:
        return await self._deleting(_graph.delete_runs, resource_id, list(run_ids))

    async def copy_checkpoint_thread(self, resource_id: str, source: str, target: str) -> int:
        copied: int = await self._worker.write(_graph.copy_thread, resource_id, source, target)
        return copied

    async def prune_checkpoints(
        self, resource_id: str, thread_ids: Sequence[str], *, keep_latest: bool
    ) -> int:
        if not thread_ids:
            return 0
        return await self._erased(
            await self._worker.write(_graph.prune, resource_id, list(thread_ids), keep_latest)
        )

    async def _deleting(self, body: Callable[..., int], resource_id: str, ids: list[str]) -> int:
        if not ids:
            return 0
        deleted: int = await self._worker.write(body, resource_id, ids)
        return await self._erased(deleted) if deleted else deleted

    async def put_items(self, resource_id: str, items: Sequence[ItemRecord]) -> None:
        if items:
            await self._worker.write(_graph.put_items, resource_id, list(items))

    async def delete_items(self, resource_id: str, keys: Sequence[ItemKey]) -> int:
        if not keys:
            return 0
        deleted: int = await self._worker.write(_graph.delete_items, resource_id, list(keys))
        return await self._erased(deleted) if deleted else deleted

    async def get_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> list[ItemRecord]:
        if not keys:
            return []
        found: list[ItemRecord] = await self._worker.read(_graph.get_items, resource_id, list(keys), now)
        return found

    async def scan_items(self, resource_id: str, prefix: Namespace, now: datetime) -> list[ItemRecord]:
        found: list[ItemRecord] = await self._worker.read(_graph.scan_items, resource_id, prefix, now)
        return found

    async def item_namespaces(self, resource_id: str, now: datetime) -> list[Namespace]:
        found: list[Namespace] = await self._worker.read(_graph.item_namespaces, resource_id, now)
        return found

    async def refresh_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> None:
        if keys:
            await self._worker.write(_graph.refresh_items, resource_id, list(keys), now)

    async def expire_items(self, now: datetime) -> int:
        expired: int = await self._worker.write(_graph.expire_items, now)
        return await self._erased(expired) if expired else expired
