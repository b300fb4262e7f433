"""ExactIndex: exact cosine search with numpy, the reference every other index is measured
against (needs numpy: ``pip install 'memvault[vectors]'``).

Layout: one :class:`~memvault.vectors.partition.Partition` per resource, so a search reads only
its resource's rows, contiguous in one float32 matrix: no mask over other resources' rows, and
isolation by construction. A thread filter uses the partition's cached row array of that thread:
it gathers those rows when the thread is a small part of the resource, and otherwise scores the
whole matrix and masks the other threads. Top-k selection is ``argpartition`` (linear), then a
sort of the k survivors by score, ties by id.

Search cost is one matrix-vector product over the resource's rows (numpy ``einsum``, one core:
see :func:`~memvault.vectors.partition.similarities`): memory-bound, about
``rows x dimensions x 4`` bytes read per query (100k x 384 is 154 MB). Operations small enough
(see ``inline_work``) run on the event loop's thread; larger ones run in a worker thread
(``asyncio.to_thread``), so a 1M-row scan does not stall other coroutines. One lock serialises
reads and writes; numpy releases the GIL while it scans.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from memvault.vectors import validate
from memvault.vectors.base import Vector, VectorHit, VectorItem
from memvault.vectors.partition import Keys, Partition, Rows, similarities

T = TypeVar("T")

INLINE_WORK = 2_000_000
"""Default ``inline_work``: an operation touching at most this many floats (about 5,000 rows of
384 dimensions, well under a millisecond) runs on the event loop's thread; a larger one runs in a
worker thread, which costs some tens of microseconds more but keeps the loop responsive."""

async def run_locked(lock: threading.Lock, work: int, inline_work: int,
                     operation: Callable[[], T]) -> T:
    """Run ``operation`` holding ``lock``: on the event loop's thread when ``work`` (floats
    touched) is at most ``inline_work`` and the lock is free, else in a worker thread that waits
    for the lock (the event loop never waits on it). Returns what ``operation`` returns."""
    if work <= inline_work and lock.acquire(blocking=False):
        try:
            return operation()
        finally:
            lock.release()
    return await asyncio.to_thread(_holding, lock, operation)


def _holding(lock: threading.Lock, operation: Callable[[], T]) -> T:
    with lock:
        return operation()


_GATHER_FRACTION = 0.125  # a thread filter gathers its rows when they are at most this share
# (measured: gathering 10% of the rows and scanning them costs about 3/4 of a full scan, 25% twice)


class ExactIndex:
    """Exact cosine search over float32 vectors, per resource. See the module docstring.

    ``ExactIndex(384)`` makes an empty index for 384-dimensional vectors. It lives in memory;
    rebuild it from the messages (the vectors are derived data) after a restart.
    """

    def __init__(self, dimensions: int, *, inline_work: int = INLINE_WORK) -> None:
        self._dimensions = validate.check_dimensions(dimensions)
        self.inline_work = inline_work
        self._partitions: dict[str, Partition] = {}
        self._resource_of: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dimensions={self._dimensions}, "
                f"vectors={len(self._resource_of)}, resources={len(self._partitions)})")

    @property
    def dimensions(self) -> int:
        return self._dimensions

    # the protocol

    async def upsert(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        await self._run(len(items) * self._dimensions, lambda: self._upsert(items))

    async def search(
        self,
        vector: Vector,
        *,
        resource_id: str,
        thread_id: str | None = None,
        top_k: int = 10,
        min_score: float | None = None,
    ) -> list[VectorHit]:
        query = validate.search(vector, self._dimensions, resource_id, thread_id, top_k)
        partition = self._partitions.get(resource_id)
        if partition is None:
            return []
        work = self._search_work(partition, thread_id)
        return await self._run(
            work, lambda: self._search(query, resource_id, thread_id, top_k, min_score)
        )

    async def delete(self, ids: Sequence[str], *, resource_id: str | None = None) -> int:
        checked = validate.check_ids(ids)
        return await self._run(len(checked) * 64, lambda: self._delete(checked, resource_id))

    async def delete_thread(self, resource_id: str, thread_id: str) -> int:
        validate.check_key(resource_id, "resource_id")
        validate.check_key(thread_id, "thread_id")
        partition = self._partitions.get(resource_id)
        work = 0 if partition is None else partition.size * self._dimensions
        return await self._run(work, lambda: self._delete_thread(resource_id, thread_id))

    async def delete_resource(self, resource_id: str) -> int:
        validate.check_key(resource_id, "resource_id")
        partition = self._partitions.get(resource_id)
        work = 0 if partition is None else partition.size * 64
        return await self._run(work, lambda: self._delete_resource(resource_id))

    async def clear(self) -> int:
        return await self._run(len(self._resource_of) * 64, self._clear)

    async def count(self, resource_id: str | None = None) -> int:
        if resource_id is None:
            return len(self._resource_of)
        partition = self._partitions.get(validate.check_key(resource_id, "resource_id"))
        return 0 if partition is None else partition.size

    async def get(self, ids: Sequence[str], *, resource_id: str | None = None) -> list[VectorItem]:
        checked = validate.check_ids(ids)
        return await self._run(len(checked) * self._dimensions,
                               lambda: self._get(checked, resource_id))

    # running

    async def _run(self, work: int, operation: Callable[[], T]) -> T:
        return await run_locked(self._lock, work, self.inline_work, operation)

    # synchronous cores (called with the lock held)

    def _upsert(self, items: Sequence[VectorItem]) -> None:
        batch = validate.batch(items, self._dimensions)
        moved: dict[str, list[str]] = defaultdict(list)
        groups: dict[str, list[int]] = defaultdict(list)
        for position, (id_, resource_id) in enumerate(
            zip(batch.ids, batch.resource_ids, strict=True)
        ):
            owner = self._resource_of.get(id_)
            if owner is not None and owner != resource_id:
                moved[owner].append(id_)
            groups[resource_id].append(position)
        for owner, ids in moved.items():
            self._remove_ids(owner, ids)
        whole = len(groups) == 1
        for resource_id, positions in groups.items():
            partition = self._partitions.get(resource_id)
            if partition is None:
                partition = self._partitions[resource_id] = Partition(self._dimensions)
            if whole:
                ids, matrix = batch.ids, batch.matrix
                threads, messages, created = batch.thread_ids, batch.message_ids, batch.created_ats
            else:
                ids = [batch.ids[p] for p in positions]
                matrix = batch.matrix[np.asarray(positions, dtype=np.intp)]
                threads = [batch.thread_ids[p] for p in positions]
                messages = [batch.message_ids[p] for p in positions]
                created = [batch.created_ats[p] for p in positions]
            stale, written = partition.put(ids, matrix, threads, messages, created)
            self._resource_of.update(dict.fromkeys(ids, resource_id))
            self._written(resource_id, partition, stale, written)

    def _search(
        self,
        query: NDArray[np.float32],
        resource_id: str,
        thread_id: str | None,
        top_k: int,
        min_score: float | None,
    ) -> list[VectorHit]:
        partition = self._partitions.get(resource_id)
        if partition is None:
            return []
        code: int | None = None
        if thread_id is not None:
            code = partition.thread_code.get(thread_id)
            if code is None:
                return []
        rows, scores = self._candidates(partition, resource_id, query, code, top_k)
        return self._hits(partition, resource_id, rows, scores, top_k, min_score)

    def _get(self, ids: list[str], resource_id: str | None) -> list[VectorItem]:
        found: list[VectorItem] = []
        for id_ in ids:
            owner = self._resource_of.get(id_)
            if owner is None or (resource_id is not None and owner != resource_id):
                continue
            partition = self._partitions[owner]
            found.append(partition.item(partition.row_of[id_], owner))
        return found

    def _delete(self, ids: list[str], resource_id: str | None) -> int:
        by_owner: dict[str, list[str]] = defaultdict(list)
        for id_ in dict.fromkeys(ids):
            owner = self._resource_of.get(id_)
            if owner is not None and (resource_id is None or owner == resource_id):
                by_owner[owner].append(id_)
        return sum(self._remove_ids(owner, owned) for owner, owned in by_owner.items())

    def _delete_thread(self, resource_id: str, thread_id: str) -> int:
        partition = self._partitions.get(resource_id)
        code = None if partition is None else partition.thread_code.get(thread_id)
        if partition is None or code is None:
            return 0
        rows = partition.thread_rows(code)
        return self._remove_rows(resource_id, partition, rows)

    def _clear(self) -> int:
        return sum(self._delete_resource(resource_id) for resource_id in list(self._partitions))

    def _delete_resource(self, resource_id: str) -> int:
        partition = self._partitions.pop(resource_id, None)
        if partition is None:
            return 0
        for id_ in partition.ids[: partition.size]:
            del self._resource_of[id_]
        self._dropped(resource_id)
        return partition.size

    def _remove_ids(self, resource_id: str, ids: list[str]) -> int:
        partition = self._partitions[resource_id]
        rows = np.fromiter((partition.row_of[i] for i in ids), dtype=np.intp, count=len(ids))
        return self._remove_rows(resource_id, partition, rows)

    def _remove_rows(self, resource_id: str, partition: Partition, rows: Rows) -> int:
        if rows.size == 0:
            return 0
        for row in rows.tolist():
            del self._resource_of[partition.ids[row]]
        keys = partition.remove(rows)
        if partition.size == 0:
            del self._partitions[resource_id]
            self._dropped(resource_id)
        else:
            self._removed(resource_id, partition, keys)
        return int(rows.size)

    # search internals, which an approximate index overrides

    def _search_work(self, partition: Partition, thread_id: str | None) -> int:
        """How many floats a search of this partition reads, roughly."""
        return partition.size * self._dimensions

    def _candidates(
        self,
        partition: Partition,
        resource_id: str,
        query: NDArray[np.float32],
        code: int | None,
        top_k: int,
    ) -> tuple[Rows | None, NDArray[np.float32]]:
        """Rows and their scores to pick the top k from; ``rows`` ``None`` means "score ``i`` is
        row ``i``" (scores of rows filtered out are ``-inf``)."""
        return self._exact(partition, query, code)

    def _exact(
        self, partition: Partition, query: NDArray[np.float32], code: int | None
    ) -> tuple[Rows | None, NDArray[np.float32]]:
        if code is None:
            return None, similarities(partition.vectors(), query)
        rows = partition.thread_rows(code)
        if rows.size <= _GATHER_FRACTION * partition.size:
            return rows, similarities(np.take(partition.matrix, rows, axis=0), query)
        scores = similarities(partition.vectors(), query)
        scores[partition.threads[: partition.size] != code] = -np.inf
        return None, scores

    def _hits(
        self,
        partition: Partition,
        resource_id: str,
        rows: Rows | None,
        scores: NDArray[np.float32],
        top_k: int,
        min_score: float | None,
    ) -> list[VectorHit]:
        total = scores.shape[0]
        best = (np.argpartition(scores, total - top_k)[total - top_k :] if total > top_k
                else np.arange(total))
        picked = scores[best]
        keep = picked > -np.inf
        if min_score is not None:
            keep &= picked >= np.float32(min_score)
        best, picked = best[keep], picked[keep]
        chosen = best if rows is None else rows[best]
        hits = [
            VectorHit(
                id=partition.ids[row],
                score=min(1.0, max(-1.0, score)),
                resource_id=resource_id,
                thread_id=partition.thread_names[int(partition.threads[row])],
                message_id=partition.message_ids[row],
            )
            for row, score in zip(chosen.tolist(), picked.tolist(), strict=True)
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits

    # hooks for an approximate index (no-ops here)

    def _written(self, resource_id: str, partition: Partition, stale: Keys, written: Rows) -> None:
        """After ``written`` rows got new vectors (and fresh keys); ``stale`` keys are gone."""

    def _removed(self, resource_id: str, partition: Partition, keys: Keys) -> None:
        """After rows with these keys were removed (the partition is not empty)."""

    def _dropped(self, resource_id: str) -> None:
        """After the resource's partition was removed."""
