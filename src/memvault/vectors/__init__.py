"""Vector indexes: the :class:`VectorIndex` protocol and its implementations.

- :class:`ExactIndex`: exact cosine search with numpy, the reference
  (``pip install 'memvault[vectors]'``).
- :class:`AnnIndex`: exact for small resources, an HNSW graph (usearch) for large ones
  (``pip install 'memvault[ann]'``).
- :class:`PgVectorIndex`: a PostgreSQL table searched with pgvector's HNSW index
  (``pip install 'memvault[postgres,vectors]'``; pgvector >= 0.8 on the server).
- :class:`StoredIndex`: a store's own vectors, read per resource on first search into int8,
  rescored exactly from the store, under a memory budget (the default over SQLite and
  PostgreSQL; ``pip install 'memvault[vectors]'``).

Importing this package needs neither: the implementations load on first use, and a missing
package raises :class:`memvault.errors.MissingExtraError` naming the extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.extras import import_optional
from memvault.vectors.base import Vector, VectorHit, VectorIndex, VectorItem

if TYPE_CHECKING:
    from memvault.vectors.ann import AnnIndex
    from memvault.vectors.exact import ExactIndex
    from memvault.vectors.pgvector import PgVectorIndex
    from memvault.vectors.stored import StoredIndex

__all__ = ["AnnIndex", "ExactIndex", "PgVectorIndex", "StoredIndex", "Vector", "VectorHit", "VectorIndex",
           "VectorItem"]


_INDEXES: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "ExactIndex": ("memvault.vectors.exact", "vectors", ("numpy",)),
    "AnnIndex": ("memvault.vectors.ann", "ann", ("numpy",)),
    "PgVectorIndex": ("memvault.vectors.pgvector", None, ("numpy", "psycopg", "psycopg_pool")),
    "StoredIndex": ("memvault.vectors.stored", "vectors", ("numpy",)),
}
"""Each index: its module, its extra (``None``: the missing package's own) and the packages it
needs."""


def __getattr__(name: str) -> Any:
    if name not in _INDEXES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra, needs = _INDEXES[name]
    return getattr(import_optional(module, f"the vector index {name}", extra, needs=needs), name)
