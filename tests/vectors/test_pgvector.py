"""PgVectorIndex beyond the shared suite: half-precision vectors, selective thread filters (the
iterative index scan and the exact fallback), the table's dimensions, persistence across
reopening, options, pools and an unreachable server.

Needs a PostgreSQL server with pgvector >= 0.8 (``MEMVAULT_TEST_POSTGRES_URL``, see
``support.py``); every test works in a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("numpy", reason="PgVectorIndex needs numpy (the vectors extra)")
pytest.importorskip("psycopg", reason="PgVectorIndex needs psycopg (the postgres extra)")

import numpy as np
from numpy.typing import NDArray

from memvault.errors import ConfigurationError, StoreError, ValidationError
from memvault.vectors import PgVectorIndex, VectorIndex, VectorItem

from .support import drop_schema, fresh_schema, postgres_url

RARE_ROWS = 20_000
RARE_SHARE = 100  # every 100th row is in the rare thread: 1%
RARE_DIMENSIONS = 16


def random_set(count: int, dimensions: int, seed: int) -> NDArray[np.float32]:
    return np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)


def brute_force(vectors: NDArray[np.float32], ids: list[str], query: NDArray[np.float32],
                top_k: int) -> list[str]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order[:top_k]]


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    """A fresh schema name, dropped (with everything in it) after the test."""
    postgres_url()
    name = fresh_schema()
    try:
        yield name
    finally:
        await drop_schema(name)


def with_params(url: str, **params: str) -> str:
    extra = "&".join(f"{key}={quote(value)}" for key, value in params.items())
    return url + ("&" if "?" in url else "?") + extra


async def test_is_a_vector_index_and_opens_lazily(schema: str) -> None:
    index = PgVectorIndex(postgres_url(), 8, schema=schema)
    assert isinstance(index, VectorIndex)
    assert "memvault_vectors" in repr(index) and index.dimensions == 8
    async with index:
        assert await index.count() == 0
        info = await index.info()
        assert info["rows"] == 0 and info["pgvector_version"] >= "0.8"


async def test_halfvec_stores_half_precision_vectors(schema: str) -> None:
    vectors = random_set(300, 64, seed=1)
    async with PgVectorIndex(postgres_url(), 64, schema=schema, halfvec=True) as index:
        assert index.type_name == "halfvec"
        await index.upsert([VectorItem(f"v{i}", v, "r1", f"t{i % 3}") for i, v in enumerate(vectors)])
        assert await index.count("r1") == 300
        ids = [f"v{i}" for i in range(300)]
        for q in random_set(10, 64, seed=2):
            hits = await index.search(q, resource_id="r1", top_k=10)
            assert len(hits) == 10
            expected = brute_force(vectors, ids, q, 10)
            assert len(set(expected) & {h.id for h in hits}) >= 9
            for hit in hits:  # cosines of the half-precision vectors: 3 digits or so
                vector = vectors[int(hit.id[1:])]
                exact = float(vector @ q / (np.linalg.norm(vector) * np.linalg.norm(q)))
                assert hit.score == pytest.approx(exact, abs=2e-3)
        (item,) = await index.get(["v7"])
        assert item.vector.dtype == np.float32
        np.testing.assert_allclose(item.vector, vectors[7] / np.linalg.norm(vectors[7]), atol=1e-3)
        assert np.all(item.vector.astype(np.float16).astype(np.float32) == item.vector)
    plain = PgVectorIndex(postgres_url(), 64, schema=schema)  # the table is halfvec
    try:
        with pytest.raises(ConfigurationError, match=r"halfvec\(64\).*vector\(64\)"):
            await plain.count()
    finally:
        await plain.close()


@pytest.fixture(scope="module")
def rare_table() -> Iterator[tuple[str, NDArray[np.float32]]]:
    """A schema whose table holds 20,000 vectors of one resource, 1% of them (200) in the
    thread ``rare``, the others spread over 7 threads; built once for the module (with a
    smaller HNSW graph than the default, to build faster)."""
    postgres_url()
    name = fresh_schema()
    vectors = random_set(RARE_ROWS, RARE_DIMENSIONS, seed=3)

    async def build() -> None:
        async with PgVectorIndex(postgres_url(), RARE_DIMENSIONS, schema=name, m=8,
                                 ef_construction=32) as index:
            await index.upsert([
                VectorItem(f"v{i:05d}", v, "r1", "rare" if i % RARE_SHARE == 0 else f"t{i % 7}")
                for i, v in enumerate(vectors)])
            await index.analyze()

    try:
        asyncio.run(build())
        yield name, vectors
    finally:
        asyncio.run(drop_schema(name))


def _rare_truth(vectors: NDArray[np.float32], query: NDArray[np.float32]) -> list[str]:
    rows = list(range(0, RARE_ROWS, RARE_SHARE))
    return brute_force(vectors[rows], [f"v{i:05d}" for i in rows], query, 10)


async def test_a_selective_filter_returns_top_k(rare_table: tuple[str, NDArray[np.float32]]) -> None:
    """The planner's own choice (the btree for 1% of the rows, when its statistics are fresh):
    10 hits of the thread, no fallback."""
    name, vectors = rare_table
    async with PgVectorIndex(postgres_url(), RARE_DIMENSIONS, schema=name) as index:
        assert await index.count("r1") == RARE_ROWS
        for q in random_set(10, RARE_DIMENSIONS, seed=4):
            hits = await index.search(q, resource_id="r1", thread_id="rare", top_k=10)
            assert len(hits) == 10 and {h.thread_id for h in hits} == {"rare"}
            assert len(set(_rare_truth(vectors, q)) & {h.id for h in hits}) >= 9
        assert index.exact_fallbacks == 0


async def _plan(url: str, schema: str, iterative: str) -> tuple[list[str], int]:
    """The plan of a filtered HNSW query with this connection URL, and how many rows it gives."""
    import psycopg

    from memvault.stores.postgres.store import postgres_options

    query = (f"SELECT id FROM {schema}.memvault_vectors WHERE resource_id = 'r1' "
             f"AND thread_id = 'rare' ORDER BY embedding OPERATOR(public.<=>) "
             f"%s::public.vector({RARE_DIMENSIONS}) LIMIT 10")
    q = "[" + ",".join(["0.25"] * RARE_DIMENSIONS) + "]"
    async with await psycopg.AsyncConnection.connect(postgres_options(url)[0]) as conn:
        await conn.execute("SELECT set_config('hnsw.iterative_scan', %s, false)", (iterative,))
        cursor = await conn.execute("EXPLAIN " + query, (q,))
        plan = [str(row[0]) for row in await cursor.fetchall()]
        cursor = await conn.execute(query, (q,))
        return plan, len(await cursor.fetchall())


async def test_the_hnsw_path_needs_the_iterative_scan_for_a_selective_filter(
    rare_table: tuple[str, NDArray[np.float32]],
) -> None:
    """With sorts disabled (``enable_sort=off``) the planner takes the HNSW index for the 1%
    thread. Without an iterative scan, pgvector stops after ``ef_search`` (40) candidates, of
    which about 1% pass the filter: fewer than 10 rows; with it, 10. The index still answers
    10 without it, through its exact fallback (counted)."""
    name, vectors = rare_table
    forced = with_params(postgres_url(), options="-cenable_sort=off")
    plan, rows_off = await _plan(forced, name, "off")
    assert any("memvault_vectors_hnsw" in line for line in plan), plan
    _, rows_on = await _plan(forced, name, "relaxed_order")
    assert rows_off < 10 and rows_on == 10, (rows_off, rows_on)

    queries = random_set(10, RARE_DIMENSIONS, seed=5)
    async with PgVectorIndex(forced, RARE_DIMENSIONS, schema=name) as iterative:
        for q in queries:
            hits = await iterative.search(q, resource_id="r1", thread_id="rare", top_k=10)
            assert len(hits) == 10 and {h.thread_id for h in hits} == {"rare"}
            assert len(set(_rare_truth(vectors, q)) & {h.id for h in hits}) >= 9
        assert iterative.exact_fallbacks == 0
    async with PgVectorIndex(forced, RARE_DIMENSIONS, schema=name, iterative_scan=False) as plain:
        for q in queries:
            hits = await plain.search(q, resource_id="r1", thread_id="rare", top_k=10)
            assert [h.id for h in hits] == _rare_truth(vectors, q)  # exact, from the fallback
        assert plain.exact_fallbacks == len(queries)


async def test_strict_order_iterative_scan(rare_table: tuple[str, NDArray[np.float32]]) -> None:
    name, _ = rare_table
    forced = with_params(postgres_url(), options="-cenable_sort=off")
    async with PgVectorIndex(forced, RARE_DIMENSIONS, schema=name, iterative_scan="strict_order",
                             ef_search=100) as index:
        q = random_set(1, RARE_DIMENSIONS, seed=6)[0]
        hits = await index.search(q, resource_id="r1", thread_id="rare", top_k=10)
        assert len(hits) == 10 and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_a_table_of_other_dimensions_is_refused(schema: str) -> None:
    async with PgVectorIndex(postgres_url(), 8, schema=schema) as index:
        await index.upsert([VectorItem("a", np.ones(8), "r1", "t")])
        with pytest.raises(ValidationError, match="3 dimensions but this index has 8"):
            await index.search([1.0, 2.0, 3.0], resource_id="r1")
    other = PgVectorIndex(postgres_url(), 16, schema=schema)
    try:
        with pytest.raises(ConfigurationError, match=r"vector\(8\).*vector\(16\)"):
            await other.search(np.ones(16), resource_id="r1")
    finally:
        await other.close()
    async with PgVectorIndex(postgres_url(), 16, schema=schema, table="other") as fresh:
        await fresh.upsert([VectorItem("a", np.ones(16), "r1", "t")])  # another table is fine
        assert await fresh.count() == 1


async def test_the_vectors_survive_reopening(schema: str) -> None:
    vectors = random_set(100, 8, seed=7)
    batch = [VectorItem(f"v{i}", v, "r1" if i < 60 else "r2", f"t{i % 2}", f"m{i}")
             for i, v in enumerate(vectors)]
    async with PgVectorIndex(postgres_url(), 8, schema=schema) as first:
        await first.upsert(batch)
        before = await first.search(vectors[3], resource_id="r1", top_k=5)
    async with PgVectorIndex(postgres_url(), 8, schema=schema) as second:
        assert (await second.count(), await second.count("r1"), await second.count("r2")) == (100, 60, 40)
        assert await second.search(vectors[3], resource_id="r1", top_k=5) == before
        (item,) = await second.get(["v70"])
        assert (item.resource_id, item.thread_id, item.message_id) == ("r2", "t0", "m70")
        np.testing.assert_allclose(item.vector, vectors[70] / np.linalg.norm(vectors[70]), atol=1e-6)


async def test_a_given_pool_is_used_and_left_open(schema: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    from memvault.stores.postgres.store import postgres_options

    pool: AsyncConnectionPool = AsyncConnectionPool(postgres_options(postgres_url())[0], min_size=1,
                                                    max_size=2, open=False)
    await pool.open()
    try:
        async with PgVectorIndex(pool, 8, schema=schema) as index:
            await index.upsert([VectorItem("a", np.ones(8), "r1", "t")])
            assert [h.id for h in await index.search(np.ones(8), resource_id="r1")] == ["a"]
        assert not pool.closed
        async with pool.connection() as conn:
            cursor = await conn.execute(f"SELECT count(*) FROM {schema}.memvault_vectors")
            assert (await cursor.fetchone()) == (1,)
    finally:
        await pool.close()


async def test_many_indexes_opening_a_new_table_at_once(schema: str) -> None:
    indexes = [PgVectorIndex(postgres_url(), 8, schema=schema) for _ in range(4)]
    try:
        await asyncio.gather(*(index.open() for index in indexes))
        await asyncio.gather(*(index.upsert([VectorItem(f"v{n}", np.ones(8), "r1", "t")])
                               for n, index in enumerate(indexes)))
        assert await indexes[0].count() == 4
    finally:
        await asyncio.gather(*(index.close() for index in indexes))


async def test_created_at_comes_back_as_the_same_instant(schema: str) -> None:
    from datetime import UTC, datetime, timedelta, timezone

    aware = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=timezone(timedelta(hours=2)))
    naive = datetime(2025, 3, 4, 5, 6, 7)
    async with PgVectorIndex(postgres_url(), 8, schema=schema) as index:
        await index.upsert([VectorItem("a", np.ones(8), "r1", "t", None, aware),
                            VectorItem("n", np.ones(8), "r1", "t", None, naive)])
        a, n = await index.get(["a", "n"])
        assert a.created_at == aware and a.created_at is not None and a.created_at.tzinfo == UTC
        assert n.created_at == naive.replace(tzinfo=UTC)


@pytest.mark.parametrize(("options", "message"), [
    ({"m": 1}, "m must be"),
    ({"ef_search": 0}, "ef_search must be"),
    ({"m": 40, "ef_construction": 64}, "at least 2 \\* m"),
    ({"iterative_scan": "sometimes"}, "iterative_scan must be"),
    ({"table": ""}, "table must be"),
])
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        PgVectorIndex("postgresql://nowhere/db", 8, **options)  # type: ignore[arg-type]


def test_too_many_dimensions_for_hnsw_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"at most 2000.*halfvec=True"):
        PgVectorIndex("postgresql://nowhere/db", 3000)
    PgVectorIndex("postgresql://nowhere/db", 3000, halfvec=True)
    with pytest.raises(ConfigurationError, match="schema"):
        PgVectorIndex("postgresql://nowhere/db?schema=a", 8, schema="b")


async def _hnsw_exists(index: PgVectorIndex) -> bool:
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres_url()) as conn:
        cursor = await conn.execute("SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
                                    (index.schema, f"{index.table}_hnsw"))
        return await cursor.fetchone() is not None


async def test_bulk_load_builds_the_hnsw_index_once_after_the_vectors(schema: str) -> None:
    """Inside ``bulk_load`` the table has no HNSW index (searches are exact and still right);
    on leaving, the index is built over everything loaded and searches find the same
    neighbours as brute force."""
    vectors = random_set(3000, 32, seed=5)
    ids = [f"v{i}" for i in range(3000)]
    async with PgVectorIndex(postgres_url(), 32, schema=schema, ef_search=200) as index:
        await index.upsert([VectorItem(ids[0], vectors[0], "r1", "t0")])
        assert await _hnsw_exists(index)
        async with index.bulk_load(maintenance_work_mem="256MB", parallel_workers=1) as loading:
            assert loading is index and not await _hnsw_exists(index)
            for start in range(0, 3000, 1000):
                await index.upsert([VectorItem(ids[i], vectors[i], "r1", f"t{i % 7}")
                                    for i in range(start, start + 1000)])
            query = random_set(1, 32, seed=6)[0]
            assert [h.id for h in await index.search(query, resource_id="r1", top_k=10)] == \
                brute_force(vectors, ids, query, 10)
        assert await _hnsw_exists(index) and await index.count("r1") == 3000
        assert (await index.info())["hnsw_bytes"] > 0
        found = 0
        for query in random_set(20, 32, seed=7):
            hits = await index.search(query, resource_id="r1", top_k=10)
            found += len({h.id for h in hits} & set(brute_force(vectors, ids, query, 10)))
        assert found / 200 >= 0.95


def test_auto_ef_search_grows_with_the_square_root_of_the_rows() -> None:
    from memvault.vectors.pgvector import auto_ef_search

    assert [auto_ef_search(n) for n in (-1, 0, 10_000, 250_000, 1_000_000, 2_250_000, 10**9)] == [
        200, 200, 200, 200, 400, 600, 1000]
    assert auto_ef_search(1000, top_k=300) == 300


@pytest.mark.parametrize("rows", [None, 2.4e6, 1e6, 1e9])
async def test_auto_ef_search_is_set_from_the_tables_row_estimate(schema: str, rows: float | None) -> None:
    """The settings statement a search runs sets ``hnsw.ef_search`` from ``pg_class.reltuples``
    (set here by hand, as a superuser, to stand for a large table) by the same formula."""
    import psycopg

    from memvault.vectors.pgvector import AUTO_EF_BASE, auto_ef_search

    async with PgVectorIndex(postgres_url(), 8, schema=schema) as index:
        assert index.ef_search == "auto"
        await index.upsert([VectorItem(f"v{i}", v, "r1", "t") for i, v in enumerate(random_set(500, 8, 3))])
        await index.analyze()
        async with await psycopg.AsyncConnection.connect(postgres_url()) as conn:
            table = f'"{schema}"."memvault_vectors"'
            if rows is not None:
                await conn.execute("UPDATE pg_class SET reltuples = %s WHERE oid = %s::regclass",
                                   (rows, table))
            cursor = await conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (table,))
            estimate = (await cursor.fetchone())[0]  # type: ignore[index]
            await conn.execute(index._sql["settings_auto"], (AUTO_EF_BASE, "relaxed_order", "20000"))
            cursor = await conn.execute("SELECT current_setting('hnsw.ef_search')")
            assert int((await cursor.fetchone())[0]) == auto_ef_search(estimate)  # type: ignore[index]
        hits = await index.search(random_set(1, 8, 4)[0], resource_id="r1", top_k=10)
        assert len(hits) == 10


async def test_a_failing_bulk_load_still_leaves_the_index_built(schema: str) -> None:
    vectors = random_set(50, 8, seed=8)
    async def load_then_fail(index: PgVectorIndex) -> None:
        async with index.bulk_load():
            await index.upsert([VectorItem(f"v{i}", v, "r1", "t") for i, v in enumerate(vectors)])
            raise RuntimeError("the loader failed")

    async with PgVectorIndex(postgres_url(), 8, schema=schema) as index:
        with pytest.raises(RuntimeError, match="the loader failed"):
            await load_then_fail(index)
        assert await _hnsw_exists(index) and await index.count() == 50


@pytest.mark.parametrize(("options", "message"), [
    ({"maintenance_work_mem": "lots"}, "maintenance_work_mem must be"),
    ({"maintenance_work_mem": "1GB; DROP TABLE x"}, "maintenance_work_mem must be"),
    ({"parallel_workers": -1}, "parallel_workers must be"),
    ({"parallel_workers": True}, "parallel_workers must be"),
])
async def test_bad_bulk_load_options_are_refused_before_anything_changes(
        schema: str, options: dict[str, object], message: str) -> None:
    async with PgVectorIndex(postgres_url(), 8, schema=schema) as index:
        with pytest.raises(ConfigurationError, match=message):
            async with index.bulk_load(**options):  # type: ignore[arg-type]
                pass
        assert await _hnsw_exists(index)


async def test_an_unreachable_server_raises_a_store_error() -> None:
    index = PgVectorIndex("postgresql://postgres@127.0.0.1:1/db?connect_timeout=2", 8)
    try:
        with pytest.raises(StoreError, match=r"could not connect to PostgreSQL at 127\.0\.0\.1:1/db"):
            await index.count()
    finally:
        await index.close()


def test_the_recall_benchmark_measures_pgvector_beside_the_others(tmp_path: Path) -> None:
    """``memvault bench recall --pgvector URL`` adds a ``pgvector`` system (build time,
    latency, recall@10), its filtered searches and its recall target; the tables show it."""
    pytest.importorskip("usearch", reason="the recall benchmark comes with the bench extra")
    pytest.importorskip("langgraph.store.memory", reason="the peer comes with the bench extra")
    pytest.importorskip("matplotlib", reason="the plot comes with the bench extra")
    from typer.testing import CliRunner

    from memvault.cli.app import app

    url = postgres_url()
    png = tmp_path / "recall.png"
    out = CliRunner().invoke(app, ["bench", "recall", "--sizes", "200", "--queries", "3",
                                   "--pgvector", url, "--pgvector-ef-search", "64",
                                   "--pgvector-ef-sweep", "10,200",
                                   "--plot", str(png), "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    (row,) = result["results"]
    assert row["build"]["pgvector_s"] > 0
    figures = row["systems"]["pgvector"]
    assert figures["queries"] == 3 and 0.0 <= figures["recall_at_10"] <= 1.0
    assert set(row["filtered"]["thread_10pct"]) >= {"exact", "ann", "pgvector"}
    assert row["pgvector"]["rows"] == 200
    assert result["config"]["pgvector"]["ef_search"] == 64
    assert [r["ef_search"] for r in row["pgvector_ef_sweep"]] == [10, 200]
    assert all(r["queries"] == 3 and 0.0 <= r["recall_at_10"] <= 1.0 for r in row["pgvector_ef_sweep"])
    assert "pgvector_recall_at_10_every_size" in result["targets_met"]
    assert png.read_bytes()[:4] == b"\x89PNG"
    tables = CliRunner().invoke(app, ["bench", "recall", "--sizes", "150", "--queries", "3",
                                      "--pgvector", url])
    assert tables.exit_code == 0, tables.output
    assert "pgvector" in tables.stdout
