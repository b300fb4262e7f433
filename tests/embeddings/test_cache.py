"""CachedEmbedder: LRU with a time limit around any embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed: pip install 'memvault[embeddings]'")

from memvault.embeddings import CachedEmbedder, CacheStats, Embedder, EmbeddingError  # noqa: E402
from memvault.errors import ConfigurationError  # noqa: E402


def vector_of(text: str) -> np.ndarray:
    """A distinct unit vector per text (4 dimensions)."""
    seed = sum(map(ord, text)) + 31 * len(text)
    raw = np.array([np.sin(seed), np.cos(seed), np.sin(2 * seed), 1.0 + len(text)], dtype=np.float64)
    return (raw / np.linalg.norm(raw)).astype(np.float32)


class Recording:
    """An embedder that records each call's texts; ``gate`` (if set) holds calls until released."""

    model = "test/recording"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.dimensions: int | None = None
        self.gate: asyncio.Event | None = None
        self.fail_with: Exception | None = None

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_with is not None:
            raise self.fail_with
        self.dimensions = 4
        return np.stack([vector_of(t) for t in texts]) if texts else np.zeros((0, 4), np.float32)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def expected(texts: list[str]) -> np.ndarray:
    return np.stack([vector_of(t) for t in texts])


async def test_hits_and_misses_are_counted_per_text() -> None:
    inner = Recording()
    cache = CachedEmbedder(inner)
    assert isinstance(cache, Embedder)
    assert cache.stats == CacheStats() and cache.stats.hit_rate == 0.0
    await cache.embed(["a", "b"])
    await cache.embed(["a", "c"])
    assert inner.calls == [["a", "b"], ["c"]]
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.size) == (1, 3, 3)
    assert stats.hit_rate == 0.25


async def test_duplicates_and_mixed_hits_keep_input_order_and_embed_misses_once() -> None:
    inner = Recording()
    cache = CachedEmbedder(inner)
    await cache.embed(["a"])
    texts = ["b", "a", "b", "c", "a", "c", "d"]
    vectors = await cache.embed(texts)
    assert inner.calls == [["a"], ["b", "c", "d"]]  # one call, misses only, each once, first-seen order
    np.testing.assert_array_equal(vectors, expected(texts))
    assert (cache.stats.hits, cache.stats.misses) == (4, 4)


async def test_an_all_hit_call_does_not_reach_the_inner_embedder() -> None:
    inner = Recording()
    cache = CachedEmbedder(inner)
    await cache.embed(["x", "y"])
    np.testing.assert_array_equal(await cache.embed(["y", "x", "y"]), expected(["y", "x", "y"]))
    assert inner.calls == [["x", "y"]]


async def test_entries_expire_ttl_seconds_after_they_were_stored() -> None:
    inner, clock = Recording(), FakeClock()
    cache = CachedEmbedder(inner, ttl=10.0, clock=clock)
    await cache.embed(["a"])
    clock.now += 9.99
    await cache.embed(["a"])  # still fresh; a hit does not extend its life
    assert inner.calls == [["a"]]
    clock.now += 0.01
    await cache.embed(["a"])
    assert inner.calls == [["a"], ["a"]]
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.expirations) == (1, 2, 1)


async def test_ttl_none_never_expires() -> None:
    inner, clock = Recording(), FakeClock()
    cache = CachedEmbedder(inner, ttl=None, clock=clock)
    await cache.embed(["a"])
    clock.now += 10**9
    await cache.embed(["a"])
    assert inner.calls == [["a"]]


async def test_the_least_recently_used_entry_is_evicted_first() -> None:
    inner = Recording()
    cache = CachedEmbedder(inner, max_entries=2)
    await cache.embed(["a", "b"])
    await cache.embed(["a"])  # a is now more recent than b
    await cache.embed(["c"])  # evicts b
    assert cache.stats.evictions == 1 and len(cache) == 2
    await cache.embed(["a", "c"])
    assert inner.calls == [["a", "b"], ["c"]]
    await cache.embed(["b"])  # a miss again; evicts a (c was used after a)
    await cache.embed(["c"])
    await cache.embed(["a"])
    assert inner.calls == [["a", "b"], ["c"], ["b"], ["a"]]


async def test_a_batch_larger_than_the_cache_still_returns_everything() -> None:
    cache = CachedEmbedder(Recording(), max_entries=2)
    texts = ["a", "b", "c", "d"]
    np.testing.assert_array_equal(await cache.embed(texts), expected(texts))
    assert len(cache) == 2


async def test_results_are_copies_that_callers_may_change() -> None:
    cache = CachedEmbedder(Recording())
    first = await cache.embed(["a"])
    first[0, :] = 0.0
    np.testing.assert_array_equal(await cache.embed(["a"]), expected(["a"]))


async def test_a_failure_caches_nothing_and_the_next_call_retries() -> None:
    inner = Recording()
    cache = CachedEmbedder(inner)
    inner.fail_with = EmbeddingError("server down")
    with pytest.raises(EmbeddingError, match="server down"):
        await cache.embed(["a"])
    inner.fail_with = None
    np.testing.assert_array_equal(await cache.embed(["a"]), expected(["a"]))
    assert inner.calls == [["a"], ["a"]]


async def test_concurrent_calls_embed_a_shared_text_once() -> None:
    inner = Recording()
    inner.gate = asyncio.Event()
    cache = CachedEmbedder(inner)
    first = asyncio.create_task(cache.embed(["a", "b"]))
    await asyncio.sleep(0)
    second = asyncio.create_task(cache.embed(["b", "c"]))
    await asyncio.sleep(0)
    inner.gate.set()
    one, two = await asyncio.gather(first, second)
    assert inner.calls == [["a", "b"], ["c"]]
    np.testing.assert_array_equal(one, expected(["a", "b"]))
    np.testing.assert_array_equal(two, expected(["b", "c"]))
    assert (cache.stats.hits, cache.stats.misses) == (1, 3)


async def test_a_failure_reaches_the_concurrent_callers_waiting_for_it() -> None:
    inner = Recording()
    inner.gate = asyncio.Event()
    inner.fail_with = EmbeddingError("quota exceeded")
    cache = CachedEmbedder(inner)
    first = asyncio.create_task(cache.embed(["a"]))
    await asyncio.sleep(0)
    second = asyncio.create_task(cache.embed(["a"]))
    await asyncio.sleep(0)
    inner.gate.set()
    results = await asyncio.gather(first, second, return_exceptions=True)
    assert all(isinstance(r, EmbeddingError) for r in results)
    assert inner.calls == [["a"]]


async def test_when_the_fetching_call_is_cancelled_the_waiters_fetch_for_themselves() -> None:
    inner = Recording()
    inner.gate = asyncio.Event()
    cache = CachedEmbedder(inner)
    first = asyncio.create_task(cache.embed(["a"]))
    await asyncio.sleep(0)
    second = asyncio.create_task(cache.embed(["a"]))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    inner.gate.set()
    np.testing.assert_array_equal(await second, expected(["a"]))
    assert first.cancelled()
    assert inner.calls == [["a"], ["a"]]
    assert (cache.stats.hits, cache.stats.misses) == (0, 2)


async def test_model_and_dimensions_are_the_inner_embedders() -> None:
    inner = Recording()
    cache = CachedEmbedder(inner)
    assert cache.model == "test/recording" and cache.dimensions is None
    assert (await cache.embed([])).shape == (0, 0)
    await cache.embed(["a"])
    assert cache.dimensions == 4
    cache.clear()
    assert cache.stats == CacheStats()


@pytest.mark.parametrize(
    ("inner", "options"),
    [(object(), {}), (None, {"max_entries": 0}), (None, {"ttl": -1.0}), (None, {"ttl": 0})],
)
def test_bad_configuration_is_refused(inner: object, options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        CachedEmbedder(inner if inner is not None else Recording(), **options)  # type: ignore[arg-type]
