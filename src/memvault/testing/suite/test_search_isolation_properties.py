"""Property test of invariant 3 for full-text search: whatever another resource writes, before,
between and after a resource's own writes, the resource's search and recall results are the
same, hit for hit and score for score, as in a store holding its data alone."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.recall import RecallOptions
from memvault.testing import has

VOCABULARY = ["tea", "green", "coffee", "garden", "paint", "walk", "time", "secret", "milk", "中文"]
TEXT = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=12).map(" ".join)
BOB = st.lists(st.tuples(st.sampled_from(["t1", "t2"]), TEXT), min_size=1, max_size=12)
ALICE = st.lists(st.lists(TEXT, min_size=1, max_size=40), min_size=1, max_size=4)
QUERY = st.lists(st.sampled_from([*VOCABULARY, "zebra"]), min_size=1, max_size=4).map(" ".join)
START = datetime(2024, 5, 1, tzinfo=UTC)


async def _results(memory: Memory, queries: list[str]) -> list[Any]:
    got: list[Any] = []
    for query in queries:
        for kwargs in ({}, {"thread_id": "t1"}, {"limit": 3}):
            hits = await memory.search_messages(resource_id="bob", query=query, **kwargs)
            got.append([(h.message.id, h.score) for h in hits])
        result = await memory.recall(resource_id="bob", query=query, thread_id="t2",
                                     options=RecallOptions(top_k=5))
        got.append([(h.message.id, h.score) for h in result.hits])
    return got


async def _run(factory: Any, bob: list[tuple[str, str]], alice: list[list[str]], queries: list[str],
               interleave: bool) -> list[Any]:
    with tempfile.TemporaryDirectory() as folder:
        async with factory.memory(Path(folder)) as memory:
            if not has(memory, "full_text"):
                pytest.skip(f"{type(memory.store).__name__} ({factory.id}) has no full_text capability")
            batches = iter(alice if interleave else [])
            for i, (thread, text) in enumerate(bob):
                texts = next(batches, None)
                if texts is not None:
                    await memory.save_messages(
                        [Message.user(t, id=f"a{i}-{j}") for j, t in enumerate(texts)],
                        thread_id=thread, resource_id="alice")
                await memory.save_messages(
                    [Message.user(text, id=f"b{i}", created_at=START + timedelta(seconds=i // 2))],
                    thread_id=thread, resource_id="bob")
            for k, texts in enumerate(batches):
                await memory.save_messages(
                    [Message.user(t, id=f"z{k}-{j}") for j, t in enumerate(texts)],
                    thread_id="t1", resource_id="alice")
            return await _results(memory, queries)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bob=BOB, alice=ALICE, queries=st.lists(QUERY, min_size=1, max_size=3))
def test_another_resources_writes_change_nothing_a_resource_finds(
    store_factory: Any, bob: list[tuple[str, str]], alice: list[list[str]],
    queries: list[str],
) -> None:
    alone = asyncio.run(_run(store_factory, bob, alice, queries, interleave=False))
    together = asyncio.run(_run(store_factory, bob, alice, queries, interleave=True))
    assert together == alone
