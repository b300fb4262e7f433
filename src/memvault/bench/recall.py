"""``memvault bench recall``: how fast a resource's vectors are searched, embedder excluded.

At each size N, all N vectors belong to ONE resource (the worst case for a per-resource
layout: nothing is filtered away), and the same ``queries`` query vectors are searched for
their top 10 by every system:

- **floor**: numpy brute force over the same float32 matrix, ``matrix @ q`` (BLAS sgemv) then
  ``argpartition`` and a sort of the 10: the least work an exact search can do, done the usual
  way.
- **floor_einsum**: the same with ``np.einsum("ij,j->i", matrix, q)``, the kernel
  ``ExactIndex`` uses (one core, no BLAS threads; faster here, see
  :func:`memvault.vectors.partition.similarities`): the floor for memvault's own kernel.
- **exact**: :class:`memvault.vectors.ExactIndex` through its async ``search``.
- **ann**: :class:`memvault.vectors.AnnIndex` (a usearch HNSW graph) through its async
  ``search``; its recall@10 is measured against the floor's exact top 10.
- **pgvector** (only with ``pgvector=URL``, ``--pgvector`` on the command line):
  :class:`memvault.vectors.PgVectorIndex`, a PostgreSQL table with pgvector's HNSW index, in a
  fresh schema of that server (dropped after each size), through its async ``search``; its
  recall@10 is measured against the floor's exact top 10. It is built as a user loading many
  vectors would (:meth:`~memvault.vectors.PgVectorIndex.bulk_load`): the vectors go into the
  bare table, then the HNSW index is built once (``maintenance_work_mem`` 4GB, 2 parallel
  workers) and the table analysed; ``pgvector_load_s`` and ``pgvector_index_s`` split its build
  time. The default run does not include it.
- **peer**: LangGraph's ``InMemoryStore`` semantic search (``asearch(namespace, query=...,
  limit=10)``), given the same vectors by an embeddings object that looks them up by text, so
  no model runs: the lookup is a dict access. Per the LangChain ``Embeddings`` contract the
  vectors are ``list[float]``. The peer rebuilds a numpy matrix from those lists on every
  search, so it is slow and memory-hungry: it runs until ``peer_budget_s`` of searching (at
  least 5 queries), and is skipped, with the reason in the result, at sizes whose measured
  memory per vector extrapolates beyond ``peer_memory_limit`` bytes.

Also, at each size: thread-filtered searches (a thread holding about 10% of the resource, and a
conversation-sized thread of about 450 vectors) for exact and ann (and pgvector), with the
approximate indexes' filtered recall; and each index's build time (upserts in batches of
100,000), reported apart from search.

**The vectors** are synthetic, 384-d, float32, normalised, from a seeded distribution
calibrated on real all-MiniLM-L6-v2 embeddings of conversation turns (LoCoMo development
half, 2,760 turns): a shared mean direction, 200 topic centres, and per-vector noise whose
covariance spectrum decays as a power law (eigenvalue ``i`` proportional to ``(1 + i)^-0.8``) in
a random orthonormal basis. At 2,760 vectors it gives the real embeddings' statistics (real |
synthetic): mean pairwise cosine 0.205 | 0.202, nearest-neighbour cosine 0.677 | 0.678, 10th
neighbour 0.550 | 0.560, norm of the mean vector 0.453 | 0.449, participation ratio of the
spectrum 70.8 | 66.4. Queries come from the same distribution (real questions sit a little
further from the turns: nearest 0.557).

Systems take turns in blocks of queries, rotating which goes first, so a noisy neighbour on
the machine slows them alike. :func:`run` returns a JSON-ready dict; ``targets_met`` is
computed from the measurements, ``None`` where a target's size was not run.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import math
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memvault.bench.schemas import drop_schema, fresh_name
from memvault.errors import MissingExtraError
from memvault.vectors import AnnIndex, ExactIndex, VectorIndex, VectorItem

if TYPE_CHECKING:
    from langgraph.store.memory import InMemoryStore

    from memvault.vectors.pgvector import PgVectorIndex

DIMENSIONS = 384
TOP_K = 10
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
RESOURCE = "bench-user"
BIG_THREAD = "t-big"
BIG_THREAD_SHARE = 0.10
SMALL_THREAD_ROWS = 500  # rows per ordinary thread, before the big thread takes its share
BUILD_BATCH = 100_000
BLOCK = 25  # queries each system runs before the next takes its turn
WARMUP = 3
PEER_MIN_QUERIES = 5
PEER_BUDGET_S = 30.0
PEER_MEMORY_LIMIT = 6 * 2**30

#: ``name: (comparison, bound, size)``: each target the issue sets, checked at that size
#: (``None``: at every size run).
TARGETS: dict[str, tuple[str, float, int | None]] = {
    "exact_p50_ms_at_100k": ("<=", 10.0, 100_000),
    "ann_p50_ms_at_1m": ("<=", 10.0, 1_000_000),
    "ann_recall_at_10_every_size": (">=", 0.95, None),
    "exact_p50_over_peer_every_size": ("<", 1.0, None),
    "ann_p50_over_peer_every_size": ("<", 1.0, None),
}
PGVECTOR_TARGET = ("pgvector_recall_at_10_every_size", ">=", 0.95)
"""Checked only when the run includes pgvector."""

Progress = Callable[[str], None]
Matrix = NDArray[np.float32]


# the data


@dataclass(frozen=True)
class Distribution:
    """The calibrated synthetic embedding distribution (see the module docstring)."""

    basis: NDArray[np.float64]
    scales: NDArray[np.float64]
    mean: NDArray[np.float64]
    centres: NDArray[np.float64]
    mean_weight: float = 0.7

    @classmethod
    def make(cls, seed: int, dimensions: int = DIMENSIONS, topics: int = 200,
             decay: float = 0.8) -> Distribution:
        rng = np.random.default_rng(seed)
        basis, _ = np.linalg.qr(rng.standard_normal((dimensions, dimensions)))
        scales: NDArray[np.float64] = (1.0 + np.arange(dimensions, dtype=np.float64)) ** (-decay / 2)
        scales /= math.sqrt(float((scales**2).sum()))
        mean = rng.standard_normal(dimensions)
        mean /= np.linalg.norm(mean)
        centres = (rng.standard_normal((topics, dimensions)) * scales) @ basis
        return cls(basis=basis, scales=scales, mean=mean, centres=centres)

    def draw(self, count: int, rng: np.random.Generator, chunk: int = 65_536) -> Matrix:
        """``count`` normalised float32 vectors (made in chunks: no full-size float64 copy)."""
        out = np.empty((count, self.basis.shape[0]), dtype=np.float32)
        for start in range(0, count, chunk):
            size = min(chunk, count - start)
            topic = rng.integers(0, self.centres.shape[0], size)
            noise = (rng.standard_normal((size, self.basis.shape[0])) * self.scales) @ self.basis
            rows = self.mean_weight * self.mean + self.centres[topic] + noise
            out[start : start + size] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out


def make_data(size: int, queries: int, seed: int = 1) -> tuple[Matrix, Matrix, list[str]]:
    """The corpus, the queries and each corpus row's thread, deterministic for a seed."""
    if size < 1 or queries < 1:
        raise ValueError("size and queries must be at least 1")
    distribution = Distribution.make(seed)
    corpus = distribution.draw(size, np.random.default_rng([seed, size, 1]))
    asked = distribution.draw(queries, np.random.default_rng([seed, size, 2]))
    big = np.random.default_rng([seed, size, 3]).random(size) < BIG_THREAD_SHARE
    threads = [BIG_THREAD if big[i] else f"t-{i // SMALL_THREAD_ROWS:05d}" for i in range(size)]
    return corpus, asked, threads


def vector_id(thread: str, row: int) -> str:
    return f"msg:{RESOURCE}:{thread}:{row}"


# the systems


def floor_search(matrix: Matrix, query: NDArray[np.float32], top_k: int = TOP_K,
                 einsum: bool = False) -> list[int]:
    """numpy brute force: the exact floor. Rows of the ``top_k`` best scores, best first;
    ``matrix @ query`` (BLAS), or ``einsum`` when asked."""
    scores: NDArray[np.float32] = (np.einsum("ij,j->i", matrix, query) if einsum
                                   else matrix @ query)
    if scores.shape[0] > top_k:
        best = np.argpartition(scores, scores.shape[0] - top_k)[-top_k:]
    else:
        best = np.arange(scores.shape[0])
    ranked: list[int] = best[np.argsort(-scores[best], kind="stable")].tolist()
    return ranked


async def _build_index(index: VectorIndex, corpus: Matrix, threads: list[str],
                       progress: Progress | None, label: str) -> float:
    spent = 0.0
    for start in range(0, corpus.shape[0], BUILD_BATCH):
        stop = min(start + BUILD_BATCH, corpus.shape[0])
        items = [VectorItem(vector_id(threads[i], i), corpus[i], RESOURCE, threads[i], f"m{i}")
                 for i in range(start, stop)]
        began = time.perf_counter()
        await index.upsert(items)
        spent += time.perf_counter() - began
        if progress:
            progress(f"{label}: {stop:,}/{corpus.shape[0]:,} vectors")
    return spent


class _Lookup:
    """A LangChain ``Embeddings`` that looks texts up in a dict (``"v123"`` is row 123)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[text] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def _peer_store(vectors: dict[str, list[float]]) -> InMemoryStore:
    try:
        from langchain_core.embeddings import Embeddings
        from langgraph.store.memory import InMemoryStore
    except ImportError:
        raise MissingExtraError("the recall benchmark's peer", "bench", "langgraph") from None

    class Lookup(_Lookup, Embeddings):
        pass

    return InMemoryStore(index={"dims": DIMENSIONS, "embed": Lookup(vectors), "fields": ["text"]})


async def _fill_peer(store: InMemoryStore, rows: range, threads: list[str]) -> None:
    from langgraph.store.base import PutOp

    for start in range(rows.start, rows.stop, 10_000):
        stop = min(start + 10_000, rows.stop)
        await store.abatch([PutOp(("memories", RESOURCE, threads[i]), vector_id(threads[i], i),
                                  {"text": f"v{i}"}) for i in range(start, stop)])


async def _peer_bytes_per_vector(corpus: Matrix, threads: list[str]) -> float:
    """Measured (tracemalloc): the memory one stored vector costs the peer, from 2,000."""
    sample = min(2000, int(corpus.shape[0]))
    tracemalloc.start()
    try:
        vectors = {f"v{i}": corpus[i].tolist() for i in range(sample)}
        store = _peer_store(vectors)
        await _fill_peer(store, range(sample), threads)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del store, vectors
    return float(used) / sample


# measuring


@dataclass
class _System:
    name: str
    search: Callable[[int], Awaitable[list[str]]]
    budget_s: float | None = None
    spent: float = 0.0

    def __post_init__(self) -> None:
        self.latencies: list[float] = []
        self.found: dict[int, list[str]] = {}


async def _measure(systems: list[_System], queries: int) -> None:
    for system in systems:
        for q in range(min(WARMUP, queries)):
            await system.search(q)
    for block, first in enumerate(range(0, queries, BLOCK)):
        turn = block % len(systems)
        for system in systems[turn:] + systems[:turn]:
            for q in range(first, min(first + BLOCK, queries)):
                if (system.budget_s is not None and system.spent >= system.budget_s
                        and len(system.latencies) >= PEER_MIN_QUERIES):
                    break
                began = time.perf_counter()
                found = await system.search(q)
                elapsed = time.perf_counter() - began
                system.spent += elapsed
                system.latencies.append(elapsed)
                system.found[q] = found


def _percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(fraction * len(ordered)) - 1)])


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 4)


def _recall(found: dict[int, list[str]], truth: dict[int, list[str]]) -> float:
    shares = [len(set(found[q]) & set(truth[q])) / len(truth[q]) for q in found if truth[q]]
    return round(float(np.mean(shares)), 4) if shares else 1.0


def _figures(system: _System, truth: dict[int, list[str]] | None) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "p50_ms": _ms(_percentile(system.latencies, 0.5)),
        "p99_ms": _ms(_percentile(system.latencies, 0.99)),
        "mean_ms": _ms(sum(system.latencies) / len(system.latencies)),
        "queries": len(system.latencies),
    }
    if truth is not None:
        figures["recall_at_10"] = _recall(system.found, truth)
    return figures


def _hit_ids(hits: Sequence[Any]) -> list[str]:
    return [hit.id for hit in hits]


@dataclass(frozen=True)
class PgVectorOptions:
    """Where and how to run the pgvector system: a ``postgresql://`` URL and the index's
    ``ef_search``, ``m`` and ``ef_construction``."""

    url: str
    ef_search: int | Literal["auto"] = "auto"
    m: int = 16
    ef_construction: int = 64
    ef_sweep: tuple[int, ...] = ()
    """More ``ef_search`` values to measure (unfiltered p50 and recall@10) on the same index."""


async def _one_size(size: int, queries: int, seed: int, peer_budget_s: float,
                    peer_memory_limit: int, progress: Progress | None,
                    pgvector: PgVectorOptions | None = None) -> dict[str, Any]:
    if pgvector is None:
        return await _measure_size(size, queries, seed, peer_budget_s, peer_memory_limit,
                                   progress, None)
    from memvault.vectors import PgVectorIndex

    schema = fresh_name(f"memvault_bench_{size}")
    index = PgVectorIndex(pgvector.url, DIMENSIONS, schema=schema, ef_search=pgvector.ef_search,
                          m=pgvector.m, ef_construction=pgvector.ef_construction)
    try:
        await index.open()
        return await _measure_size(size, queries, seed, peer_budget_s, peer_memory_limit,
                                   progress, index, pgvector.ef_sweep)
    finally:
        await index.drop_table()
        await index.close()
        await drop_schema(pgvector.url, schema)


async def _ef_sweep(pg: PgVectorIndex, sweep: Sequence[int], asked: Matrix,
                    truth: dict[int, list[str]], queries: int) -> list[dict[str, Any]]:
    """p50/p99 and recall@10 (against ``truth``) of unfiltered searches at each ``ef_search``."""
    configured = pg.ef_search
    rows = []
    try:
        for ef in sweep:
            pg.ef_search = ef

            async def search(q: int) -> list[str]:
                return _hit_ids(await pg.search(asked[q], resource_id=RESOURCE, top_k=TOP_K))

            system = _System("pgvector", search)
            await _measure([system], queries)
            rows.append({"ef_search": ef, **_figures(system, truth)})
    finally:
        pg.ef_search = configured
    return rows


async def _measure_size(size: int, queries: int, seed: int, peer_budget_s: float,
                        peer_memory_limit: int, progress: Progress | None,
                        pg: PgVectorIndex | None, sweep: Sequence[int] = ()) -> dict[str, Any]:
    def say(text: str) -> None:
        if progress:
            progress(f"{size:,}: {text}")

    say("making vectors")
    corpus, asked, threads = make_data(size, queries, seed)
    ids = [vector_id(threads[i], i) for i in range(size)]

    say("building exact")
    exact = ExactIndex(DIMENSIONS)
    build = {"exact_s": round(await _build_index(exact, corpus, threads, say, "exact"), 3)}
    ann = AnnIndex(DIMENSIONS)
    say("building ann")
    build["ann_s"] = round(await _build_index(ann, corpus, threads, say, "ann"), 3)
    if pg is not None:
        say("building pgvector (load, then one HNSW build)")
        began = time.perf_counter()
        async with pg.bulk_load(maintenance_work_mem="4GB", parallel_workers=2):
            build["pgvector_load_s"] = round(await _build_index(pg, corpus, threads, say, "pgvector"), 3)
            indexed = time.perf_counter()
        build["pgvector_index_s"] = round(time.perf_counter() - indexed, 3)
        build["pgvector_s"] = round(time.perf_counter() - began, 3)

    say("measuring the peer's memory")
    per_vector = await _peer_bytes_per_vector(corpus, threads)
    peer_estimate = per_vector * size
    peer: InMemoryStore | None = None
    peer_note: dict[str, Any] = {"bytes_per_vector_measured": round(per_vector),
                                 "estimated_bytes": round(peer_estimate)}
    if peer_estimate > peer_memory_limit:
        peer_note["skipped"] = (
            f"InMemoryStore would need about {peer_estimate / 2**30:.1f} GiB here (measured "
            f"{per_vector / 1024:.1f} KiB per vector: lists of Python floats), over the "
            f"benchmark's limit of {peer_memory_limit / 2**30:.1f} GiB on a shared "
            f"{_memory_gib()} GiB machine"
        )
    else:
        say("building the peer")
        began = time.perf_counter()
        lookup = {f"v{i}": corpus[i].tolist() for i in range(size)}
        lookup.update({f"q{q}": asked[q].tolist() for q in range(queries)})
        peer = _peer_store(lookup)
        await _fill_peer(peer, range(size), threads)
        build["peer_s"] = round(time.perf_counter() - began, 3)

    async def floor(q: int) -> list[str]:
        return [ids[row] for row in floor_search(corpus, asked[q])]

    async def floor_einsum(q: int) -> list[str]:
        return [ids[row] for row in floor_search(corpus, asked[q], einsum=True)]

    async def exact_search(q: int) -> list[str]:
        return _hit_ids(await exact.search(asked[q], resource_id=RESOURCE, top_k=TOP_K))

    async def ann_search(q: int) -> list[str]:
        return _hit_ids(await ann.search(asked[q], resource_id=RESOURCE, top_k=TOP_K))

    systems = [_System("floor", floor), _System("floor_einsum", floor_einsum),
               _System("exact", exact_search), _System("ann", ann_search)]
    if pg is not None:
        pg_index = pg

        async def pgvector_search(q: int) -> list[str]:
            return _hit_ids(await pg_index.search(asked[q], resource_id=RESOURCE, top_k=TOP_K))

        systems.append(_System("pgvector", pgvector_search))
    if peer is not None:
        store = peer

        async def peer_search(q: int) -> list[str]:
            found = await store.asearch(("memories", RESOURCE), query=f"q{q}", limit=TOP_K)
            return [item.key for item in found]

        systems.append(_System("peer", peer_search, budget_s=peer_budget_s))
    say("searching")
    await _measure(systems, queries)
    truth = systems[0].found
    figures = {s.name: _figures(s, None if s.name == "floor" else truth) for s in systems}
    if peer is None:
        figures["peer"] = {"p50_ms": None, "p99_ms": None, "queries": 0}
    figures["peer"].update(peer_note)
    if peer is not None:
        figures["peer"]["budget_s"] = peer_budget_s
    del peer, systems
    gc.collect()

    say("filtered searches")
    filtered: dict[str, Any] = {}
    small_thread = threads[0] if threads[0] != BIG_THREAD else "t-00000"
    for label, thread in (("thread_10pct", BIG_THREAD), ("thread_conversation", small_thread)):
        def searcher(index: VectorIndex, thread: str = thread) -> Callable[[int], Awaitable[list[str]]]:
            async def search(q: int) -> list[str]:
                return _hit_ids(await index.search(asked[q], resource_id=RESOURCE,
                                                   thread_id=thread, top_k=TOP_K))
            return search

        pair = [_System("exact", searcher(exact)), _System("ann", searcher(ann))]
        if pg is not None:
            pair.append(_System("pgvector", searcher(pg)))
        await _measure(pair, queries)
        filtered[label] = {
            "thread_rows": threads.count(thread),
            "exact": _figures(pair[0], None),
            "ann": _figures(pair[1], pair[0].found),
        }
        if pg is not None:
            filtered[label]["pgvector"] = _figures(pair[2], pair[0].found)
    extra: dict[str, Any] = {}
    if pg is not None:
        extra["pgvector"] = {"exact_fallbacks": pg.exact_fallbacks, **await pg.info()}
        if pg.ef_search == "auto":
            from memvault.vectors.pgvector import auto_ef_search

            extra["pgvector"]["auto_ef_search"] = auto_ef_search(extra["pgvector"]["rows"], TOP_K)
        if sweep:
            say("pgvector ef_search sweep")
            extra["pgvector_ef_sweep"] = await _ef_sweep(pg, sweep, asked, truth, queries)
    return {
        "size": size,
        "build": build,
        "systems": figures,
        "filtered": filtered,
        "ann_graph": ann.graphs().get(RESOURCE),
        "ann_expansion_search": ann.expansion_for(size),
        **extra,
    }


def _memory_gib() -> int:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    except (ValueError, OSError):
        return 0


def _load() -> float | None:
    """The 1-minute load average: other work on a shared machine skews every figure."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _blas() -> list[dict[str, Any]] | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return [{key: info.get(key) for key in ("internal_api", "version", "architecture",
                                            "num_threads")}
            for info in threadpool_info() if info.get("user_api") == "blas"]


def _compare(op: str, value: float, bound: float) -> bool:
    if op == "<=":
        return value <= bound
    if op == ">=":
        return value >= bound
    return value < bound


def _met(results: list[dict[str, Any]]) -> tuple[dict[str, bool | None], dict[str, str]]:
    """Each target checked against the measurements (``None``: not measured), and notes on
    the sizes a target could not be checked at."""
    by_size = {r["size"]: r["systems"] for r in results}
    met: dict[str, bool | None] = {}
    notes: dict[str, str] = {}
    for name, (op, bound, size) in TARGETS.items():
        system = name.split("_")[0]
        if size is not None:
            systems = by_size.get(size)
            met[name] = None if systems is None else _compare(op, systems[system]["p50_ms"], bound)
            if systems is None:
                notes[name] = f"not measured: the run did not include {size:,}"
        elif system == "ann" and "recall" in name:
            met[name] = all(_compare(op, s["ann"]["recall_at_10"], bound) for s in by_size.values())
        else:
            measured = {n: s for n, s in by_size.items() if s["peer"]["p50_ms"] is not None}
            met[name] = (all(_compare(op, s[system]["p50_ms"] / s["peer"]["p50_ms"], bound)
                             for s in measured.values()) if measured else None)
            missing = sorted(set(by_size) - set(measured))
            if missing:
                notes[name] = ("checked only where the peer ran; not at "
                               + ", ".join(f"{n:,}" for n in missing)
                               + " (see results[].systems.peer.skipped)")
    return met, notes


def run(
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    queries: int = 200,
    seed: int = 1,
    peer_budget_s: float = PEER_BUDGET_S,
    peer_memory_limit: int = PEER_MEMORY_LIMIT,
    progress: Progress | None = None,
    pgvector: PgVectorOptions | None = None,
) -> dict[str, Any]:
    """Run the benchmark at each size; returns the result as a JSON-ready dict. With
    ``pgvector``, the pgvector system runs too (see the module docstring)."""
    if not sizes or any(size < 1 for size in sizes):
        raise ValueError("sizes must be positive integers")
    if queries < 1:
        raise ValueError("queries must be at least 1")
    began, load_before = time.perf_counter(), _load()
    results = [asyncio.run(_one_size(size, queries, seed, peer_budget_s, peer_memory_limit,
                                     progress, pgvector)) for size in sizes]
    sample = AnnIndex(DIMENSIONS)
    met, notes = _met(results)
    targets = {name: f"{op} {bound:g}" + (f" at {size:,}" if size else " at every size")
               for name, (op, bound, size) in TARGETS.items()}
    if pgvector is not None:
        name, op, bound = PGVECTOR_TARGET
        targets[name] = f"{op} {bound:g} at every size"
        met[name] = all(_compare(op, r["systems"]["pgvector"]["recall_at_10"], bound) for r in results)
    result: dict[str, Any] = {
        "benchmark": "recall",
        "config": {
            "sizes": list(sizes),
            "queries": queries,
            "top_k": TOP_K,
            "dimensions": DIMENSIONS,
            "seed": seed,
            "resource": "all vectors of a size belong to one resource",
            "data": "synthetic normalised float32, calibrated on all-MiniLM-L6-v2 embeddings of "
                    "conversation turns (see memvault.bench.recall)",
            "timed": "one awaited search(top_k=10) per query; the embedder is excluded (query "
                     "vectors are precomputed; the peer's lookup is a dict access)",
            "order": f"systems take turns in blocks of {BLOCK} queries, rotating which goes "
                     f"first, after {WARMUP} untimed warm-up queries each",
            "ann": {"engine": "usearch HNSW", "graph_min_rows": sample.graph_min_rows,
                    "connectivity": sample.connectivity, "expansion_add": sample.expansion_add,
                    "expansion_search": sample.expansion_search,
                    "expansion_search_growth": "x (1 + 2 log10(entries / 100,000)) above 100,000",
                    "quantization": sample.quantization, "oversample": sample.oversample,
                    "min_fetch": sample.min_fetch, "rescored": "exact float32"},
            "peer": {"system": "langgraph.store.memory.InMemoryStore.asearch",
                     "budget_s": peer_budget_s, "min_queries": PEER_MIN_QUERIES,
                     "memory_limit_bytes": peer_memory_limit},
            "machine": {
                "cpus": os.cpu_count(),
                "memory_gib": _memory_gib(),
                "platform": platform.platform(),
                "python": sys.version.split()[0],
                "numpy": np.__version__,
                "blas": _blas(),
                "usearch": _version("usearch"),
                "langgraph": _version("langgraph"),
                "memvault": _version("memvault"),
                "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                "load_average_before": load_before,
                "load_average_after": _load(),
            },
        },
        "results": results,
        "targets": targets,
        "targets_met": met,
        "targets_notes": notes,
        "elapsed_s": round(time.perf_counter() - began, 1),
    }
    if pgvector is not None:
        from memvault.stores.postgres.store import postgres_options

        result["config"]["pgvector"] = {
            "system": "memvault.vectors.PgVectorIndex (PostgreSQL + pgvector HNSW, cosine)",
            "server": postgres_options(pgvector.url)[4],
            "server_version": results[0]["pgvector"]["server_version"],
            "pgvector_version": results[0]["pgvector"]["pgvector_version"],
            "m": pgvector.m, "ef_construction": pgvector.ef_construction,
            "ef_search": pgvector.ef_search, "iterative_scan": "relaxed_order, re-sorted exactly",
            "build": f"bulk_load: upserts of {BUILD_BATCH:,} (COPY into a temporary table, then "
                     "INSERT ... ON CONFLICT) into the table without its HNSW index, then one "
                     "CREATE INDEX (maintenance_work_mem 4GB, 2 parallel workers), then ANALYZE",
            "ef_sweep": list(pgvector.ef_sweep),
            "psycopg": _version("psycopg"),
        }
    return result


def plot(result: dict[str, Any], path: Path) -> None:
    """Draw p50 (solid) and p99 (dotted) latency against size, log-log, to a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtraError("plotting the recall benchmark", "bench", "matplotlib") from None
    results = result["results"]
    figure, axes = plt.subplots(figsize=(7.5, 5.6), dpi=120)
    styles = {"floor": "#555555", "floor_einsum": "#aaaaaa", "exact": "#1f77b4",
              "ann": "#2ca02c", "peer": "#d62728", "pgvector": "#9467bd"}
    labels = {"floor": "numpy floor (matrix @ q, BLAS)", "floor_einsum": "numpy floor (einsum)",
              "exact": "memvault ExactIndex",
              "ann": "memvault AnnIndex (usearch)", "peer": "LangGraph InMemoryStore",
              "pgvector": "memvault PgVectorIndex (pgvector HNSW)"}
    for name, colour in styles.items():
        points = [(r["size"], r["systems"][name]) for r in results
                  if r["systems"].get(name, {}).get("p50_ms") is not None]
        if not points:
            continue
        xs = [size for size, _ in points]
        skipped = [r["size"] for r in results if r["systems"].get(name, {}).get("skipped")]
        label = labels[name] + " p50"
        if skipped:
            label += " (not run at " + ", ".join(f"{size:,}" for size in skipped) + ": memory)"
        axes.plot(xs, [s["p50_ms"] for _, s in points], "o-", color=colour, label=label)
        axes.plot(xs, [s["p99_ms"] for _, s in points], ":", color=colour, alpha=0.7)
    axes.axhline(10, color="#999999", linewidth=0.8, linestyle="--")
    axes.text(results[0]["size"], 11, "10 ms target", color="#777777", fontsize=8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("vectors in the resource (384-d)")
    axes.set_ylabel("search latency, top 10 (ms)")
    axes.set_title("memvault bench recall: p50 (solid), p99 (dotted)")
    axes.grid(True, which="both", alpha=0.25)
    axes.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2,
                frameon=False)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def render(result: dict[str, Any], console: Any) -> None:
    """Print the result as tables on a rich ``Console``."""
    from rich.table import Table

    config = result["config"]
    console.print(
        f"[bold]memvault bench recall[/]: top {config['top_k']} of {config['dimensions']}-d "
        f"vectors, all in one resource; {config['queries']} queries per size; "
        f"{config['machine']['cpus']} CPUs"
    )

    def number(value: float | None, digits: int = 3) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    table = Table(title="search(top_k=10) latency, ms")
    for column in ("vectors", "system", "p50", "p99", "queries", "recall@10", "build s"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for row in result["results"]:
        names = ("floor", "floor_einsum", "exact", "ann", "peer")
        for name in names + (("pgvector",) if "pgvector" in row["systems"] else ()):
            figures = row["systems"][name]
            build = row["build"].get(f"{name}_s")
            table.add_row(f"{row['size']:,}", name, number(figures.get("p50_ms")),
                          number(figures.get("p99_ms")), str(figures.get("queries", 0)),
                          number(figures.get("recall_at_10"), 4), number(build, 1))
        skipped = row["systems"]["peer"].get("skipped")
        if skipped:
            table.add_row("", "", f"[dim]peer skipped: {skipped}[/]", "", "", "", "")
    console.print(table)

    filtered = Table(title="thread-filtered search latency, ms")
    for column in ("vectors", "thread", "rows", "exact p50", "exact p99", "ann p50", "ann p99",
                   "ann recall@10"):
        filtered.add_column(column, justify="left" if column == "thread" else "right")
    short = {"thread_10pct": "10%", "thread_conversation": "conv."}
    for row in result["results"]:
        for label, figures in row["filtered"].items():
            filtered.add_row(
                f"{row['size']:,}", short.get(label, label), f"{figures['thread_rows']:,}",
                number(figures["exact"]["p50_ms"]), number(figures["exact"]["p99_ms"]),
                number(figures["ann"]["p50_ms"]), number(figures["ann"]["p99_ms"]),
                number(figures["ann"]["recall_at_10"], 4),
            )
    console.print(filtered)
    for row in result["results"]:
        for label, figures in row["filtered"].items():
            if "pgvector" in figures:
                pg = figures["pgvector"]
                console.print(f"pgvector, {row['size']:,} vectors, thread {short.get(label, label)}: "
                              f"p50 {number(pg['p50_ms'])} ms, p99 {number(pg['p99_ms'])} ms, "
                              f"recall@10 {number(pg['recall_at_10'], 4)}")
    for name, target in result["targets"].items():
        met = result["targets_met"][name]
        mark = "[dim]not measured[/]" if met is None else "[green]yes[/]" if met else "[red]no[/]"
        note = result["targets_notes"].get(name)
        console.print(f"{mark} {name}: {target}" + (f" [dim]({note})[/]" if note else ""))
