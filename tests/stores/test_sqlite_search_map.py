"""Full-text searches read the SQLite file through a memory map (``search_map_mb``, default
2 GiB): on a connection of their own, so that what else is read (a resource's vectors, loaded
on its first vector search) is never mapped. The map changes how pages are read, never what a
search finds: the same hits, scores and pool, with it or without it, in the same file."""

from __future__ import annotations

import random
from pathlib import Path
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message, TextPart
from memvault.errors import ConfigurationError
from memvault.stores import open_store, sqlite_options
from memvault.stores.sqlite import SqliteStore
from memvault.stores.sqlite.worker import MMAP_BYTES

WORDS = ("tea", "green", "harbour", "lighthouse", "violin", "Oslo", "recipe", "train", "garden",
         "cello", "What's", "it", "东京", "咖啡", "🙂", "NEAR", "AND", "OR", "NOT", "x*", '"quoted"')


def _said(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


async def _filled(path: Path) -> None:
    """Two resources, 600 messages, saved by one store and indexed when it closes."""
    rng = random.Random(3)
    async with await Memory.open(f"sqlite:///{path}") as memory:
        for resource in ("ada", "bob"):
            for thread in range(6):
                batch = [Message(role="user" if k % 2 == 0 else "assistant",
                                 parts=[TextPart(text=_said(rng))]) for k in range(50)]
                await memory.save_messages(batch, thread_id=f"t{thread}", resource_id=resource)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    path = tmp_path_factory.mktemp("map") / "m.db"
    asyncio.run(_filled(path))
    return path


def _pool_view(pool: object) -> tuple[object, ...]:
    hits = [(p.thread_id, p.id, round(score, 12)) for p, score in pool.hits]  # type: ignore[attr-defined]
    threads = {name: [p.id for p in read] for name, read in pool.threads.items()}  # type: ignore[attr-defined]
    return hits, pool.terms, threads, dict(pool.marks)  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS) | st.text(min_size=1, max_size=8), min_size=1, max_size=6),
       resource=st.sampled_from(("ada", "bob")), thread=st.sampled_from((None, "t1")))
async def test_a_search_finds_the_same_with_the_map_and_without(
    filled: Path, words: list[str], resource: str, thread: str | None
) -> None:
    query = " ".join(words)
    mapped = await SqliteStore.open(filled)
    plain = await SqliteStore.open(filled, search_map_mb=0)
    try:
        found = [await store.search_messages(resource, query, thread_id=thread, limit=20)
                 for store in (mapped, plain)]
        assert [(h.message.id, h.score) for h in found[0]] == [(h.message.id, h.score) for h in found[1]]
        pools = [await store.search_pool(resource, query, thread_id=thread, limit=30, message_range=2)
                 for store in (mapped, plain)]
        assert _pool_view(pools[0]) == _pool_view(pools[1])
    finally:
        await mapped.close()
        await plain.close()


async def test_the_words_of_the_file_are_found_alike(filled: Path) -> None:
    mapped = await SqliteStore.open(filled)
    plain = await SqliteStore.open(filled, search_map_mb=0)
    try:
        for query in ("lighthouse tea", "What's it?", "东京 咖啡", "green OR NOT violin"):
            pools = [await store.search_pool("ada", query, limit=30, message_range=2)
                     for store in (mapped, plain)]
            assert pools[0].hits, query  # the comparison above is of real hits, not of two empty pools
            assert _pool_view(pools[0]) == _pool_view(pools[1])
    finally:
        await mapped.close()
        await plain.close()


async def test_only_the_search_connection_is_mapped(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "s.db")
    unmapped = await SqliteStore.open(tmp_path / "u.db", search_map_mb=0)
    try:
        searcher = store._worker._searcher
        assert searcher is not None
        assert searcher.execute("PRAGMA mmap_size").fetchone() == (MMAP_BYTES,)
        others = [conn for conn in store._worker.connections() if conn is not searcher]
        assert len(others) == 3  # the worker's (vectors and every other read), the reader, small saves
        assert [conn.execute("PRAGMA mmap_size").fetchone() for conn in others] == [(0,)] * 3
        quiet = unmapped._worker._searcher
        assert quiet is not None and quiet.execute("PRAGMA mmap_size").fetchone() == (0,)
    finally:
        await store.close()
        await unmapped.close()


async def test_the_map_is_set_from_the_url(tmp_path: Path) -> None:
    assert sqlite_options("sqlite:///x.db").search_map_mb is None
    assert sqlite_options("sqlite:///x.db?search_map_mb=64").search_map_mb == 64
    store = await open_store(f"sqlite:///{tmp_path / 'u.db'}?search_map_mb=1")
    try:
        assert isinstance(store, SqliteStore)
        searcher = store._worker._searcher
        assert searcher is not None and searcher.execute("PRAGMA mmap_size").fetchone() == (2**20,)
    finally:
        await store.close()


@pytest.mark.parametrize("value", ["-1", "x", "1.5", "", " 3", "٣", "9" * 5000])
def test_a_bad_map_size_in_a_url_is_a_configuration_error(value: str) -> None:
    with pytest.raises(ConfigurationError, match="search_map_mb"):
        sqlite_options(f"sqlite:///x.db?search_map_mb={value}")


@pytest.mark.parametrize("value", [-1, True, 1.5, "3"])
def test_a_bad_map_size_is_a_configuration_error_and_creates_no_file(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigurationError, match="search_map_mb"):
        SqliteStore(tmp_path / "never.db", search_map_mb=value)  # type: ignore[arg-type]
    assert not (tmp_path / "never.db").exists()


@given(value=st.text(max_size=30) | st.integers(min_value=-(10**6), max_value=10**15).map(str))
def test_any_map_size_in_a_url_parses_or_is_a_configuration_error(value: str) -> None:
    url = "sqlite:///x.db?" + urlencode({"search_map_mb": value})
    try:
        parsed = sqlite_options(url).search_map_mb
    except ConfigurationError:
        return
    assert parsed is not None and parsed >= 0 and str(parsed) == value.lstrip("0").rjust(1, "0")
