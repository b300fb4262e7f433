"""An LRU cache with a time limit, around any embedder."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memvault.embeddings.base import (
    Embedder,
    EmbeddingError,
    check_texts,
    empty_matrix,
    positive_float,
    positive_int,
    require_numpy,
)
from memvault.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["CacheStats", "CachedEmbedder"]


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters since the cache was made (or last cleared).

    ``misses`` counts texts sent to the inner embedder; ``hits`` counts every other requested text
    (found in the cache, a repeat within the same call, or already being fetched by a concurrent
    call). So ``hits + misses`` is the number of texts asked for, and ``hit_rate`` the share of them
    that cost no embedding.
    """

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0
    size: int = 0

    @property
    def hit_rate(self) -> float:
        """``hits / (hits + misses)``, or 0.0 before any request."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass(slots=True)
class _Entry:
    vector: NDArray[np.float32]
    stored_at: float


_InFlight = tuple[asyncio.AbstractEventLoop, "asyncio.Future[NDArray[np.float32] | None]"]


class CachedEmbedder:
    """Wraps an embedder with a least-recently-used cache whose entries expire.

    ``embed(texts)`` answers each text from the cache when it holds a vector stored less than
    ``ttl`` seconds ago, and sends all the other texts, each once (duplicates removed), to the inner
    embedder in a single call; the result has one row per input text, in input order, exactly as
    the inner embedder would have returned it. The cache keeps at most ``max_entries`` vectors,
    evicting the least recently used (a hit counts as a use; age for ``ttl`` counts from when the
    vector was stored). Texts are compared exactly (no normalisation of case or spaces).

    Concurrent calls are safe, from one event loop or several threads: a text that one call is
    already fetching is awaited by the other calls in the same event loop instead of being embedded
    twice. A failure of the inner embedder is raised to every caller waiting for it and caches
    nothing.

    ``model`` and ``dimensions`` are the inner embedder's. ``stats`` returns :class:`CacheStats`.

    Options:
        inner: the embedder to cache.
        max_entries: how many vectors to keep (default 1000; about 1.5 MB at 384 dimensions).
        ttl: seconds a vector stays valid (default 3600); ``None`` keeps vectors until evicted.
        clock: a ``() -> float`` seconds source (default ``time.monotonic``); tests pass a fake one.

    Example::

        embedder = CachedEmbedder(resolve_embedder("openai/text-embedding-3-small"), max_entries=5000)
    """

    def __init__(
        self,
        inner: Embedder,
        max_entries: int = 1000,
        ttl: float | None = 3600.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(inner, Embedder):
            raise ConfigurationError(
                f"CachedEmbedder needs an embedder (an object with embed(), model and dimensions), "
                f"got {inner!r}; use resolve_embedder() to build one from a spec or a function"
            )
        require_numpy("the embedding cache")
        self._inner = inner
        self._max_entries = positive_int(max_entries, "max_entries", "CachedEmbedder")
        self._ttl = None if ttl is None else positive_float(ttl, "ttl", "CachedEmbedder")
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._in_flight: dict[str, _InFlight] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = self._expirations = 0

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def dimensions(self) -> int | None:
        return self._inner.dimensions

    @property
    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                expirations=self._expirations,
                size=len(self._entries),
            )

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self._inner!r}, max_entries={self._max_entries}, ttl={self._ttl})"

    def clear(self) -> None:
        """Drop every cached vector and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._evictions = self._expirations = 0

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty_matrix(self.dimensions)
        loop = asyncio.get_running_loop()
        found: dict[str, NDArray[np.float32]] = {}
        waiting: dict[str, asyncio.Future[NDArray[np.float32] | None]] = {}
        fetch: list[str] = []
        with self._lock:
            now = self._clock()
            for text in dict.fromkeys(items):
                vector = self._lookup(text, now)
                if vector is not None:
                    found[text] = vector
                    continue
                flight = self._in_flight.get(text)
                if flight is not None and flight[0] is loop:
                    waiting[text] = flight[1]
                else:
                    fetch.append(text)
            own: dict[str, asyncio.Future[NDArray[np.float32] | None]] = {}
            for text in fetch:
                if text not in self._in_flight:
                    own[text] = loop.create_future()
                    self._in_flight[text] = (loop, own[text])
            self._misses += len(fetch)
            self._hits += len(items) - len(fetch)
        if fetch:
            found.update(await self._fetch(fetch, own))
        for text, future in waiting.items():
            vector = await asyncio.shield(future)
            if vector is None:  # the call fetching it was cancelled: fetch it ourselves
                with self._lock:
                    self._hits -= 1
                    self._misses += 1
                vector = (await self._fetch([text], {}))[text]
            found[text] = vector
        numpy = require_numpy("the embedding cache")
        result: NDArray[np.float32] = numpy.stack([found[text] for text in items])
        return result

    def _lookup(self, text: str, now: float) -> NDArray[np.float32] | None:
        """The cached vector of ``text``, marked as recently used; expired entries are dropped."""
        entry = self._entries.get(text)
        if entry is None:
            return None
        if self._ttl is not None and now - entry.stored_at >= self._ttl:
            del self._entries[text]
            self._expirations += 1
            return None
        self._entries.move_to_end(text)
        return entry.vector

    async def _fetch(
        self,
        texts: list[str],
        own: dict[str, asyncio.Future[NDArray[np.float32] | None]],
    ) -> dict[str, NDArray[np.float32]]:
        """Embed ``texts`` with the inner embedder, store them, and settle the futures in ``own``."""
        try:
            matrix = await self._inner.embed(texts)
            if getattr(matrix, "ndim", None) != 2 or matrix.shape[0] != len(texts):
                raise EmbeddingError(
                    f"embedder {self._inner.model!r} returned shape {getattr(matrix, 'shape', None)} "
                    f"for {len(texts)} texts; expected ({len(texts)}, dimensions)"
                )
        except Exception as exc:
            self._release(own)
            for future in own.values():
                if not future.done():
                    future.set_exception(exc)
                    future.exception()  # marks it retrieved: no warning when nobody waits
            raise
        except BaseException:  # cancelled: the waiters fetch for themselves
            self._release(own)
            for future in own.values():
                if not future.done():
                    future.set_result(None)
            raise
        rows: dict[str, NDArray[np.float32]] = {}
        with self._lock:
            stored_at = self._clock()
            for text, row in zip(texts, matrix, strict=True):
                vector = row.copy()
                vector.flags.writeable = False
                rows[text] = vector
                self._entries[text] = _Entry(vector, stored_at)
                self._entries.move_to_end(text)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
                self._evictions += 1
        self._release(own)
        for text, future in own.items():
            if not future.done():
                future.set_result(rows[text])
        return rows

    def _release(self, own: dict[str, asyncio.Future[NDArray[np.float32] | None]]) -> None:
        """Forget the in-flight marks of ``own`` so later calls look at the cache again."""
        with self._lock:
            for text, future in own.items():
                flight = self._in_flight.get(text)
                if flight is not None and flight[1] is future:
                    del self._in_flight[text]
