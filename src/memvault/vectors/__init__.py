"""Vector indexes: the :class:`VectorIndex` protocol and its implementations.

- :class:`ExactIndex`: exact cosine search with numpy, the reference
  (``pip install 'memvault[vectors]'``).
- :class:`AnnIndex`: exact for small resources, an HNSW graph (usearch) for large ones
  (``pip install 'memvault[ann]'``).

Importing this package needs neither: the implementations load on first use, and a missing
package raises :class:`memvault.errors.MissingExtraError` naming the extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.errors import MissingExtraError
from memvault.vectors.base import Vector, VectorHit, VectorIndex, VectorItem

if TYPE_CHECKING:
    from memvault.vectors.ann import AnnIndex
    from memvault.vectors.exact import ExactIndex

__all__ = ["AnnIndex", "ExactIndex", "Vector", "VectorHit", "VectorIndex", "VectorItem"]


def __getattr__(name: str) -> Any:
    if name not in ("ExactIndex", "AnnIndex"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
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
