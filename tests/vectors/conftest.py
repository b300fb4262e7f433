"""The vector index suite: every test taking ``index`` runs once per entry of :data:`INDEXES`.

Adding an index means appending one :class:`IndexFactory` (with ``close`` when it holds
resources to release); nothing else in the suite changes. The ``pgvector`` entry needs a server
(see ``support.py``). The ``ann`` entry uses a tiny ``graph_min_rows`` so that its graph paths
(not its exact fallback for small resources) answer the suite's searches.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

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
async def index(factory: IndexFactory) -> AsyncIterator[VectorIndex]:
    """An empty index of :data:`DIMENSIONS` dimensions, of each kind; closed afterwards."""
    made = factory.make(DIMENSIONS)
    try:
        yield made
    finally:
        if factory.close is not None:
            await factory.close(made)
