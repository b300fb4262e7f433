"""Stores for the framework integrations' tests (Agents SDK, LangGraph): ``memory://``, a real
SQLite file and a real PostgreSQL schema (dropped afterwards)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memvault import Memory
from postgres_server import drop_schema, postgres_url, with_schema

STORES = ["memory", "sqlite", "postgres"]


def _url(kind: str, tmp_path: Path) -> tuple[str, str | None, str | None]:
    """The store's URL, and for PostgreSQL the server's URL and the test's schema."""
    if kind == "memory":
        return "memory://", None, None
    if kind == "sqlite":
        return f"sqlite:///{tmp_path}/agents.db", None, None
    base = postgres_url("the framework integrations over PostgreSQL")
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    return with_schema(base, schema), base, schema


@pytest.fixture(params=STORES)
async def any_memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    """An open Memory over each store, for async tests."""
    url, base, schema = _url(request.param, tmp_path)
    try:
        async with await Memory.open(url) as memory:
            yield memory
    finally:
        if base is not None and schema is not None:
            await drop_schema(base, schema)


@pytest.fixture(params=STORES)
def looped_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[asyncio.Runner, Memory]]:
    """An open Memory over each store and the event loop it lives on, for Hypothesis tests
    (a sync test body that runs each example on that loop)."""
    url, base, schema = _url(request.param, tmp_path)
    with asyncio.Runner() as runner:
        memory = runner.run(Memory.open(url))
        try:
            yield runner, memory
        finally:
            runner.run(memory.close())
            if base is not None and schema is not None:
                runner.run(drop_schema(base, schema))
