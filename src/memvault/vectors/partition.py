"""One resource's vectors, in the layout the numpy-backed indexes search (needs numpy).

A :class:`Partition` holds a contiguous float32 matrix whose first :attr:`Partition.size` rows are
live, grown by half its capacity when full (amortised O(1) appends), and per-row arrays: the
thread (as an int32 code), the id, the message id, the creation time and a *key*. Keys are
integers that name a row's current vector: a fresh key on every write, so an approximate index
can name vectors in its graph and find their rows again (:attr:`Partition.row_of_key`) however
rows move.

Removal swaps the last row into each hole when few rows go, and compacts the matrix when many
do; rows therefore move, ids and keys do not. Nothing here locks: the index owning the
partition serialises access.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from memvault.vectors.base import VectorItem

Rows = NDArray[np.intp]
Keys = NDArray[np.uint64]

_MIN_CAPACITY = 16
_SWAP_REMOVE_MAX = 64  # removing more rows than this (and than 1/16 of the rows) compacts instead

S = TypeVar("S", bound=np.generic)


def similarities(matrix: NDArray[np.float32], query: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ query`` computed by numpy's ``einsum``: SIMD on one core, GIL released, no
    BLAS threads. Measured on this project's 2-core machines (OpenBLAS 0.3.31, SkylakeX kernel)
    at 100k x 384: 7 ms, against 13 ms for BLAS sgemv on one thread and 16 ms on two; and two
    BLAS threads jump from 0.5 ms to 8 ms at 10k rows whenever the other core is busy. One core
    per search keeps latency predictable; concurrent searches use the other cores."""
    scores: NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return scores


def resized(array: NDArray[S], capacity: int, size: int) -> NDArray[S]:
    """A new array of ``capacity`` rows (``array``'s dtype and row shape) whose first ``size``
    rows are ``array``'s."""
    out: NDArray[S] = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    out[:size] = array[:size]
    return out


def kept_rows(size: int, rows: Rows) -> Rows:
    """The rows of ``0..size-1`` not in ``rows``, ascending."""
    keep = np.ones(size, dtype=bool)
    keep[rows] = False
    return np.flatnonzero(keep)


class ThreadedRows:
    """What :class:`Partition` and :class:`~memvault.vectors.quantized.QuantizedPartition`
    share: ``size`` live rows in arrays of one capacity, each row's thread as an int32 code
    (``threads``; ``thread_names[code]`` is its id), the rows of each thread cached until the
    next change, and the growth, shrink and removal policies. A subclass sets the attributes
    and implements :meth:`_resize` (which reallocates every per-row array)."""

    __slots__ = ("_thread_rows", "size", "thread_code", "thread_names", "threads")

    threads: NDArray[np.int32]
    size: int
    thread_code: dict[str, int]
    thread_names: list[str]
    _thread_rows: dict[int, Rows]

    @property
    def capacity(self) -> int:
        return int(self.threads.shape[0])

    def thread_rows(self, code: int) -> Rows:
        """The rows of the thread with this code, ascending; cached until the next change."""
        rows = self._thread_rows.get(code)
        if rows is None:
            rows = np.flatnonzero(self.threads[: self.size] == code)
            self._thread_rows[code] = rows
        return rows

    def _resize(self, capacity: int) -> None:
        raise NotImplementedError

    def _swap_remove(self, row: int) -> None:
        raise NotImplementedError

    def _compact(self, rows: Rows) -> None:
        raise NotImplementedError

    def _code(self, thread_id: str) -> int:
        """The thread's int32 code, a new one (the next integer) for a thread not seen yet."""
        code = self.thread_code.get(thread_id)
        if code is None:
            code = len(self.thread_names)
            self.thread_code[thread_id] = code
            self.thread_names.append(thread_id)
        return code

    def _reserve(self, needed: int) -> None:
        """Room for ``needed`` rows: capacity grows by half (amortised O(1) appends)."""
        if needed > self.capacity:
            self._resize(max(needed, self.capacity + self.capacity // 2, _MIN_CAPACITY))

    def _shrink(self) -> None:
        """Reallocate the arrays to twice the live rows (at least 16) once their capacity is
        more than four times the live rows and more than 64."""
        if self.capacity > 4 * self.size and self.capacity > 4 * _MIN_CAPACITY:
            self._resize(max(2 * self.size, _MIN_CAPACITY))

    def _drop(self, rows: Rows) -> None:
        """Remove ``rows`` (distinct, live): swap the last row into each hole when few rows go
        (at most 64, or at most 1/16 of the rows), else compact."""
        self._thread_rows.clear()
        if rows.size <= _SWAP_REMOVE_MAX or rows.size * 16 <= self.size:
            for row in sorted(rows.tolist(), reverse=True):
                self._swap_remove(row)
        else:
            self._compact(rows)


class Partition(ThreadedRows):
    """The vectors of one resource. ``matrix[:size]`` are the live rows."""

    __slots__ = (
        "created_ats",
        "ids",
        "keys",
        "keys_pinned",
        "matrix",
        "message_ids",
        "next_key",
        "row_of",
        "row_of_key",
    )

    def __init__(self, dimensions: int) -> None:
        self.matrix: NDArray[np.float32] = np.empty((0, dimensions), dtype=np.float32)
        self.threads: NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self.keys: Keys = np.empty(0, dtype=np.uint64)
        self.size = 0
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.message_ids: list[str | None] = []
        self.created_ats: list[datetime | None] = []
        self.thread_code: dict[str, int] = {}
        self.thread_names: list[str] = []
        self.row_of_key: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self.next_key = 0
        #: While true (an approximate index holds these keys), keys are never renumbered.
        self.keys_pinned = False
        self._thread_rows: dict[int, Rows] = {}

    def vectors(self) -> NDArray[np.float32]:
        """The live rows (a view)."""
        return self.matrix[: self.size]

    def item(self, row: int, resource_id: str) -> VectorItem:
        return VectorItem(
            id=self.ids[row],
            vector=self.matrix[row].copy(),
            resource_id=resource_id,
            thread_id=self.thread_names[int(self.threads[row])],
            message_id=self.message_ids[row],
            created_at=self.created_ats[row],
        )

    # writing

    def put(
        self,
        ids: list[str],
        matrix: NDArray[np.float32],
        thread_ids: list[str],
        message_ids: list[str | None],
        created_ats: list[datetime | None],
    ) -> tuple[Keys, Rows]:
        """Overwrite the rows of ids this partition has, append the others (``ids`` has no
        duplicates; ``matrix`` is normalised). Returns the keys that no longer name a vector
        (the overwritten rows' old keys) and the rows written, which all have fresh keys."""
        self._thread_rows.clear()
        count = len(ids)
        codes = np.fromiter((self._code(t) for t in thread_ids), dtype=np.int32, count=count)
        existing = np.fromiter((self.row_of.get(i, -1) for i in ids), dtype=np.intp, count=count)
        old = np.flatnonzero(existing >= 0)
        new = np.flatnonzero(existing < 0)

        rows_old = existing[old]
        stale = self.keys[rows_old].copy()
        if old.size:
            self.matrix[rows_old] = matrix[old]
            self.threads[rows_old] = codes[old]
            for position, row in zip(old.tolist(), rows_old.tolist(), strict=True):
                self.message_ids[row] = message_ids[position]
                self.created_ats[row] = created_ats[position]

        start = self.size
        if new.size:
            self._reserve(start + new.size)
            end = start + new.size
            self.matrix[start:end] = matrix if new.size == count else matrix[new]
            self.threads[start:end] = codes if new.size == count else codes[new]
            positions = new.tolist()
            new_ids = ids if new.size == count else [ids[p] for p in positions]
            self.ids.extend(new_ids)
            self.row_of.update(zip(new_ids, range(start, end), strict=True))
            self.message_ids.extend(message_ids[p] for p in positions)
            self.created_ats.extend(created_ats[p] for p in positions)
            self.size = end
        written = np.concatenate([rows_old, np.arange(start, self.size, dtype=np.intp)])
        self.row_of_key[stale.astype(np.intp)] = -1
        self._new_keys(written)
        return stale, written

    def remove(self, rows: Rows) -> Keys:
        """Remove these rows (distinct, live); returns their keys."""
        if rows.size == 0:
            return np.empty(0, dtype=np.uint64)
        removed = self.keys[rows].copy()
        self.row_of_key[removed.astype(np.intp)] = -1
        self._drop(rows)
        self._maybe_shrink()
        return removed

    def renumber(self) -> None:
        """Give the live rows the keys ``0..size-1`` (only while no graph holds the old keys)."""
        self.keys[: self.size] = np.arange(self.size, dtype=np.uint64)
        self.row_of_key = np.arange(self.size, dtype=np.int64)
        self.next_key = self.size

    # internals

    def _resize(self, capacity: int) -> None:
        self.matrix = resized(self.matrix, capacity, self.size)
        self.threads = resized(self.threads, capacity, self.size)
        self.keys = resized(self.keys, capacity, self.size)

    def _maybe_shrink(self) -> None:
        if self.size == 0:
            self._resize(0)
            self.thread_code.clear()
            self.thread_names.clear()
        else:
            self._shrink()

    def _new_keys(self, rows: Rows) -> None:
        if not self.keys_pinned and self.next_key + rows.size > 2 * self.size + 1024:
            self.renumber()  # the key space stays proportional to the live rows
            return
        fresh = np.arange(self.next_key, self.next_key + rows.size, dtype=np.uint64)
        self.next_key += rows.size
        if self.next_key > self.row_of_key.shape[0]:
            grown = np.full(max(self.next_key, 2 * self.row_of_key.shape[0]), -1, dtype=np.int64)
            grown[: self.row_of_key.shape[0]] = self.row_of_key
            self.row_of_key = grown
        self.keys[rows] = fresh
        self.row_of_key[fresh.astype(np.intp)] = rows

    def _swap_remove(self, row: int) -> None:
        last = self.size - 1
        gone = self.ids[row]
        if row != last:
            moved = self.ids[last]
            self.matrix[row] = self.matrix[last]
            self.threads[row] = self.threads[last]
            self.keys[row] = self.keys[last]
            self.row_of_key[int(self.keys[row])] = row
            self.ids[row] = moved
            self.message_ids[row] = self.message_ids[last]
            self.created_ats[row] = self.created_ats[last]
            self.row_of[moved] = row
        del self.row_of[gone]
        self.ids.pop()
        self.message_ids.pop()
        self.created_ats.pop()
        self.size = last

    def _compact(self, rows: Rows) -> None:
        kept = kept_rows(self.size, rows)
        count = kept.size
        self.matrix[:count] = self.matrix[kept]
        self.threads[:count] = self.threads[kept]
        self.keys[:count] = self.keys[kept]
        positions = kept.tolist()
        self.ids = [self.ids[p] for p in positions]
        self.message_ids = [self.message_ids[p] for p in positions]
        self.created_ats = [self.created_ats[p] for p in positions]
        self.row_of = dict(zip(self.ids, range(count), strict=True))
        self.row_of_key[self.keys[:count].astype(np.intp)] = np.arange(count, dtype=np.int64)
        self.size = count
