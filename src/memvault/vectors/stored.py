"""StoredIndex: the store's own vectors, searched in bounded memory and loaded on first use
(needs numpy: ``pip install 'memvault[vectors]'``).

The float32 vectors stay in the store (:class:`VectorSource`: the SQLite store has it). The
index holds, per resource, an int8 copy (:class:`~memvault.vectors.quantized.QuantizedPartition`,
about 0.35x the float32 bytes with its bookkeeping) and uses it only to pick candidates:

- **Open is O(1).** Nothing is read until a resource is searched.
- **First search of a resource** reads its vectors from the store page by page (keyset paging
  along the messages' ``(resource_id, thread_id, id)`` index: cost proportional to the
  resource's own vectors, never to the store's) and quantises them. Concurrent searches of a
  resource being loaded wait for the same load. Each resource's rows have a lock of their own,
  so one resource's long work (a load, a large resource's lists being built) never holds up
  another resource's searches or writes.
- **Search** scores the resource's int8 rows (a thread filter gathers the thread's rows), keeps
  the best ``max(oversample x top_k, min_candidates)`` candidates, reads their float32 vectors
  from the store and rescores them exactly: a hit's score is its exact cosine similarity, and
  an int8 error can only cost a true neighbour that ranked outside the candidates (recall@10
  against exact search was 1.0 at 100k and 1M in ``memvault bench recall --scale``). A
  resource with at most that many vectors is scored exactly from the store, with no int8 step.
  A candidate whose vector is gone from the store (another process deleted it) is left out.
- **A large resource** (at least ``coarse_from`` vectors, default :data:`COARSE_FROM`) also gets
  an inverted-file first stage (:class:`~memvault.vectors.coarse.CoarseLists`, built in memory
  on its first search and rebuilt once it has doubled or halved): its rows are grouped in lists
  around k-means centroids, and a search scores only the rows of the lists nearest the query,
  at least ``probe_rows`` of them (default :data:`PROBE_ROWS`), then rescores exactly as
  above. It trades a little recall for speed: on ``memvault bench recall --scale``'s vectors
  recall@10 against exact stayed >= 0.99 at 100k and 1M. A thread filter in such a resource
  probes proportionally more rows and keeps the thread's; a thread of at most
  ``4 x probe_rows`` vectors, or one whose probe found fewer than the candidates wanted, is
  scanned whole, so a thread holding ``top_k`` messages always returns ``top_k`` hits.
- **Bounded memory.** Loaded resources are kept in least-recently-searched order under
  ``memory_budget`` bytes (default :data:`DEFAULT_BUDGET`, or ``$MEMVAULT_VECTOR_MEMORY_MB``);
  loading past it evicts the least recently searched resources (never the one being searched,
  so a single resource larger than the budget is still served). An evicted resource is read
  again on its next search: its hits are the same, only that search is slower.
- **Writes and deletes** (:meth:`add`, ``forget_*``) change loaded resources at once and are
  replayed in order on a resource being loaded; a resource not loaded has nothing to change (it
  will read the store). Per-resource partitions: a resource's hits and scores depend on its own
  vectors only.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memvault.errors import ValidationError
from memvault.vectors import validate
from memvault.vectors.base import Vector, VectorHit
from memvault.vectors.exact import INLINE_WORK, run_locked
from memvault.vectors.quantized import QuantizedPartition

T = TypeVar("T")
Op = Callable[[QuantizedPartition], object]

DEFAULT_BUDGET = 1 << 30
"""Default ``memory_budget``: 1 GiB of int8 vectors, about 2.7M vectors of 384 dimensions."""

BUDGET_VARIABLE = "MEMVAULT_VECTOR_MEMORY_MB"
"""Environment variable giving the default ``memory_budget`` in megabytes (MiB)."""

COARSE_FROM = 50_000
"""Default ``coarse_from``: resources with at least this many vectors get the inverted-file first
stage (below it a full int8 scan takes a few milliseconds)."""

PROBE_ROWS = 8_192
"""Default ``probe_rows``: a search of a large resource scores at least this many rows, those of
the lists nearest the query."""

_PAGE = 5_000  # rows read per page while loading (about 8 MB of float32 at 384 dimensions)


@runtime_checkable
class VectorSource(Protocol):
    """Where a :class:`StoredIndex` reads vectors: a store keeping float32 vectors per message
    (``b""`` marks a message with nothing to embed and is skipped)."""

    async def embedding_cursor(self) -> int:
        """The highest cursor of a stored vector (0 with none), in O(1): vectors stored later
        have higher cursors (see :class:`~memvault.stores.capabilities.EmbeddingStore`)."""
        ...

    async def resource_embeddings(
        self, resource_id: str, *, after: tuple[str, str] | None = None, limit: int = 10_000
    ) -> list[tuple[str, str, bytes]]:
        """One page of the resource's vectors as ``(thread_id, message_id, vector)`` ordered by
        ``(thread_id, message_id)``, past the key ``after`` (from the start when ``None``)."""
        ...

    async def embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        """The vectors of these ``(thread_id, message_id)`` messages of ``resource_id``; the
        missing ones (and other resources' ones) are left out."""
        ...


def budget_from_environment() -> int:
    """``$MEMVAULT_VECTOR_MEMORY_MB`` in bytes, else :data:`DEFAULT_BUDGET`."""
    raw = os.environ.get(BUDGET_VARIABLE)
    if not raw:
        return DEFAULT_BUDGET
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = -1.0
    if not megabytes > 0:
        raise ValidationError(f"{BUDGET_VARIABLE} must be a positive number of megabytes, got {raw!r}")
    return int(megabytes * (1 << 20))


def _release_freed_memory() -> None:
    """Give the pages freed by a load (its pages of rows, thousands of small blobs) back to the
    system: glibc keeps them in its heap otherwise, and a 100k-vector load left about twice the
    partition's size resident. ``malloc_trim`` where the C library has it (glibc), else
    nothing."""
    global _TRIM
    if _TRIM is None:
        try:
            _TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None  # the C library's malloc_trim once looked up; False where there is none


def _unit_rows(blobs: Sequence[bytes], dimensions: int) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """The blobs as unit-length float32 rows, and which blobs were usable (right size, finite,
    not zero)."""
    usable = np.fromiter((len(b) == 4 * dimensions for b in blobs), dtype=bool, count=len(blobs))
    matrix = np.frombuffer(b"".join(b for b, ok in zip(blobs, usable, strict=True) if ok),
                           dtype=np.float32).reshape(-1, dimensions).copy()
    norms = np.linalg.norm(matrix, axis=1)
    good = np.isfinite(norms) & (norms > 0)
    matrix = matrix[good] if not good.all() else matrix
    matrix /= norms[good][:, None]
    usable[np.flatnonzero(usable)[~good]] = False
    return matrix, usable


class StoredIndex:
    """Searches a store's vectors with an int8 copy per resource, loaded on first search and
    kept under a memory budget; hits are rescored exactly from the store. See the module
    docstring.

    - ``source``: the store (a :class:`VectorSource`).
    - ``dimensions``: the vectors' size.
    - ``memory_budget``: bytes of loaded vectors to keep (``None``: :func:`budget_from_environment`).
    - ``oversample`` (8) and ``min_candidates`` (64): a search rescores
      ``max(oversample x top_k, min_candidates)`` candidates exactly.
    - ``coarse_from`` (:data:`COARSE_FROM`) and ``probe_rows`` (:data:`PROBE_ROWS`): resources
      with at least ``coarse_from`` vectors are searched through lists, scoring at least
      ``probe_rows`` rows (the rows of the lists nearest the query) instead of all.
    """

    def __init__(
        self,
        source: VectorSource,
        dimensions: int,
        *,
        memory_budget: int | None = None,
        oversample: int = 8,
        min_candidates: int = 64,
        coarse_from: int = COARSE_FROM,
        probe_rows: int = PROBE_ROWS,
        inline_work: int = INLINE_WORK,
    ) -> None:
        self.source = source
        self._dimensions = validate.check_dimensions(dimensions)
        budget = budget_from_environment() if memory_budget is None else memory_budget
        for name, value in (("memory_budget", budget), ("oversample", oversample),
                            ("min_candidates", min_candidates), ("coarse_from", coarse_from),
                            ("probe_rows", probe_rows)):
            validate.check_positive(value, name)
        self.memory_budget = budget
        self.oversample = oversample
        self.min_candidates = min_candidates
        self.coarse_from = coarse_from
        self.probe_rows = probe_rows
        self.inline_work = inline_work
        self._partitions: OrderedDict[str, QuantizedPartition] = OrderedDict()
        self._loading: dict[str, asyncio.Future[QuantizedPartition]] = {}
        self._pending: dict[str, list[Op]] = {}
        self.loads = 0
        """How many times a resource was read from the store (first searches and reloads)."""

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dimensions={self._dimensions}, "
                f"loaded={len(self._partitions)}, resident_bytes={self.resident_bytes})")

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def resident_bytes(self) -> int:
        """Estimated bytes of the loaded resources' vectors (what the budget bounds)."""
        return sum(p.nbytes for p in self._partitions.values())

    def loaded(self) -> dict[str, int]:
        """The loaded resources and their vector counts, least recently searched first."""
        return {resource_id: p.size for resource_id, p in self._partitions.items()}

    # search

    async def search(
        self,
        vector: Vector,
        *,
        resource_id: str,
        thread_id: str | None = None,
        top_k: int = 10,
        min_score: float | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` messages of ``resource_id`` (of ``thread_id`` when given) closest to
        ``vector`` by cosine similarity, best first (ties by thread and message id), with exact
        scores; only those scoring at least ``min_score`` when given."""
        query = validate.search(vector, self._dimensions, resource_id, thread_id, top_k)
        partition = await self._partition(resource_id)
        if self._coarse_due(partition):
            await self._run(partition, partition.size * self._dimensions,
                            functools.partial(self._build_coarse, partition))
        want = max(self.oversample * top_k, self.min_candidates)
        work = self._dimensions * (partition.size if partition.coarse is None
                                   else min(partition.size, max(self.probe_rows, want)))
        keys = await self._run(partition, work, lambda: self._candidates(partition, query, thread_id, want))
        return await self._rescore(query, resource_id, keys, min_score, top_k)

    async def rescore(self, vector: Vector, resource_id: str,
                      keys: Sequence[tuple[str, str]]) -> list[VectorHit]:
        """Exact hits for these ``(thread_id, message_id)`` messages of ``resource_id``, best
        first, read from the store (messages without a vector are left out); loads nothing."""
        query = validate.query_vector(vector, self._dimensions)
        validate.check_key(resource_id, "resource_id")
        return await self._rescore(query, resource_id, keys, None)

    async def similarities(self, vector: Vector, resource_id: str,
                           keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """:meth:`rescore`'s exact scores as a dict by ``(thread_id, message_id)``, in no order,
        without making a hit for each (recall scores a few hundred messages a query this way)."""
        query = validate.query_vector(vector, self._dimensions)
        validate.check_key(resource_id, "resource_id")
        if not keys:
            return {}
        found = await self.source.embeddings_of(resource_id, keys)
        kept, scores = self._exact(found, query)
        return dict(zip(kept, scores.tolist(), strict=True))

    async def _rescore(self, query: NDArray[np.float32], resource_id: str,
                       keys: Sequence[tuple[str, str]], min_score: float | None,
                       top_k: int | None = None) -> list[VectorHit]:
        if not keys:
            return []
        found = await self.source.embeddings_of(resource_id, keys)
        return self._rescored(found, query, resource_id, min_score, top_k)

    def _coarse_due(self, partition: QuantizedPartition) -> bool:
        """Whether the partition's lists must be (re)built, or dropped, before a search."""
        if partition.size < self.coarse_from:
            return partition.coarse is not None
        return partition.coarse is None or partition.coarse.stale(partition.size)

    def _build_coarse(self, partition: QuantizedPartition) -> None:
        if not self._coarse_due(partition):  # another search built them meanwhile
            return
        if partition.size < self.coarse_from:
            partition.coarse = None
        else:
            partition.build_coarse()
            _release_freed_memory()

    def _candidates(self, partition: QuantizedPartition, query: NDArray[np.float32],
                    thread_id: str | None, want: int) -> list[tuple[str, str]]:
        """The keys of the ``want`` rows with the best int8 scores among the rows searched (all
        rows, or the thread's; a large resource's probed rows); every row when fewer."""
        if thread_id is None:
            rows = None
            count = partition.size
        else:
            code = partition.thread_code.get(thread_id)
            if code is None:
                return []
            rows = partition.thread_rows(code)
            count = int(rows.size)
        if count <= want:
            chosen = np.arange(partition.size) if rows is None else rows
        else:
            rows = self._probed(partition, query, rows, want)
            count = partition.size if rows is None else int(rows.size)
            scores = partition.scores(query, rows)
            best = np.argpartition(scores, count - want)[count - want:] if count > want else None
            chosen = (np.arange(count) if best is None else best) if rows is None else (
                rows if best is None else rows[best])
        return [partition.key(row) for row in chosen.tolist()]

    def _probed(self, partition: QuantizedPartition, query: NDArray[np.float32],
                rows: NDArray[np.intp] | None, want: int) -> NDArray[np.intp] | None:
        """The rows to score: through the lists when the partition has them (see the module
        docstring), else ``rows`` (``None``: all)."""
        coarse = partition.coarse
        budget = max(self.probe_rows, want)
        if coarse is None:
            return rows
        if rows is None:
            return coarse.probe(query, budget)
        if rows.size <= 4 * budget:
            return rows
        probed = coarse.probe(query, budget * partition.size // int(rows.size))
        mine = probed[partition.threads[probed] == partition.threads[rows[0]]]
        return mine if mine.size >= want else rows

    def _exact(self, found: list[tuple[str, str, bytes]],
               query: NDArray[np.float32]) -> tuple[list[tuple[str, str]], NDArray[np.float32]]:
        """The usable rows' ``(thread_id, message_id)`` keys and their exact cosine scores."""
        matrix, usable = _unit_rows([blob for _, _, blob in found], self._dimensions)
        kept = [(row[0], row[1]) for row, ok in zip(found, usable.tolist(), strict=True) if ok]
        return kept, np.clip(matrix @ query, -1.0, 1.0)

    def _rescored(self, found: list[tuple[str, str, bytes]], query: NDArray[np.float32],
                  resource_id: str, min_score: float | None,
                  top_k: int | None = None) -> list[VectorHit]:
        """The hits, best first (ties by thread and message id): all, or the ``top_k`` best;
        only those of ``top_k`` rank or better are made."""
        kept, scores = self._exact(found, query)
        chosen: Sequence[int] = range(len(kept))
        if top_k is not None and len(kept) > top_k:  # the top_k-th score, and every tie of it
            kth = -np.partition(-scores, top_k - 1)[top_k - 1]
            chosen = np.flatnonzero(scores >= kth).tolist()
        values = scores.tolist()
        hits = [
            VectorHit(f"msg:{resource_id}:{kept[i][0]}:{kept[i][1]}", values[i], resource_id,
                      kept[i][0], kept[i][1])
            for i in chosen
            if min_score is None or values[i] >= min_score
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.thread_id, hit.message_id or ""))
        return hits[:top_k]

    # loading

    async def _partition(self, resource_id: str) -> QuantizedPartition:
        partition = self._partitions.get(resource_id)
        if partition is not None:
            self._partitions.move_to_end(resource_id)
            return partition
        loading = self._loading.get(resource_id)
        if loading is None:
            loading = asyncio.get_running_loop().create_future()
            self._loading[resource_id] = loading
            self._pending[resource_id] = []
            try:
                partition = await self._load(resource_id)
            except BaseException as exc:
                self._loading.pop(resource_id, None)
                self._pending.pop(resource_id, None)
                if isinstance(exc, asyncio.CancelledError):
                    loading.cancel()
                else:
                    loading.set_exception(exc)
                    loading.exception()  # retrieved: waiters get it, nobody else needs to
                raise
            loading.set_result(partition)
            return partition
        return await asyncio.shield(loading)

    async def _load(self, resource_id: str) -> QuantizedPartition:
        partition = QuantizedPartition(self._dimensions)
        after: tuple[str, str] | None = None
        while True:
            page = await self.source.resource_embeddings(resource_id, after=after, limit=_PAGE)
            if not page:
                break
            after = (page[-1][0], page[-1][1])
            await self._run(partition, len(page) * self._dimensions,
                            functools.partial(self._put, partition, page, fresh=True))
            if len(page) < _PAGE:
                break
        self.loads += 1
        _release_freed_memory()
        for op in self._pending.pop(resource_id):
            op(partition)
        del self._loading[resource_id]
        self._partitions[resource_id] = partition
        self._evict(keep=resource_id)
        return partition

    def _put_rows(self, rows: Sequence[tuple[str, str, bytes]], partition: QuantizedPartition) -> None:
        self._put(partition, rows)

    def _put(self, partition: QuantizedPartition, rows: Sequence[tuple[str, str, bytes]],
             *, fresh: bool = False) -> None:
        """Quantise and write these rows; ``fresh``: a load's page (distinct new keys)."""
        matrix, usable = _unit_rows([blob for _, _, blob in rows], self._dimensions)
        kept = rows if usable.all() else [r for r, ok in zip(rows, usable.tolist(), strict=True) if ok]
        write = partition.append if fresh else partition.put
        write([r[0] for r in kept], [r[1] for r in kept], matrix)

    def _evict(self, keep: str) -> None:
        total = self.resident_bytes
        for resource_id in list(self._partitions):
            if total <= self.memory_budget:
                return
            if resource_id != keep:
                total -= self._partitions.pop(resource_id).nbytes

    # writes and deletes

    async def add(self, rows: Sequence[tuple[str, str, str, bytes]]) -> None:
        """These stored vectors ``(resource_id, thread_id, message_id, float32 bytes)`` were
        written: update the loaded resources (the others read the store when loaded)."""
        by_resource: dict[str, list[tuple[str, str, bytes]]] = {}
        for resource_id, thread_id, message_id, blob in rows:
            if resource_id in self._partitions or resource_id in self._loading:
                by_resource.setdefault(resource_id, []).append((thread_id, message_id, blob))
        for resource_id, found in by_resource.items():
            await self._apply(resource_id, len(found) * self._dimensions,
                              functools.partial(self._put_rows, found))

    async def forget_messages(self, resource_id: str, thread_id: str, message_ids: Sequence[str]) -> None:
        """These messages were deleted: drop their vectors from memory."""
        ids = list(message_ids)
        await self._apply(resource_id, len(ids), lambda p: p.remove_messages(thread_id, ids))

    async def forget_thread(self, resource_id: str, thread_id: str) -> None:
        """The thread was deleted: drop its vectors from memory."""
        await self._apply(resource_id, 0, lambda p: p.remove_thread(thread_id))

    async def forget_resource(self, resource_id: str) -> None:
        """The resource was deleted: drop its vectors from memory."""
        self._partitions.pop(resource_id, None)
        if resource_id in self._pending:
            self._pending[resource_id].append(lambda p: p.remove(np.arange(p.size)))

    async def clear(self) -> None:
        """Every stored vector was deleted: drop everything loaded."""
        self._partitions.clear()
        for ops in self._pending.values():
            ops.append(lambda p: p.remove(np.arange(p.size)))

    async def _apply(self, resource_id: str, work: int, op: Op) -> None:
        """Run ``op`` on the resource's loaded partition, or queue it for the load under way."""
        # The dicts of partitions and pending loads are read and changed on the event loop's
        # thread only (no lock: nothing else touches them); ``run`` (maybe in a worker thread,
        # under the partition's lock) changes its rows.
        # A partition evicted meanwhile needs nothing: the change was in the store before this
        # call, so a load begun since reads it (and one under way replays its pending ops).
        partition = self._partitions.get(resource_id)
        if partition is not None:
            def run() -> None:
                if self._partitions.get(resource_id) is partition:
                    op(partition)
            await self._run(partition, work, run)
            if partition.size == 0 and self._partitions.get(resource_id) is partition:
                del self._partitions[resource_id]  # an empty resource costs nothing to read again
        elif resource_id in self._pending:
            self._pending[resource_id].append(op)

    # running

    async def _run(self, partition: QuantizedPartition, work: int, operation: Callable[[], T]) -> T:
        """``operation`` on ``partition``'s rows, holding its lock (on the loop's thread when it
        is small and the lock free, else in a worker thread): a resource's long work, such as
        building a large resource's lists, never holds up another resource's searches."""
        return await run_locked(partition.lock, work, self.inline_work, operation)
