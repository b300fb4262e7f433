"""Validation and normalisation shared by the numpy-backed indexes (needs numpy).

Everything here raises :class:`memvault.errors.ValidationError` with a message that says what
was wrong; nothing here writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memvault.errors import ValidationError
from memvault.vectors.base import Vector, VectorItem

FloatMatrix = NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Batch:
    """A validated upsert batch, deduplicated (the last item with an id wins), vectors
    normalised: row ``i`` of ``matrix`` belongs to ``ids[i]``."""

    ids: list[str]
    matrix: FloatMatrix
    resource_ids: list[str]
    thread_ids: list[str]
    message_ids: list[str | None]
    created_ats: list[datetime | None]


def check_dimensions(dimensions: int) -> int:
    return check_positive(dimensions, "dimensions")


def check_positive(value: int, name: str) -> int:
    """``value`` when it is an ``int`` (not a ``bool``) of at least 1, else a
    :class:`~memvault.errors.ValidationError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")
    return value


def _as_matrix(vectors: Sequence[Vector], dimensions: int, what: Callable[[int], str]) -> FloatMatrix:
    if not vectors:
        return np.empty((0, dimensions), dtype=np.float32)
    try:  # the fast path: every vector well-formed
        matrix = np.array(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        matrix = None
    if matrix is not None and matrix.ndim == 2 and matrix.shape[1] == dimensions:
        return matrix
    for position, vector in enumerate(vectors):  # find the culprit and name it
        name = what(position)
        try:
            row = np.asarray(vector, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"{name} is not a vector of numbers: {exc}") from None
        if row.ndim != 1:
            raise ValidationError(f"{name} must be one-dimensional, got shape {row.shape}")
        if row.shape[0] != dimensions:
            raise ValidationError(
                f"{name} has {row.shape[0]} dimensions but this index has {dimensions}; "
                "embed with the model the index was made for, or make a new index"
            )
    raise ValidationError("the vectors could not be read as one matrix")  # pragma: no cover


_CHUNK = 65_536


def _normalise(matrix: FloatMatrix, what: Callable[[int], str]) -> FloatMatrix:
    """Scale each row to unit length in place, in chunks (no full-size temporaries). Rows are
    first divided by their largest magnitude, so neither tiny nor huge components under- or
    overflow."""
    for start in range(0, matrix.shape[0], _CHUNK):
        chunk = matrix[start : start + _CHUNK]
        finite = np.isfinite(chunk).all(axis=1)
        if not finite.all():
            bad = what(start + int(np.flatnonzero(~finite)[0]))
            raise ValidationError(f"{bad} has NaN or infinite components; vectors must be finite")
        scale = np.abs(chunk).max(axis=1)
        if not (scale > 0).all():
            bad = what(start + int(np.flatnonzero(~(scale > 0))[0]))
            raise ValidationError(f"{bad} is all zeros: a zero vector has no direction to compare")
        chunk /= scale[:, None]
        chunk /= np.linalg.norm(chunk, axis=1)[:, None]
    return matrix


def query_vector(vector: Vector, dimensions: int) -> NDArray[np.float32]:
    """The query as a normalised float32 vector of ``dimensions`` components."""
    def what(_: int) -> str:
        return "the query vector"

    row: NDArray[np.float32] = _normalise(_as_matrix([vector], dimensions, what), what)[0, :]
    return row


def search(
    vector: Vector, dimensions: int, resource_id: str, thread_id: str | None, top_k: int
) -> NDArray[np.float32]:
    """Check a search's arguments (every index checks them alike); returns the query as a
    normalised float32 vector."""
    check_key(resource_id, "resource_id")
    if thread_id is not None:
        check_key(thread_id, "thread_id")
    check_top_k(top_k)
    return query_vector(vector, dimensions)


def check_top_k(top_k: int) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValidationError(f"top_k must be an integer of at least 1, got {top_k!r}")
    return top_k


def check_key(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{name} must be a non-empty string, got {value!r}")
    return value


def check_ids(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        raise ValidationError("ids must be a sequence of ids, not one string")
    return [check_key(i, "every id") for i in ids]


def batch(items: Sequence[VectorItem], dimensions: int) -> Batch:
    """Validate and normalise an upsert batch as a whole."""
    last: dict[str, VectorItem] = {}
    for position, raw in enumerate(items):
        if not isinstance(raw, tuple) or not 4 <= len(raw) <= 6:
            raise ValidationError(
                f"item {position} must be a VectorItem (id, vector, resource_id, thread_id, "
                f"message_id?, created_at?), got {type(raw).__name__}"
            )
        item = raw if isinstance(raw, VectorItem) else VectorItem(*raw)
        check_key(item.id, f"the id of item {position}")
        check_key(item.resource_id, f"the resource_id of item {item.id!r}")
        check_key(item.thread_id, f"the thread_id of item {item.id!r}")
        if item.message_id is not None:
            check_key(item.message_id, f"the message_id of item {item.id!r}")
        if item.created_at is not None and not isinstance(item.created_at, datetime):
            raise ValidationError(f"the created_at of item {item.id!r} must be a datetime or None")
        last.pop(item.id, None)  # keep the order of the last occurrence
        last[item.id] = item
    chosen = list(last.values())

    def what(position: int) -> str:
        return f"the vector of item {chosen[position].id!r}"

    matrix = _normalise(_as_matrix([item.vector for item in chosen], dimensions, what), what)
    return Batch(
        ids=[item.id for item in chosen],
        matrix=matrix,
        resource_ids=[item.resource_id for item in chosen],
        thread_ids=[item.thread_id for item in chosen],
        message_ids=[item.message_id for item in chosen],
        created_ats=[item.created_at for item in chosen],
    )
