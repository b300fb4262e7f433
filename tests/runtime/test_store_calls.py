"""How many store calls a turn makes before the model runs, counted through a proxy around the
real store (memory://, SQLite, PostgreSQL): ``memvault.bench.calls``, whose workload is a turn
with recall on that finds an earlier conversation of the same user.

The turn reads the thread's newest messages, its summary and the working-memory note in one call,
saves the user's message, and recall reads its full-text hits and their neighbours (every thread
in one call; with the hits, in one call where the store has ``PoolSearch``). The first-wave turn
made 12 (13 with a new thread), reading the note three times.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memvault.bench.calls import Counting, counting, turn_calls
from memvault.stores import open_store
from memvault.stores.capabilities import supports_pool_search
from postgres_server import drop_schema, postgres_url, with_schema

MAX_CALLS_BEFORE_THE_MODEL = 4


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Counting]:
    base = schema = None
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'calls.db'}"
    else:
        base = postgres_url("the store-call count over PostgreSQL")
        schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
        url = with_schema(base, schema)
    proxy = counting(await open_store(url))
    try:
        yield proxy
    finally:
        await proxy.close()
        if base is not None and schema is not None:
            await drop_schema(base, schema)


async def test_a_turn_with_recall_reads_little_before_the_model_runs(store: Counting) -> None:
    calls, turn = await turn_calls(store)
    assert turn.context is not None
    recalled = [m.text for hit in turn.context.recalled for m in hit.context]
    assert "I love jasmine tea in the morning" in recalled  # recall really ran, across threads
    assert {hit.thread_id for hit in turn.context.recalled} == {"monday"}
    assert "- Name: Ada" in turn.context.system  # and the note was fed
    assert len(calls) <= MAX_CALLS_BEFORE_THE_MODEL, " ".join(calls)
    assert supports_pool_search(store)  # every built-in store: the search and its neighbourhoods in one call
    assert calls == ["read_turn", "save_messages", "search_pool"]
