"""One resource's vectors held as int8, for :class:`~memvault.vectors.stored.StoredIndex`
(needs numpy).

A :class:`QuantizedPartition` keeps each unit-length vector ``v`` as 384 (``dimensions``) int8
codes and one float32 scale, ``v ~ codes * scale`` with ``scale = max|v| / 127``: a quarter of
the float32 bytes. The int8 scores are only used to pick candidates; the index rescores them
exactly from the float32 vectors the store keeps, so a hit's score is always the exact cosine.

Rows are keyed by ``(thread_id, message_id)``; per row the partition keeps the codes, the
scale, the thread (an int32 code) and the message id (one Python string, also the key of the
thread's ``message id -> row`` dict). Removal swaps the last row into the hole (or compacts when
many rows go), so rows move and keys do not. Nothing here locks: the owning index serialises
access.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from memvault.vectors.partition import Rows, ThreadedRows, kept_rows, resized

ROW_OVERHEAD = 150
"""Bytes a row costs beyond its codes, scale and thread code, roughly: its message id (a Python
string), its list slot and its entry in the thread's dict (measured with tracemalloc over 100k
rows loaded in pages: 120 bytes for 8-character ids, 148 for 36-character UUIDs)."""


def quantize(matrix: NDArray[np.float32]) -> tuple[NDArray[np.int8], NDArray[np.float32]]:
    """int8 codes and per-row scales of unit-length rows (each row's largest magnitude maps to
    127)."""
    scales = np.abs(matrix).max(axis=1)
    scales /= 127.0
    scales[scales == 0] = 1.0
    scaled = matrix / scales[:, None]
    codes = np.rint(scaled, out=scaled).astype(np.int8)
    return codes, scales.astype(np.float32, copy=False)


class QuantizedPartition(ThreadedRows):
    """The int8 vectors of one resource. ``codes[:size]`` are the live rows."""

    __slots__ = ("_row_of", "codes", "message_ids", "scales")

    def __init__(self, dimensions: int) -> None:
        self.codes: NDArray[np.int8] = np.empty((0, dimensions), dtype=np.int8)
        self.scales: NDArray[np.float32] = np.empty(0, dtype=np.float32)
        self.threads: NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self.size = 0
        self.message_ids: list[str] = []
        self.thread_code: dict[str, int] = {}
        self.thread_names: list[str] = []
        self._row_of: list[dict[str, int]] = []  # per thread code: message id -> row
        self._thread_rows: dict[int, Rows] = {}

    @property
    def nbytes(self) -> int:
        """Resident bytes, estimated: the arrays' capacity plus :data:`ROW_OVERHEAD` per row."""
        return (self.codes.nbytes + self.scales.nbytes + self.threads.nbytes
                + ROW_OVERHEAD * self.size)

    def key(self, row: int) -> tuple[str, str]:
        """``(thread_id, message_id)`` of a live row."""
        return self.thread_names[int(self.threads[row])], self.message_ids[row]

    # scoring

    def scores(self, query: NDArray[np.float32], rows: Rows | None = None) -> NDArray[np.float32]:
        """Approximate cosine similarities of ``query`` (unit length) to every live row, or to
        ``rows``: one ``einsum`` over the int8 codes, cast to float32 as it streams (a quarter
        of float32's memory traffic: measured as fast as the float32 scan or faster), times
        each row's scale."""
        codes = self.codes[: self.size] if rows is None else np.take(self.codes, rows, axis=0)
        out: NDArray[np.float32] = np.einsum("ij,j->i", codes, query, dtype=np.float32,
                                             casting="unsafe")
        out *= self.scales[: self.size] if rows is None else self.scales[rows]
        return out

    # writing

    def put(self, thread_ids: list[str], message_ids: list[str],
            matrix: NDArray[np.float32]) -> None:
        """Overwrite the rows of keys this partition has and append the others (``matrix``:
        unit-length float32 rows; the last row of a repeated key wins)."""
        if not message_ids:
            return
        self._thread_rows.clear()
        codes, scales = quantize(matrix)
        latest: dict[tuple[int, str], int] = {}
        for position, (thread_id, message_id) in enumerate(zip(thread_ids, message_ids, strict=True)):
            latest[(self._code(thread_id), message_id)] = position
        old_rows: list[int] = []
        old_positions: list[int] = []
        new_positions: list[int] = []
        for (code, message_id), position in latest.items():
            row = self._row_of[code].get(message_id)
            if row is None:
                self._row_of[code][message_id] = self.size + len(new_positions)
                self.message_ids.append(message_id)
                new_positions.append(position)
            else:
                old_rows.append(row)
                old_positions.append(position)
        if old_rows:
            self.codes[old_rows] = codes[old_positions]
            self.scales[old_rows] = scales[old_positions]
        if new_positions:
            start, end = self.size, self.size + len(new_positions)
            self._reserve(end)
            picked = np.asarray(new_positions, dtype=np.intp)
            every = len(new_positions) == len(message_ids)
            self.codes[start:end] = codes if every else codes[picked]
            self.scales[start:end] = scales if every else scales[picked]
            self.threads[start:end] = np.fromiter(
                (self.thread_code[thread_ids[p]] for p in new_positions),
                dtype=np.int32, count=len(new_positions))
            self.size = end

    def append(self, thread_ids: list[str], message_ids: list[str],
               matrix: NDArray[np.float32]) -> None:
        """Append rows whose keys are distinct and not in this partition yet (a load's pages):
        :meth:`put` without the lookups."""
        count = len(message_ids)
        if not count:
            return
        self._thread_rows.clear()
        start, end = self.size, self.size + count
        self._reserve(end)
        codes = [self._code(t) for t in thread_ids]
        for row, (code, message_id) in enumerate(zip(codes, message_ids, strict=True), start):
            self._row_of[code][message_id] = row
        self.message_ids.extend(message_ids)
        self.codes[start:end], self.scales[start:end] = quantize(matrix)
        self.threads[start:end] = codes
        self.size = end

    def remove_messages(self, thread_id: str, message_ids: list[str]) -> int:
        """Remove these messages of the thread; returns how many were here."""
        code = self.thread_code.get(thread_id)
        if code is None:
            return 0
        found = [self._row_of[code][m] for m in message_ids if m in self._row_of[code]]
        return self.remove(np.asarray(sorted(set(found)), dtype=np.intp))

    def remove_thread(self, thread_id: str) -> int:
        """Remove every row of the thread; returns how many."""
        code = self.thread_code.get(thread_id)
        return 0 if code is None else self.remove(self.thread_rows(code))

    def remove(self, rows: Rows) -> int:
        """Remove these rows (distinct, live); returns how many."""
        if rows.size == 0:
            return 0
        self._drop(rows)
        self._shrink()
        return int(rows.size)

    # internals

    def _code(self, thread_id: str) -> int:
        code = super()._code(thread_id)
        if code == len(self._row_of):  # a new thread: its message id -> row dict
            self._row_of.append({})
        return code

    def _resize(self, capacity: int) -> None:
        self.codes = resized(self.codes, capacity, self.size)
        self.scales = resized(self.scales, capacity, self.size)
        self.threads = resized(self.threads, capacity, self.size)

    def _swap_remove(self, row: int) -> None:
        last = self.size - 1
        code = int(self.threads[row])
        del self._row_of[code][self.message_ids[row]]
        if row != last:
            moved_code = int(self.threads[last])
            self.codes[row] = self.codes[last]
            self.scales[row] = self.scales[last]
            self.threads[row] = moved_code
            self.message_ids[row] = self.message_ids[last]
            self._row_of[moved_code][self.message_ids[row]] = row
        self.message_ids.pop()
        self.size = last

    def _compact(self, rows: Rows) -> None:
        kept = kept_rows(self.size, rows)
        count = int(kept.size)
        self.codes[:count] = self.codes[kept]
        self.scales[:count] = self.scales[kept]
        self.threads[:count] = self.threads[kept]
        self.message_ids = [self.message_ids[p] for p in kept.tolist()]
        self.size = count
        for mapping in self._row_of:
            mapping.clear()
        for row, (code, message_id) in enumerate(
            zip(self.threads[:count].tolist(), self.message_ids, strict=True)
        ):
            self._row_of[code][message_id] = row
