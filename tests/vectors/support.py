"""What the vector index suite shares: the indexes it runs over (see ``conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memvault.vectors import VectorIndex

DIMENSIONS = 8


@dataclass(frozen=True)
class IndexFactory:
    """``make(dimensions)`` returns an empty index; ``approximate`` says its recall may be < 1."""

    id: str
    make: Callable[[int], VectorIndex]
    approximate: bool = False
    needs: str | None = None

    def __str__(self) -> str:
        return self.id


def _exact(dimensions: int) -> VectorIndex:
    from memvault.vectors import ExactIndex

    return ExactIndex(dimensions)


def _ann(dimensions: int) -> VectorIndex:
    from memvault.vectors import AnnIndex

    return AnnIndex(dimensions, graph_min_rows=4)


def _exact_threaded(dimensions: int) -> VectorIndex:
    from memvault.vectors import ExactIndex

    return ExactIndex(dimensions, inline_work=0)  # every operation in a worker thread


INDEXES: list[IndexFactory] = [
    IndexFactory("exact", _exact),
    IndexFactory("exact-threaded", _exact_threaded),
    IndexFactory("ann", _ann, approximate=True, needs="usearch"),
]
"""Every index the suite runs over; ``exact`` (the reference) comes first."""
