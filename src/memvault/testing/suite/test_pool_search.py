"""Pool search (:class:`~memvault.stores.capabilities.PoolSearch`): the hits are
``search_passages``' hits, each thread's neighbourhoods are ``read_passages``' reads, and every
passage read is marked with exactly the query terms its indexed text holds and that text's
length (:func:`~memvault.stores.passages.mark_of`), for any query, any thread, another
resource's included."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, Message
from memvault.rules.words import query_terms, searchable_query
from memvault.stores.capabilities import PoolSearch
from memvault.stores.passages import SearchPool, mark_of
from memvault.testing import has
from memvault.testing.suite.test_passage_reads import R, fields, seed
from memvault.testing.suite.test_search_query_properties import CORPUS, for_any_query

pytestmark = pytest.mark.capability("pool_search", "passage_reads", "full_text")

OTHER = "bob"


def _pools(memory: Memory) -> PoolSearch:
    store = memory.store
    assert isinstance(store, PoolSearch)
    return store


def _is_subsequence(part: list[tuple[str, ...]], whole: list[tuple[str, ...]]) -> bool:
    rest = iter(whole)
    return all(term in rest for term in part)


def _check_marks(pool: SearchPool, query: str) -> None:
    """Every passage read is marked as its text holds the pool's terms, which are the query's."""
    assert _is_subsequence(pool.terms, query_terms(searchable_query(query))), (pool.terms, query)
    for name, read in pool.threads.items():
        for passage in read:
            assert passage.thread_id == name
            assert pool.marks[(name, passage.id)] == mark_of(passage.text, pool.terms), (passage.text, query)


async def _seed(memory: Memory) -> None:
    await seed(memory, extra=lambda i: " and coffee" * (i % 2))
    await memory.save_messages([Message.user("green tea for bob", id="b1")], thread_id="t1",
                               resource_id=OTHER)


@pytest.mark.parametrize("message_range", [0, 1, 3])
@pytest.mark.parametrize("query", ["green tea", "coffee sencha", "CAFÉ", "中文", "nothing here",
                                   "t2 number 6"])
async def test_search_pool_is_the_search_and_its_neighbourhoods_marked(
    memory: Memory, query: str, message_range: int
) -> None:
    await _seed(memory)
    for resource, thread in ((R, None), (R, "t2"), (OTHER, None), ("nobody", None)):
        pool = await _pools(memory).search_pool(resource, query, thread_id=thread, limit=4,
                                                message_range=message_range)
        hits = await memory.store.search_passages(  # type: ignore[attr-defined]
            resource, query, thread_id=thread, limit=4)
        assert [(fields(p), score) for p, score in pool.hits] == [(fields(p), score) for p, score in hits]
        by_thread: dict[str, list[str]] = {}
        for hit, _ in hits:
            by_thread.setdefault(hit.thread_id, []).append(hit.id)
        read = await memory.store.read_passages(resource, by_thread, message_range)  # type: ignore[attr-defined]
        assert {name: [fields(p) for p in found] for name, found in pool.threads.items()} == {
            name: [fields(p) for p in found] for name, found in read.items()}
        assert [p.message() for found in pool.threads.values() for p in found] == [
            p.message() for found in read.values() for p in found]
        assert pool.message_range == message_range
        _check_marks(pool, query)
        if resource != R:
            assert all(p.thread_id == "t1" and p.id == "b1" for p, _ in pool.hits)


def test_any_query_marks_what_each_text_holds(store_factory: Any) -> None:
    async def setup(factory: Any, folder: Path, stack: AsyncExitStack) -> Memory:
        memory: Memory = await stack.enter_async_context(factory.memory(folder))
        if not has(memory, "pool_search"):
            pytest.skip(f"{type(memory.store).__name__} ({factory.id}) has no pool_search capability")
        for t in range(3):  # each text in three threads, so that neighbourhoods mix texts
            texts = CORPUS[t:] + CORPUS[:t]
            await memory.save_messages([Message.user(text, id=f"t{t}-m{i}") for i, text in enumerate(texts)],
                                       thread_id=f"t{t}", resource_id=R)
        return memory

    def check(loop: asyncio.AbstractEventLoop, memory: Memory, query: str) -> None:
        pool = loop.run_until_complete(
            _pools(memory).search_pool(R, query, limit=len(CORPUS), message_range=2))
        _check_marks(pool, query)

    for_any_query(store_factory, setup, check, examples=200)


LONG_WORD = "ж" * 700
"""A word PostgreSQL cannot index written as its lexeme (1,400 bytes of UTF-8, 2,801 as hex)."""


@pytest.mark.parametrize(("neighbour", "query"), [
    ("中" * 300 + "文", "needle 中文"),  # the phrase past a word's 256th position
    ("文 " + "x " * 17_000 + "中文", "needle 中文"),  # the phrase past position 16,383
    ("zz " * 500_000 + "found", "needle found"),  # the word past what a tsvector holds (1.5 MB)
    (f"a {LONG_WORD} b", f"needle {LONG_WORD}"),  # a word longer than an index entry
], ids=["positions-per-word", "last-position", "vector-size", "word-size"])
async def test_marks_hold_near_the_index_limits(memory: Memory, neighbour: str, query: str) -> None:
    """A store marks by what the text holds, even where its index cannot tell (PostgreSQL's
    ``tsvector`` keeps 256 positions of a word, none past 16,383, at most 1 MiB, and no
    entry over 2 KiB): the read neighbour of the hit holds the query's second term."""
    await memory.save_messages([Message.user("the needle", id="hit"), Message.user(neighbour, id="near")],
                               thread_id="t1", resource_id=R)
    pool = await _pools(memory).search_pool(R, query, limit=5, message_range=1)
    assert [p.id for p, _ in pool.hits][:1] == ["hit"]
    _check_marks(pool, query)
    assert pool.marks[("t1", "near")][0] & 2
