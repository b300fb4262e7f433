"""Vector indexes: the :class:`VectorIndex` protocol and its implementations.

- :class:`ExactIndex`: exact cosine search with numpy, the reference
  (``pip install 'memvault[vectors]'``).
- :class:`AnnIndex`: exact for small resources, an HNSW graph (usearch) for large ones
  (``pip install 'memvault[ann]'``).
- :class:`PgVectorIndex`: a PostgreSQL table searched with pgvector's HNSW index
  (``pip install 'memvault[postgres,vectors]'``; pgvector >= 0.8 on the server).

Importing this package needs neither: the implementations load on first use, and a missing
package raises :class:`memvault.errors.MissingExtraError` naming the extra to install.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from memvault.errors import MissingExtraError
from memvault.vectors.base import Vector, VectorHit, VectorIndex, VectorItem

if TYPE_CHECKING:
    from memvault.vectors.ann import AnnIndex
    from memvault.vectors.exact import ExactIndex
    from memvault.vectors.pgvector import PgVectorIndex

__all__ = ["AnnIndex", "ExactIndex", "PgVectorIndex", "Vector", "VectorHit", "VectorIndex", "VectorItem"]


def __getattr__(name: str) -> Any:
    if name not in ("ExactIndex", "AnnIndex", "PgVectorIndex"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name == "PgVectorIndex":
        for package, extra in (("numpy", "vectors"), ("psycopg", "postgres"), ("psycopg_pool", "postgres")):
            if importlib.util.find_spec(package) is None:
                raise MissingExtraError(f"the vector index {name}", extra, package.replace("_", "-"))
        from memvault.vectors.pgvector import PgVectorIndex

        return PgVectorIndex
    try:
        import numpy  # noqa: F401
    except ImportError:
        extra = "vectors" if name == "ExactIndex" else "ann"
        raise MissingExtraError(f"the vector index {name}", extra, "numpy") from None
    if name == "ExactIndex":
        from memvault.vectors.exact import ExactIndex

        return ExactIndex
    from memvault.vectors.ann import AnnIndex

    return AnnIndex
