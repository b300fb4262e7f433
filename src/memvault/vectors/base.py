"""The vector index contract: one small runtime-checkable protocol with exact semantics.

A vector index holds derived data: one embedding per message (or per chunk), rebuildable from
the messages. Every vector belongs to a resource and a thread, and every search names its
resource, so a search never returns another resource's vectors.

Semantics shared by every index (``tests/vectors`` checks them on each one):

- **Ids** are the caller's, unique across the whole index, and deterministic, e.g.
  ``msg:{resource_id}:{thread_id}:{message_id}``. Upserting an id that exists replaces its
  vector and everything else about it (its resource and thread too).
- **Vectors** have exactly :attr:`VectorIndex.dimensions` finite float components and are
  L2-normalised on upsert (a zero vector has no direction and is refused). :meth:`get` returns
  the normalised float32 vectors.
- **Score** is the cosine similarity of the query and the stored vector: a float in
  ``[-1.0, 1.0]``, 1.0 for the same direction, 0.0 for orthogonal, -1.0 for opposite. Hits come
  best first. An approximate index may miss some true neighbours, but the scores it reports are
  the exact cosine similarities of the hits it returns.
- **Errors**: a wrong number of dimensions raises :class:`memvault.errors.ValidationError`
  naming both sizes; NaN or infinite components, an empty id, resource or thread raise it too.
  A batch is validated whole before anything is written: a refused batch writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Vector: TypeAlias = "NDArray[np.float32] | NDArray[np.float64] | Sequence[float]"
"""A vector as callers pass it: a 1-d numpy array (float32 preferred) or a sequence of floats."""


class VectorItem(NamedTuple):
    """One vector to store, with what it belongs to.

    ``message_id`` and ``created_at`` are kept and returned by :meth:`VectorIndex.get`; they do
    not affect search.
    """

    id: str
    vector: Vector
    resource_id: str
    thread_id: str
    message_id: str | None = None
    created_at: datetime | None = None


class VectorHit(NamedTuple):
    """One search result: the vector's id, its cosine similarity to the query in ``[-1, 1]``,
    and the resource, thread and message it belongs to."""

    id: str
    score: float
    resource_id: str
    thread_id: str
    message_id: str | None = None


@runtime_checkable
class VectorIndex(Protocol):
    """Stores vectors per resource and thread, and finds the nearest ones by cosine similarity.

    Implementations: :class:`memvault.vectors.exact.ExactIndex` (numpy, exact: the reference),
    :class:`memvault.vectors.ann.AnnIndex` (an HNSW graph for large resources) and
    :class:`memvault.vectors.pgvector.PgVectorIndex` (pgvector in PostgreSQL, shared by processes).
    """

    @property
    def dimensions(self) -> int:
        """How many components every vector has (fixed when the index is made)."""
        ...

    async def upsert(self, items: Sequence[VectorItem]) -> None:
        """Insert the items, or replace those whose id exists. Validated whole first: a bad item
        raises :class:`ValidationError` and nothing is written. Within one batch, the last item
        with a given id wins."""
        ...

    async def search(
        self,
        vector: Vector,
        *,
        resource_id: str,
        thread_id: str | None = None,
        top_k: int = 10,
        min_score: float | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` vectors of ``resource_id`` (of its thread ``thread_id`` when given)
        most similar to ``vector``, best first; fewer when the resource (thread) has fewer, and
        only those scoring at least ``min_score`` when it is given. The query is normalised
        like stored vectors; ``top_k`` must be at least 1. Never returns another resource's
        vectors."""
        ...

    async def delete(self, ids: Sequence[str], *, resource_id: str | None = None) -> int:
        """Delete these ids; returns how many existed. With ``resource_id``, ids of other
        resources are left alone and not counted, exactly like missing ones."""
        ...

    async def delete_thread(self, resource_id: str, thread_id: str) -> int:
        """Delete every vector of the thread; returns how many."""
        ...

    async def delete_resource(self, resource_id: str) -> int:
        """Delete every vector of the resource; returns how many."""
        ...

    async def clear(self) -> int:
        """Delete every vector of every resource (e.g. before embedding again with another
        model); returns how many. The index stays usable, with the same dimensions."""
        ...

    async def count(self, resource_id: str | None = None) -> int:
        """How many vectors the resource has; the whole index's count without one."""
        ...

    async def get(self, ids: Sequence[str], *, resource_id: str | None = None) -> list[VectorItem]:
        """The stored items of these ids, in the order asked, missing ids skipped (with
        ``resource_id``, other resources' ids count as missing). Vectors come back normalised,
        as float32 arrays."""
        ...
