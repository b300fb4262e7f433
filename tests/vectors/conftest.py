"""The vector index suite: every test taking ``index`` runs once per entry of :data:`INDEXES`.

Adding an index (e.g. pgvector) means appending one :class:`IndexFactory`; nothing else in the
suite changes. The ``ann`` entry uses a tiny ``graph_min_rows`` so that its graph paths (not its
exact fallback for small resources) answer the suite's searches.
"""

from __future__ import annotations

import pytest

from memvault.vectors import VectorIndex

from .support import DIMENSIONS, INDEXES, IndexFactory


@pytest.fixture(params=INDEXES, ids=str)
def factory(request: pytest.FixtureRequest) -> IndexFactory:
    chosen: IndexFactory = request.param
    if chosen.needs:
        pytest.importorskip(chosen.needs, reason=f"{chosen.id} needs {chosen.needs}")
    return chosen


@pytest.fixture
def index(factory: IndexFactory) -> VectorIndex:
    """An empty index of :data:`DIMENSIONS` dimensions, of each kind."""
    return factory.make(DIMENSIONS)
