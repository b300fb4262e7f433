"""What the vector index suite shares: the indexes it runs over (see ``conftest.py``).

The ``pgvector`` entry runs when ``MEMVAULT_TEST_POSTGRES_URL`` names a server with pgvector
(e.g. ``postgresql://postgres@127.0.0.1:5432/memvault_test``): each index gets a fresh schema,
dropped afterwards. Without it those tests skip, saying why; with ``MEMVAULT_REQUIRE_POSTGRES=1``
(CI) a missing or unreachable server fails them instead (as in ``tests/conformance``).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import postgres_server
from memvault.vectors import VectorIndex

DIMENSIONS = 8


@dataclass(frozen=True)
class IndexFactory:
    """``make(dimensions)`` returns an empty index; ``approximate`` says its recall may be < 1."""

    id: str
    make: Callable[[int], VectorIndex]
    approximate: bool = False
    needs: str | None = None
    close: Callable[[VectorIndex], Awaitable[None]] | None = None
    """Called after the test with the index ``make`` returned: closes it, drops its data."""

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


def postgres_url() -> str:
    """The test server's URL (see ``tests/postgres_server.py``)."""
    return postgres_server.postgres_url("the pgvector index's tests")


def fresh_schema() -> str:
    return f"memvault_vtest_{uuid.uuid4().hex[:16]}"


def make_pgvector(dimensions: int, schema: str | None = None, **options: Any) -> VectorIndex:
    """A PgVectorIndex over ``schema`` (a fresh one by default) of the test server."""
    from memvault.vectors import PgVectorIndex

    url = postgres_url()
    return PgVectorIndex(url, dimensions, schema=schema or fresh_schema(), **options)


async def drop_schema(schema: str) -> None:
    await postgres_server.drop_schema(postgres_url(), schema)


async def close_pgvector(index: VectorIndex) -> None:
    """Close the index and drop its schema."""
    from memvault.vectors import PgVectorIndex

    assert isinstance(index, PgVectorIndex)
    try:
        await index.close()
    finally:
        await drop_schema(index.schema)


INDEXES: list[IndexFactory] = [
    IndexFactory("exact", _exact),
    IndexFactory("exact-threaded", _exact_threaded),
    IndexFactory("ann", _ann, approximate=True, needs="usearch"),
    IndexFactory("pgvector", make_pgvector, approximate=True, needs="psycopg", close=close_pgvector),
]
"""Every index the suite runs over; ``exact`` (the reference) comes first."""
