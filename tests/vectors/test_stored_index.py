"""StoredIndex over a real SQLite file: nothing is read until a resource is searched, hits are
exact (scores and, on a fixed synthetic set, recall@10 >= 0.99 against float32 brute force),
the memory budget evicts the least recently searched resources and a reload answers the same,
and writes and deletes (also those made while a resource loads) keep memory in step with the
store."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.errors import ValidationError
from memvault.stores.sqlite import SqliteStore
from memvault.vectors.stored import StoredIndex, VectorSource
from sqlite_trace import scans, traced_store

DIMS = 32
MODEL = "test/random"


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


async def _fill(store: Any, resource_id: str, vectors: np.ndarray, threads: int = 3,
                prefix: str = "m") -> list[tuple[str, str]]:
    """Save one message per vector (spread over ``threads`` threads) and store the vectors;
    returns the ``(thread_id, message_id)`` keys, row ``i`` for vector ``i``."""
    memory = Memory(store)
    keys = [(f"t{i % threads}", f"{prefix}{i:05d}") for i in range(len(vectors))]
    for thread_id in sorted({t for t, _ in keys}):
        mine = [m for t, m in keys if t == thread_id]
        await memory.save_messages([Message.user(f"text {m}", id=m) for m in mine],
                                   thread_id=thread_id, resource_id=resource_id)
    await store.save_embeddings(MODEL, DIMS, [
        (resource_id, t, m, np.asarray(v, dtype=np.float32).tobytes())
        for (t, m), v in zip(keys, vectors, strict=True)
    ])
    return keys


def _exact_top(vectors: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = _unit(vectors) @ (query / np.linalg.norm(query))
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """A fresh store of each kind that reads a resource's vectors (PostgreSQL: in a schema of
    its own on the test server, dropped afterwards)."""
    if request.param == "sqlite":
        opened: Any = await SqliteStore.open(tmp_path / "v.db")
        try:
            yield opened
        finally:
            await opened.close()
        return
    from memvault.stores.postgres import PostgresStore
    from postgres_server import drop_schema, postgres_url, with_schema

    server = postgres_url("the stored vector index's PostgreSQL tests")
    schema = f"memvault_stored_{uuid.uuid4().hex[:12]}"
    opened = await PostgresStore.open(with_schema(server, schema))
    try:
        yield opened
    finally:
        await opened.close()
        await drop_schema(server, schema)


async def test_the_stores_are_vector_sources(store: Any) -> None:
    assert isinstance(store, VectorSource)
    assert await store.embedding_cursor() == 0
    await _fill(store, "ada", np.random.default_rng(0).standard_normal((5, DIMS)))
    assert await store.embedding_cursor() == max(r[0] for r in await store.load_embeddings())


async def test_nothing_is_read_until_a_resource_is_searched(store: Any) -> None:
    rng = np.random.default_rng(1)
    ada = rng.standard_normal((300, DIMS))
    await _fill(store, "ada", ada)
    await _fill(store, "bob", rng.standard_normal((200, DIMS)))
    index = StoredIndex(store, DIMS)
    assert index.loaded() == {} and index.resident_bytes == 0 and index.loads == 0
    hits = await index.search(ada[7], resource_id="ada", top_k=3)
    assert hits[0].message_id == "m00007" and hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert index.loaded() == {"ada": 300} and index.loads == 1  # bob was never read
    await index.search(ada[8], resource_id="ada", top_k=3)
    assert index.loads == 1  # the second search reads nothing more


async def test_hits_are_exact_and_recall_at_10_against_brute_force_is_at_least_099(
    store: Any,
) -> None:
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((6000, DIMS)).astype(np.float32)
    keys = await _fill(store, "ada", vectors)
    index = StoredIndex(store, DIMS, oversample=4, min_candidates=40)
    queries = rng.standard_normal((100, DIMS)).astype(np.float32)
    found = 0
    for query in queries:
        hits = await index.search(query, resource_id="ada", top_k=10)
        truth = {keys[i][1] for i in _exact_top(vectors, query, 10)}
        found += len(truth & {hit.message_id for hit in hits})
        row = {m: i for i, (_, m) in enumerate(keys)}
        exact = _unit(vectors[[row[h.message_id or ""] for h in hits]]) @ (query / np.linalg.norm(query))
        assert [h.score for h in hits] == pytest.approx(exact.tolist(), abs=1e-6)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert found / (10 * len(queries)) >= 0.99


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), distinct=st.integers(1, 12), rows=st.integers(1, 90),
       top_k=st.integers(1, 30), min_score=st.one_of(st.none(), st.floats(-1.0, 1.0)))
async def test_hits_are_the_exact_order_s_first_top_k_even_with_ties(
    tmp_path_factory: pytest.TempPathFactory, seed: int, distinct: int, rows: int, top_k: int,
    min_score: float | None,
) -> None:
    """Many messages share a vector (ties at every score): the hits made for the ``top_k``
    best alone are the first ``top_k`` of all the hits in order (score, then thread and message
    id), those scoring ``min_score`` or more; ``similarities`` gives every message its exact
    score."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((distinct, DIMS)).astype(np.float32)
    vectors = base[rng.integers(0, distinct, rows)]
    store = await SqliteStore.open(tmp_path_factory.mktemp("ties") / "v.db")
    try:
        keys = await _fill(store, "ada", vectors)
        index = StoredIndex(store, DIMS, oversample=1, min_candidates=1)
        query = rng.standard_normal(DIMS).astype(np.float32)
        unit = query / np.linalg.norm(query)
        exact = (_unit(vectors) @ unit).tolist()
        scores = await index.similarities(query, "ada", keys)
        assert set(scores) == set(keys)
        for key, score in zip(keys, exact, strict=True):
            assert scores[key] == pytest.approx(score, abs=1e-6)
        found = await store.embeddings_of("ada", keys)
        every = index._rescored(found, unit, "ada", min_score)
        assert index._rescored(found, unit, "ada", min_score, top_k) == every[:top_k]
        order = [(-h.score, h.thread_id, h.message_id) for h in every]
        assert order == sorted(order)
        assert all(min_score is None or h.score >= min_score for h in every)
        assert len(every) == sum(min_score is None or s >= min_score for s in
                                 (h.score for h in index._rescored(found, unit, "ada", None)))
    finally:
        await store.close()


async def test_a_thread_filter_searches_that_thread_only(store: Any) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, DIMS)).astype(np.float32)
    keys = await _fill(store, "ada", vectors, threads=3)
    index = StoredIndex(store, DIMS, min_candidates=20, oversample=2)
    query = rng.standard_normal(DIMS).astype(np.float32)
    hits = await index.search(query, resource_id="ada", thread_id="t1", top_k=5)
    mine = [i for i, (t, _) in enumerate(keys) if t == "t1"]
    truth = [keys[mine[i]][1] for i in _exact_top(vectors[mine], query, 5)]
    assert [h.message_id for h in hits] == truth and {h.thread_id for h in hits} == {"t1"}
    assert await index.search(query, resource_id="ada", thread_id="nope", top_k=5) == []
    assert await index.search(query, resource_id="nobody", top_k=5) == []


async def test_the_budget_evicts_the_least_recently_searched_and_a_reload_answers_the_same(
    store: Any,
) -> None:
    rng = np.random.default_rng(4)
    data = {name: rng.standard_normal((400, DIMS)) for name in ("ada", "bob", "cy")}
    for name, vectors in data.items():
        await _fill(store, name, vectors)
    probe = StoredIndex(store, DIMS)
    query = rng.standard_normal(DIMS)
    before = await probe.search(query, resource_id="ada", top_k=10)
    one = probe.resident_bytes  # one resource's bytes
    index = StoredIndex(store, DIMS, memory_budget=2 * one + one // 2)  # room for two
    assert await index.search(query, resource_id="ada", top_k=10) == before
    await index.search(query, resource_id="bob", top_k=10)
    await index.search(query, resource_id="ada", top_k=10)  # ada is now the most recent
    await index.search(query, resource_id="cy", top_k=10)
    assert list(index.loaded()) == ["ada", "cy"] and index.resident_bytes <= index.memory_budget
    await index.search(query, resource_id="bob", top_k=10)  # evicts ada
    assert list(index.loaded()) == ["cy", "bob"]
    loads = index.loads
    assert await index.search(query, resource_id="ada", top_k=10) == before  # reloaded, same
    assert index.loads == loads + 1
    tiny = StoredIndex(store, DIMS, memory_budget=1)  # smaller than any resource: still served
    assert await tiny.search(query, resource_id="ada", top_k=10) == before
    assert list(tiny.loaded()) == ["ada"]


async def test_writes_and_deletes_keep_a_loaded_resource_in_step(store: Any) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((500, DIMS))
    await _fill(store, "ada", vectors)
    index = StoredIndex(store, DIMS, min_candidates=10, oversample=1)
    target = rng.standard_normal(DIMS).astype(np.float32)
    await index.search(target, resource_id="ada", top_k=1)

    memory = await _add_on_target(store, index, target)
    assert index.loaded() == {"ada": 501}

    moved = (-target).tobytes()  # the message embedded again, the other way
    await store.save_embeddings(MODEL, DIMS, [("ada", "t0", "new", moved)])
    await index.add([("ada", "t0", "new", moved)])
    hits = await index.search(-target, resource_id="ada", top_k=1)
    assert hits[0].message_id == "new" and index.loaded() == {"ada": 501}

    await memory.delete_messages(["new"], thread_id="t0", resource_id="ada")
    await index.forget_messages("ada", "t0", ["new"])
    assert index.loaded() == {"ada": 500}
    assert "new" not in {h.message_id for h in await index.search(-target, resource_id="ada", top_k=5)}

    await memory.delete_thread(thread_id="t1", resource_id="ada")
    await index.forget_thread("ada", "t1")
    hits = await index.search(target, resource_id="ada", top_k=50)
    assert {h.thread_id for h in hits} == {"t0", "t2"}
    assert index.loaded()["ada"] == 500 - len(range(1, 500, 3))

    await memory.delete_resource(resource_id="ada")
    await index.forget_resource("ada")
    assert index.loaded() == {} and index.resident_bytes == 0
    assert await index.search(target, resource_id="ada", top_k=5) == []


class _Paused:
    """A source whose first page of ``resource_id`` waits for ``go``, so a test can write and
    delete while that resource loads."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    async def embedding_cursor(self) -> int:
        return await self.store.embedding_cursor()

    async def resource_embeddings(self, resource_id: str, *, after: tuple[str, str] | None = None,
                                  limit: int = 10_000) -> list[tuple[str, str, bytes]]:
        page = await self.store.resource_embeddings(resource_id, after=after, limit=limit)
        self.started.set()
        await self.go.wait()
        return page

    async def embeddings_of(self, resource_id: str,
                            keys: Sequence[tuple[str, str]]) -> list[tuple[str, str, bytes]]:
        return await self.store.embeddings_of(resource_id, keys)


async def test_writes_and_deletes_during_a_load_are_replayed_on_it(store: Any) -> None:
    rng = np.random.default_rng(6)
    vectors = rng.standard_normal((100, DIMS)).astype(np.float32)
    await _fill(store, "ada", vectors)
    source = _Paused(store)
    index = StoredIndex(source, DIMS)
    first = asyncio.create_task(index.search(vectors[0], resource_id="ada", top_k=1))
    second = asyncio.create_task(index.search(vectors[1], resource_id="ada", top_k=1))
    await source.started.wait()  # the page is read (it still holds m00000) but not applied

    memory = Memory(store)
    await memory.delete_messages(["m00000"], thread_id="t0", resource_id="ada")
    await index.forget_messages("ada", "t0", ["m00000"])
    await memory.save_messages([Message.user("late", id="late")], thread_id="t9", resource_id="ada")
    late = ("ada", "t9", "late", vectors[0].tobytes())
    await store.save_embeddings(MODEL, DIMS, [late])
    await index.add([late])
    source.go.set()

    assert [h.message_id for h in await first] == ["late"]  # m00000 is gone, late is in
    assert [h.message_id for h in await second] == ["m00001"]
    assert index.loads == 1 and index.loaded() == {"ada": 100}


async def test_a_vector_deleted_by_another_process_is_never_a_hit(store: Any) -> None:
    vectors = np.random.default_rng(7).standard_normal((50, DIMS))
    await _fill(store, "ada", vectors)
    index = StoredIndex(store, DIMS)
    await index.search(vectors[3], resource_id="ada", top_k=1)
    await Memory(store).delete_messages(["m00003"], thread_id="t0", resource_id="ada")  # not forgotten
    hits = await index.search(vectors[3], resource_id="ada", top_k=3)
    assert "m00003" not in {h.message_id for h in hits} and len(hits) == 3


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), others=st.integers(1, 400))
async def test_a_resources_hits_and_scores_do_not_depend_on_other_resources(
    tmp_path: Path, seed: int, others: int
) -> None:
    rng = np.random.default_rng(seed)
    mine, query = rng.standard_normal((150, DIMS)), rng.standard_normal(DIMS)
    path = tmp_path / f"iso-{seed}-{others}.db"
    path.unlink(missing_ok=True)
    store = await SqliteStore.open(path)
    try:
        await _fill(store, "ada", mine)
        index = StoredIndex(store, DIMS, min_candidates=16, oversample=2)
        alone = await index.search(query, resource_id="ada", top_k=10)
        await _fill(store, "bob", np.vstack([mine[:others % 150], rng.standard_normal((others, DIMS))]),
                    prefix="m")  # the same message ids and vectors, and more
        await index.search(query, resource_id="bob", top_k=10)
        assert await index.search(query, resource_id="ada", top_k=10) == alone
        assert await StoredIndex(store, DIMS, min_candidates=16, oversample=2).search(
            query, resource_id="ada", top_k=10) == alone
    finally:
        await store.close()


async def test_bad_arguments_raise_validation_errors(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for bad in ({"memory_budget": 0}, {"oversample": 0}, {"min_candidates": -1}):
        with pytest.raises(ValidationError):
            StoredIndex(store, DIMS, **bad)  # type: ignore[arg-type]
    monkeypatch.setenv("MEMVAULT_VECTOR_MEMORY_MB", "lots")
    with pytest.raises(ValidationError, match="MEMVAULT_VECTOR_MEMORY_MB"):
        StoredIndex(store, DIMS)
    monkeypatch.setenv("MEMVAULT_VECTOR_MEMORY_MB", "2")
    index = StoredIndex(store, DIMS)
    assert index.memory_budget == 2 << 20
    with pytest.raises(ValidationError, match="dimensions"):
        await index.search([1.0, 2.0], resource_id="ada")
    with pytest.raises(ValidationError, match="top_k"):
        await index.search([1.0] * DIMS, resource_id="ada", top_k=0)
    with pytest.raises(ValidationError, match="resource_id"):
        await index.search([1.0] * DIMS, resource_id="")
    assert index.loaded() == {}


async def test_vector_reads_go_through_indexes(tmp_path: Path) -> None:
    path = tmp_path / "plans.db"
    # small reads (the rescoring) run on the caller's thread, on the reader connection
    store, statements = await traced_store(path, reader=True)
    vectors = np.random.default_rng(8).standard_normal((200, DIMS))
    await _fill(store, "ada", vectors)
    await _fill(store, "bob", vectors)
    index = StoredIndex(store, DIMS, min_candidates=8, oversample=1)
    await index.search(vectors[0], resource_id="ada", top_k=3)
    await store.embedding_cursor()
    await store.close()
    probe = sqlite3.connect(path)
    checked = 0
    for sql in dict.fromkeys(statements):
        if "message_vectors" not in sql or not sql.lstrip().upper().startswith("SELECT"):
            continue
        scanned, plan = scans(probe, sql)
        assert not [s for s in scanned if s != "k"], f"{sql}\n  {plan}"
        checked += 1
    assert checked >= 3


async def test_memory_open_reads_no_vector_until_a_recall(tmp_path: Path) -> None:
    from memvault.embeddings import FunctionEmbedder
    from memvault.recall import RecallOptions

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[float(len(t)), 1.0, float(t.count("a")), 2.0] for t in texts],
                        dtype=np.float32)

    url = f"sqlite:///{tmp_path}/m.db"
    embedder = FunctionEmbedder(embed, model="test/len", run_in_thread=False)
    async with await Memory.open(url, embedder=embedder) as memory:
        await memory.save_messages([Message.user("banana"), Message.user("kiwi")],
                                   thread_id="t", resource_id="ada")
        await memory.flush()
    async with await Memory.open(url, embedder=embedder) as memory:
        assert memory.semantic is not None and memory.semantic.stored is not None
        assert memory.semantic.stored.loaded() == {}
        found = await memory.recall(resource_id="ada", query="banana",
                                    options=RecallOptions(message_range=0, min_vector_score=0.999))
        assert [h.message.text for h in found.hits][:1] == ["banana"]
        assert memory.semantic.stored.loaded() == {"ada": 2}


async def test_vectors_another_memory_stores_are_found_without_reopening(tmp_path: Path) -> None:
    """Two Memory objects over one file (as two processes would be): the reader opened before any
    vector existed, and its resource was loaded before the writer's next save."""
    from memvault.embeddings import FunctionEmbedder
    from memvault.recall import RecallOptions

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[float(t.count(c)) + 0.01 for c in "abknoqrstuw"] for t in texts],
                        dtype=np.float32)

    url = f"sqlite:///{tmp_path}/shared.db"
    options = RecallOptions(message_range=0, min_vector_score=0.999)
    reader = await Memory.open(url, embedder=FunctionEmbedder(embed, model="test/letters"))
    writer = await Memory.open(url, embedder=FunctionEmbedder(embed, model="test/letters"))
    try:
        await writer.save_messages([Message.user("banana")], thread_id="t", resource_id="ada")
        await writer.flush()
        found = await reader.recall(resource_id="ada", query="banana", options=options)
        assert [h.message.text for h in found.hits] == ["banana"]
        assert reader.semantic is not None and reader.semantic.stored is not None
        assert reader.semantic.stored.loaded() == {"ada": 1}
        await writer.save_messages([Message.user("stork")], thread_id="t2", resource_id="ada")
        await writer.flush()
        found = await reader.recall(resource_id="ada", query="stork", options=options)
        assert [h.message.text for h in found.hits] == ["stork"]
        assert reader.semantic.stored.loaded() == {"ada": 2}
    finally:
        await writer.close()
        await reader.close()


# a large resource: the inverted-file first stage (CoarseLists)


def _clusters(rng: np.random.Generator, count: int, centres: int = 8) -> np.ndarray:
    """Unit vectors around ``centres`` random directions (clustered, like embeddings)."""
    middle = np.random.default_rng(99).standard_normal((centres, DIMS))
    return _unit(middle[rng.integers(0, centres, count)] + 0.25 * rng.standard_normal((count, DIMS)))


def _recall(hits: list[Any], truth: set[str]) -> float:
    return len(truth & {h.message_id for h in hits}) / len(truth)


async def test_a_large_resource_is_searched_through_lists_with_recall_at_least_099(
    store: Any,
) -> None:
    rng = np.random.default_rng(11)
    vectors = _clusters(rng, 4_000)
    keys = await _fill(store, "ada", vectors)
    await _fill(store, "bob", _clusters(rng, 500))  # below coarse_from: a full scan
    index = StoredIndex(store, DIMS, coarse_from=1_000, probe_rows=800)
    queries = _clusters(rng, 60)
    found = 0.0
    for query in queries:
        hits = await index.search(query, resource_id="ada", top_k=10)
        found += _recall(hits, {keys[i][1] for i in _exact_top(vectors, query, 10)})
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert found / len(queries) >= 0.99
    ada = index._partitions["ada"]
    assert ada.coarse is not None and len(ada.coarse.counts) > 4
    assert index._probed(ada, _unit(queries[:1])[0], None, 80).size < 4_000  # not every row
    await index.search(queries[0], resource_id="bob", top_k=3)
    assert index._partitions["bob"].coarse is None


async def test_a_thread_filter_in_a_large_resource_returns_top_k_hits_of_that_thread(
    store: Any,
) -> None:
    rng = np.random.default_rng(12)
    vectors = _clusters(rng, 3_000)
    far = _unit(np.tile(-vectors[:1], (3, 1)) + 0.01 * rng.standard_normal((3, DIMS)))
    keys = await _fill(store, "ada", np.vstack([vectors, far]), threads=1)  # all in t0...
    memory = Memory(store)
    small = [(f"s{i}", vectors[i] * 0 + far[i % 3]) for i in range(3)]
    await memory.save_messages([Message.user("x", id=m) for m, _ in small], thread_id="few",
                               resource_id="ada")  # ...but 3 far-away vectors in "few"
    await store.save_embeddings(MODEL, DIMS, [("ada", "few", m, v.tobytes()) for m, v in small])
    index = StoredIndex(store, DIMS, coarse_from=1_000, probe_rows=300)  # t0: probed, filtered
    query = vectors[0]
    big = await index.search(query, resource_id="ada", thread_id="t0", top_k=10)
    truth = {keys[i][1] for i in _exact_top(np.vstack([vectors, far]), query, 10)}
    assert len(big) == 10 and {h.thread_id for h in big} == {"t0"} and _recall(big, truth) >= 0.9
    few = await index.search(query, resource_id="ada", thread_id="few", top_k=5)
    assert sorted(h.message_id for h in few) == ["s0", "s1", "s2"]  # all the thread has
    # a big thread whose rows are all far from the query: its probe finds none, it is scanned
    lonely = await index.search(-query, resource_id="ada", thread_id="t0", top_k=10)
    assert len(lonely) == 10 and {h.thread_id for h in lonely} == {"t0"}


async def test_a_large_resources_lists_follow_adds_and_deletes_and_survive_eviction(
    store: Any,
) -> None:
    rng = np.random.default_rng(13)
    vectors = _clusters(rng, 3_000)
    keys = await _fill(store, "ada", vectors)
    await _fill(store, "bob", _clusters(rng, 200))
    index = StoredIndex(store, DIMS, coarse_from=1_000, probe_rows=600)
    target = _clusters(rng, 1)[0]
    before = await index.search(target, resource_id="ada", top_k=10)
    assert index._partitions["ada"].coarse is not None

    memory = await _add_on_target(store, index, target)

    gone = [h.message_id or "" for h in before if h.thread_id == "t1"]  # a few rows: swap-moves
    await memory.delete_messages(["new", *gone], thread_id="t0", resource_id="ada")
    await memory.delete_messages(gone, thread_id="t1", resource_id="ada")
    await index.forget_messages("ada", "t0", ["new"])
    await index.forget_messages("ada", "t1", gone)
    await memory.delete_thread(thread_id="t2", resource_id="ada")  # many rows: a compaction
    await index.forget_thread("ada", "t2")
    left = [i for i, (t, m) in enumerate(keys) if t != "t2" and m not in gone]
    assert index.loaded()["ada"] == len(left)
    found = 0.0
    for query in _clusters(rng, 30):
        hits = await index.search(query, resource_id="ada", top_k=10)
        found += _recall(hits, {keys[left[i]][1] for i in _exact_top(vectors[left], query, 10)})
    assert found / 30 >= 0.99

    after = await index.search(target, resource_id="ada", top_k=10)
    small = StoredIndex(store, DIMS, coarse_from=1_000, probe_rows=600, memory_budget=1)
    assert await small.search(target, resource_id="ada", top_k=10) == after
    await small.search(target, resource_id="bob", top_k=3)  # evicts ada
    assert list(small.loaded()) == ["bob"]
    assert await small.search(target, resource_id="ada", top_k=10) == after  # rebuilt: the same
    assert small.loads == 3


async def _add_on_target(store: Any, index: StoredIndex, target: Any) -> Memory:
    """Save and embed message "new" in ada's thread t0 right on ``target``'s direction, add it to
    ``index``, and check that it is then the best hit (score 1); returns the Memory used."""
    memory = Memory(store)
    await memory.save_messages([Message.user("new", id="new")], thread_id="t0", resource_id="ada")
    row = ("ada", "t0", "new", target.tobytes())
    await store.save_embeddings(MODEL, DIMS, [row])
    await index.add([row])
    hits = await index.search(target, resource_id="ada", top_k=1)
    assert hits[0].message_id == "new" and hits[0].score == pytest.approx(1.0, abs=1e-6)
    return memory


async def test_a_large_resources_list_build_never_holds_up_another_resources_search(
    store: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building a large resource's lists takes a minute at 1M vectors; meanwhile the other
    resources are searched and written as usual (the build holds that resource's lock only),
    and the large resource's own search waits for its lists."""
    import threading

    from memvault.vectors.quantized import QuantizedPartition

    rng = np.random.default_rng(5)
    await _fill(store, "ada", _clusters(rng, 1_200))
    bob_vectors = _clusters(rng, 300)
    bob = await _fill(store, "bob", bob_vectors)
    # inline_work=0: every operation runs in a worker thread, as a real large build does
    index = StoredIndex(store, DIMS, coarse_from=1_000, probe_rows=400, inline_work=0)
    query = _clusters(rng, 1)[0]
    await index.search(query, resource_id="bob", top_k=3)  # loaded before the build starts
    building, release = threading.Event(), threading.Event()
    build = QuantizedPartition.build_coarse

    def held(partition: QuantizedPartition) -> Any:
        building.set()
        assert release.wait(30)
        return build(partition)

    monkeypatch.setattr(QuantizedPartition, "build_coarse", held)
    ada_search = asyncio.ensure_future(index.search(query, resource_id="ada", top_k=3))
    assert await asyncio.to_thread(building.wait, 30)
    try:
        hits = await asyncio.wait_for(index.search(query, resource_id="bob", top_k=3), 10)
        assert [h.message_id for h in hits] == [bob[i][1] for i in _exact_top(bob_vectors, query, 3)]
        new = _unit(rng.normal(size=(1, DIMS)))
        await store.save_embeddings(MODEL, DIMS, [("bob", bob[0][0], bob[0][1], new[0].tobytes())])
        await asyncio.wait_for(index.add([("bob", bob[0][0], bob[0][1], new[0].tobytes())]), 10)
        assert (await asyncio.wait_for(index.search(new[0], resource_id="bob", top_k=1), 10))[0].message_id \
            == bob[0][1]
        assert not ada_search.done()  # ada's own search waits for its lists
    finally:
        release.set()
    assert len(await asyncio.wait_for(ada_search, 30)) == 3
    assert index._partitions["ada"].coarse is not None
