"""Stores for the framework integrations' tests (Agents SDK, LangGraph): ``memory://``, a real
SQLite file and a real PostgreSQL schema (dropped afterwards)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memvault import Memory
from store_urls import drop_store, store_url

STORES = ["memory", "sqlite", "postgres"]


WHAT = "the framework integrations over PostgreSQL"


@pytest.fixture(params=STORES)
async def any_memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    """An open Memory over each store, for async tests."""
    url, base, schema = store_url(request.param, tmp_path, WHAT)
    try:
        async with await Memory.open(url) as memory:
            yield memory
    finally:
        await drop_store(base, schema)


@pytest.fixture(params=STORES)
def looped_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[asyncio.Runner, Memory]]:
    """An open Memory over each store and the event loop it lives on, for Hypothesis tests
    (a sync test body that runs each example on that loop)."""
    url, base, schema = store_url(request.param, tmp_path, WHAT)
    with asyncio.Runner() as runner:
        memory = runner.run(Memory.open(url))
        try:
            yield runner, memory
        finally:
            runner.run(memory.close())
            runner.run(drop_store(base, schema))
