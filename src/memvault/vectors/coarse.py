"""An inverted-file first stage over one resource's rows, for
:class:`~memvault.vectors.stored.StoredIndex` (needs numpy).

:class:`CoarseLists` splits the rows of a large resource into about ``size / LIST_ROWS``
*lists*, each the rows nearest (by cosine) to one centroid. A search scores the centroids and
takes the rows of the nearest lists until it has at least ``rows`` of them
(:meth:`CoarseLists.probe`); only those are scored further. It is derived data: built in memory
from the rows when a resource is loaded, never stored.

**Building** (:meth:`CoarseLists.build`) is deterministic for the same rows in the same order (a
fixed seed). The centroids come from a two-level spherical k-means on a sample of
:data:`SAMPLE_PER_LIST` rows per list: about ``sqrt(lists)`` top centroids, then each top
centroid's sampled rows split into its share of the lists. Every row then joins its nearest
centroid among all of them, found cheaply: every centroid is scored in the sample's first
:data:`SHORTLIST_DIMENSIONS` principal dimensions, and the :data:`SHORTLIST` best exactly
(assigning rows within their top centroid only put a third of them in the wrong list, and
recall fell to 0.93 on the bench's vectors).

**Changes** follow the owning partition's rows: new rows join the list of their nearest
centroid (:meth:`add`), rewritten rows move to theirs (:meth:`add` again), removed rows leave
their list (:meth:`remove`), a row moved by a swap-removal is renamed (:meth:`move`) and a
compaction renumbers everything (:meth:`compact`). The centroids stay as built; the owner
rebuilds when the resource has grown or shrunk a lot (:meth:`stale`). Nothing here locks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import numpy as np
from numpy.typing import NDArray

Rows = NDArray[np.intp]
Matrix = NDArray[np.float32]

LIST_ROWS = 256
"""Rows per list the build aims at (a list's rows are scored together by a probe), up to
:data:`MAX_LISTS` lists."""

MAX_LISTS = 1_024
"""At most this many lists (1M rows: about 1,000 per list): assigning the rows costs
``size x lists`` products in :data:`SHORTLIST_DIMENSIONS` dimensions."""

SAMPLE_PER_LIST = 32
"""Sampled rows per centroid the k-means trains on."""

ITERATIONS = 8
"""k-means iterations at each level."""

SEED = 14
"""The seed of the sample and of the initial centroids: the same rows build the same lists."""

SHORTLIST_DIMENSIONS = 64
"""Assigning a row first scores every centroid in this many principal dimensions of the sample
(cheap), then exactly the :data:`SHORTLIST` best of them."""

SHORTLIST = 8
"""Centroids scored exactly per row while assigning."""

_CHUNK = 16_384  # rows assigned per matrix product while building (bounds the scratch memory)


def _normalised(matrix: Matrix) -> Matrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    matrix /= norms
    return matrix


def nearest(vectors: Matrix, centroids: Matrix) -> NDArray[np.int32]:
    """The nearest centroid (largest inner product) of each vector, in chunks."""
    out = np.empty(vectors.shape[0], dtype=np.int32)
    for start in range(0, vectors.shape[0], _CHUNK):
        stop = min(start + _CHUNK, vectors.shape[0])
        out[start:stop] = np.argmax(vectors[start:stop] @ centroids.T, axis=1)
    return out


def kmeans(sample: Matrix, count: int, rng: np.random.Generator,
           iterations: int = ITERATIONS) -> Matrix:
    """``count`` unit-length centroids of the unit-length ``sample`` rows by spherical k-means
    (started from distinct sample rows; an emptied centroid restarts at a random row)."""
    count = max(1, min(count, sample.shape[0]))
    centroids = sample[rng.choice(sample.shape[0], count, replace=False)].copy()
    for _ in range(iterations):
        owner = nearest(sample, centroids)
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=count)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        empty = counts == 0
        sums = np.empty_like(centroids)
        sums[~empty] = np.add.reduceat(sample[order], starts[~empty], axis=0)
        sums[empty] = sample[rng.choice(sample.shape[0], int(empty.sum()))]
        centroids = _normalised(sums.astype(np.float32, copy=False))
    return centroids


def _assign(size: int, rows_of: Callable[[Rows], Matrix], sample: Matrix,
            centroids: Matrix) -> NDArray[np.int32]:
    """The nearest centroid of every row, found among a shortlist: rows and centroids are
    projected on the sample's first :data:`SHORTLIST_DIMENSIONS` principal axes (around its
    mean), the :data:`SHORTLIST` best projected scores are kept and scored exactly."""
    mean = sample.mean(axis=0)
    centred = sample - mean
    _, axes = np.linalg.eigh((centred.T @ centred).astype(np.float64))
    basis = np.ascontiguousarray(axes[:, ::-1][:, :SHORTLIST_DIMENSIONS], dtype=np.float32)
    projected = (centroids - mean) @ basis
    bias = centroids @ mean
    shortlist = min(SHORTLIST, centroids.shape[0])
    out = np.empty(size, dtype=np.int32)
    step = 2_048
    for start in range(0, size, step):
        stop = min(start + step, size)
        rows = _normalised(rows_of(np.arange(start, stop)))
        if shortlist == centroids.shape[0]:
            out[start:stop] = np.argmax(rows @ centroids.T, axis=1)
            continue
        approx = ((rows @ basis) - mean @ basis) @ projected.T
        approx += bias
        every = np.arange(stop - start)
        short = np.empty((stop - start, shortlist), dtype=np.intp)
        exact = np.empty(short.shape, dtype=np.float32)
        for column in range(shortlist):  # the best projected scores, one at a time (argmax is
            # several times faster than an argpartition of each row), each scored exactly
            short[:, column] = np.argmax(approx, axis=1)
            approx[every, short[:, column]] = -np.inf
            exact[:, column] = np.einsum("nd,nd->n", rows, centroids[short[:, column]])
        out[start:stop] = short[every, np.argmax(exact, axis=1)]
    return out


def _one_blas_thread() -> AbstractContextManager[object]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - the vectors extra brings it
        return nullcontext()
    limits: AbstractContextManager[object] = threadpool_limits(1, user_api="blas")
    return limits


class CoarseLists:
    """The lists of one resource's rows. See the module docstring.

    - ``centroids``: one unit-length float32 row per list.
    - ``members[list][:counts[list]]``: the list's rows (int32, in no particular order).
    - ``list_of[row]`` and ``slot[row]``: a row's list and its place in it (-1: no list).
    - ``built_rows``: how many rows there were at the build.
    """

    __slots__ = ("built_rows", "centroids", "counts", "list_of", "members", "slot")

    def __init__(self, centroids: Matrix, list_of: NDArray[np.int32], built_rows: int) -> None:
        self.centroids = centroids
        self.built_rows = built_rows
        self.list_of = list_of
        self.slot = np.empty(0, dtype=np.int32)
        self.members: list[NDArray[np.int32]] = []
        self.counts = np.zeros(centroids.shape[0], dtype=np.int64)
        self._regroup()

    @classmethod
    def build(cls, size: int, rows_of: Callable[[Rows], Matrix]) -> CoarseLists:
        """Lists over rows ``0..size-1`` (``size`` >= 1); ``rows_of(rows)`` gives those rows as
        float32 (any positive scale: they are normalised here). With threadpoolctl (the
        ``vectors`` extra) the BLAS runs on one thread meanwhile: two BLAS threads on a busy
        2-core machine made the build several times slower."""
        with _one_blas_thread():
            return cls._build(size, rows_of)

    @classmethod
    def _build(cls, size: int, rows_of: Callable[[Rows], Matrix]) -> CoarseLists:
        rng = np.random.default_rng(SEED)
        lists = max(1, min(MAX_LISTS, round(size / LIST_ROWS)))
        tops = max(1, round(math.sqrt(lists)))
        picked = np.sort(rng.choice(size, min(size, SAMPLE_PER_LIST * lists), replace=False))
        sample = _normalised(rows_of(picked))
        top = kmeans(sample, tops, rng)
        sample_top = nearest(sample, top)
        leaves = []
        for t in range(top.shape[0]):
            mine = sample[sample_top == t]
            if mine.shape[0]:
                leaves.append(kmeans(mine, round(mine.shape[0] * lists / sample.shape[0]), rng))
        centroids = np.concatenate(leaves).astype(np.float32, copy=False)
        list_of = _assign(size, rows_of, sample, centroids)
        return cls(centroids, list_of, size)

    @property
    def nbytes(self) -> int:
        """Bytes held: the centroids, the per-row arrays and the members' capacity."""
        return (self.centroids.nbytes + self.list_of.nbytes + self.slot.nbytes
                + self.counts.nbytes + sum(m.nbytes + 112 for m in self.members))

    def stale(self, size: int) -> bool:
        """Whether the lists should be rebuilt for ``size`` rows: the resource has more than
        doubled or halved since the build (the lists' sizes drift from :data:`LIST_ROWS`)."""
        return size > 2 * self.built_rows or 2 * size < self.built_rows

    # searching

    def probe(self, query: NDArray[np.float32], rows: int) -> Rows:
        """The rows of the lists nearest ``query``, nearest list first, until at least ``rows``
        rows (or every row)."""
        order = np.argsort(-(self.centroids @ query), kind="stable")
        taken = int(np.searchsorted(np.cumsum(self.counts[order]), rows)) + 1
        parts = [self.members[c][: self.counts[c]] for c in order[:taken].tolist()]
        return np.concatenate(parts).astype(np.intp, copy=False) if parts else np.empty(0, np.intp)

    # changes

    def add(self, rows: Rows, vectors: Matrix) -> None:
        """These rows (new, or rewritten) hold these unit-length vectors: each joins the list of
        its nearest centroid (leaving its old list first)."""
        if rows.size == 0:
            return
        end = int(rows.max()) + 1
        if end > self.list_of.shape[0]:
            self._grow(end)
        self.remove(rows[self.list_of[rows] >= 0])
        for row, target in zip(rows.tolist(), nearest(vectors, self.centroids).tolist(), strict=True):
            self._join(row, target)

    def remove(self, rows: Rows) -> None:
        """These rows leave their lists (the last member of a list fills the hole)."""
        for row in rows.tolist():
            target = int(self.list_of[row])
            if target < 0:
                continue
            last = int(self.counts[target]) - 1
            place = int(self.slot[row])
            moved = int(self.members[target][last])
            self.members[target][place] = moved
            self.slot[moved] = place
            self.counts[target] = last
            self.list_of[row] = -1

    def move(self, source: int, target: int) -> None:
        """Row ``source`` is now row ``target`` (whose own row left its list already)."""
        owner = int(self.list_of[source])
        self.list_of[target] = owner
        self.list_of[source] = -1
        if owner >= 0:
            self.slot[target] = self.slot[source]
            self.members[owner][self.slot[target]] = target

    def compact(self, kept: Rows) -> None:
        """Rows ``kept`` (distinct) are now rows ``0..len(kept)-1``, in that order; the others
        are gone."""
        self.list_of = self.list_of[kept]
        self._regroup()

    # internals

    def _grow(self, needed: int) -> None:
        capacity = max(needed, self.list_of.shape[0] + self.list_of.shape[0] // 2, 16)
        for name in ("list_of", "slot"):
            old = getattr(self, name)
            grown = np.full(capacity, -1, dtype=np.int32)
            grown[: old.shape[0]] = old
            setattr(self, name, grown)

    def _join(self, row: int, target: int) -> None:
        count = int(self.counts[target])
        members = self.members[target]
        if count == members.shape[0]:
            members = np.resize(members, max(16, count + count // 2))
            self.members[target] = members
        members[count] = row
        self.slot[row] = count
        self.list_of[row] = target
        self.counts[target] = count + 1

    def _regroup(self) -> None:
        """Members, counts and slots from ``list_of`` alone."""
        lists = self.centroids.shape[0]
        live = np.flatnonzero(self.list_of >= 0).astype(np.int32)
        owners = self.list_of[live]
        order = np.argsort(owners, kind="stable")
        self.counts = np.bincount(owners, minlength=lists).astype(np.int64)
        grouped = live[order]
        bounds = np.concatenate(([0], np.cumsum(self.counts)))
        self.members = [grouped[bounds[c]:bounds[c + 1]].copy() for c in range(lists)]
        self.slot = np.full(self.list_of.shape[0], -1, dtype=np.int32)
        for members in self.members:
            self.slot[members] = np.arange(members.shape[0], dtype=np.int32)
