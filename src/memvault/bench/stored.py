"""``memvault bench recall --scale``: vectors at scale in a real SQLite file: open time,
resident memory, first search of a resource (its lazy load), search p50/p95 and recall@10.

For each size N (default 100k; 1M is optional, ``--sizes 100000,1000000``) the bench writes N
stored 384-d vectors (the calibrated synthetic embeddings of :mod:`memvault.bench.recall`) into a
fresh SQLite file, straight with ``executemany`` in large transactions (messages with empty
bodies, their vectors and the recorded model; the full-text index is marked done, so nothing
else works at open), in two layouts:

- **one**: all N vectors in one resource (threads as in ``bench recall``: a big thread of 10%
  and 500-vector threads);
- **spread**: resources of ``spread_rows`` (1,000) vectors each; the queries go round-robin over
  the first ``spread_searched`` (100) resources.

Each layout is measured in a fresh subprocess (so the resident memory is the process's own:
``VmRSS`` from ``/proc/self/status``, after ``gc.collect()``) that opens ``Memory`` with an
embedder whose model matches the stored one, twice, side by side:

- **lazy** (the default now): :class:`~memvault.vectors.stored.StoredIndex`; nothing is read at
  open, a resource is loaded (int8) on its first search, hits are rescored from the store; a
  resource of at least ``coarse_from`` vectors is searched through its lists (the inverted-file
  first stage, built on that first search);
- **scan** (only when asked, ``modes=("lazy", "scan", ...)``): the same index with the first stage
  off (``coarse_from`` past any size): every search scans the resource's int8 rows, as
  ``StoredIndex`` did before it had lists;
- **eager** (what every open did before, and still does with a given index): an
  :class:`~memvault.vectors.ExactIndex` loaded with every stored vector at open.

Reported per layout and mode: ``open_s`` (``Memory.open`` with the embedder), ``rss_open_mb``
(resident growth over the process after imports), ``first_search_ms`` (the first search of a
resource, its load included: one figure for "one", the median over the searched resources for
"spread"), ``rss_loaded_mb`` and ``resident_over_raw`` (resident growth once loaded, over the
loaded vectors' raw float32 bytes), ``p50_ms``/``p95_ms`` of ``search(top_k=10)`` on the loaded
index (the query embedding excluded), and ``recall_at_10`` against exact float32 brute force
over the searched resource's vectors.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memvault.bench.recall import DIMENSIONS, TOP_K, make_data

MODEL = "bench/synthetic-384"
ONE_RESOURCE = "bench-user"
SPREAD_ROWS = 1_000
SPREAD_SEARCHED = 100
WRITE_BATCH = 100_000
WARMUP = 3
TARGETS = {"open_s_at_1m": ("<", 0.5), "resident_over_raw_at_1m": ("<=", 0.5),
           "recall_at_10": (">=", 0.99), "p50_ms_at_1m": ("<=", 10.0)}
"""The issue's targets for the lazy mode, "one" layout (recall at every size)."""

Progress = Callable[[str], None]


# the file


def _layout_keys(size: int, layout: str, threads: list[str]) -> tuple[list[str], list[str]]:
    """Each row's resource and thread."""
    if layout == "one":
        return [ONE_RESOURCE] * size, threads
    resources = [f"r-{i // SPREAD_ROWS:05d}" for i in range(size)]
    return resources, [f"t-{(i % SPREAD_ROWS) // 500}" for i in range(size)]


def build(path: Path, corpus: NDArray[np.float32], resources: Sequence[str],
          threads: Sequence[str]) -> float:
    """Write the store: schema by the store itself, rows by ``executemany``; returns seconds."""
    from memvault.stores.sqlite import SqliteStore

    async def schema() -> None:
        await (await SqliteStore.open(path)).close()

    started = time.perf_counter()
    asyncio.run(schema())
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO embedding_model (model, dimensions) VALUES (?, ?)", (MODEL, DIMENSIONS))
    now = int(time.time() * 1e6)
    pairs = dict.fromkeys(zip(resources, threads, strict=True))
    conn.executemany(
        "INSERT INTO threads (resource_id, id, created_us, updated_us, next_seq) VALUES (?, ?, ?, ?, ?)",
        [(r, t, now, now, 1) for r, t in pairs],
    )
    seq: dict[tuple[str, str], int] = {}
    for start in range(0, len(resources), WRITE_BATCH):
        end = min(start + WRITE_BATCH, len(resources))
        messages = []
        for i in range(start, end):
            key = (resources[i], threads[i])
            seq[key] = seq.get(key, 0) + 1
            messages.append((i + 1, key[0], key[1], f"m{i:07d}", seq[key], "user", "[]", now + i, ""))
        conn.executemany(
            "INSERT INTO messages (rowid, resource_id, thread_id, id, seq, role, parts, created_us, body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", messages)
        conn.executemany("INSERT INTO message_vectors (message_rowid, vector) VALUES (?, ?)",
                         ((i + 1, corpus[i].tobytes()) for i in range(start, end)))
    conn.executemany("UPDATE threads SET next_seq = ? WHERE resource_id = ? AND id = ?",
                     [(n + 1, r, t) for (r, t), n in seq.items()])
    conn.execute("UPDATE messages_fts_progress SET indexed_upto = (SELECT max(rowid) FROM messages)")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - started


# the measured process


def _rss_mb() -> float:
    gc.collect()
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _measure(job: dict[str, Any]) -> dict[str, Any]:
    from memvault import Memory
    from memvault.embeddings import FunctionEmbedder
    from memvault.vectors import ExactIndex

    asked = np.load(job["queries"])
    searched: list[str] = job["searched"]

    def embed(texts: list[str]) -> NDArray[np.float32]:  # the queries are "q<row>"
        rows: NDArray[np.float32] = asked[[int(t[1:]) for t in texts]]
        return rows

    embedder = FunctionEmbedder(embed, model=MODEL, dimensions=DIMENSIONS, run_in_thread=False)
    eager = job["mode"] == "eager"
    scan = job["mode"] == "scan"
    before = _rss_mb()
    started = time.perf_counter()
    memory = await Memory.open(f"sqlite:///{job['path']}", embedder=embedder,
                               vector_index=ExactIndex(DIMENSIONS) if eager else None)
    open_s = time.perf_counter() - started
    rss_open = _rss_mb() - before
    semantic = memory.semantic
    assert semantic is not None
    index: Any = semantic.index if eager else semantic.stored
    if index is None:  # lazy: made once the model is known (it is recorded)
        raise RuntimeError("no vector index after open")
    if scan:
        index.coarse_from = sys.maxsize

    async def search(row: int) -> tuple[float, list[str]]:
        began = time.perf_counter()
        hits = await index.search(asked[row], resource_id=searched[row], top_k=TOP_K)
        return time.perf_counter() - began, [h.message_id for h in hits]

    first = [(await search(row))[0] for row in range(len(dict.fromkeys(searched)))]
    rss_loaded = _rss_mb() - before
    for row in range(min(WARMUP, len(asked))):
        await search(row)
    times, found = [], []
    for row in range(len(asked)):
        took, ids = await search(row)
        times.append(took)
        found.append(ids)
    await memory.close()
    return {"open_s": open_s, "rss_open_mb": rss_open, "first_search_ms": _percentile(first, 0.5) * 1e3,
            "rss_loaded_mb": rss_loaded, "p50_ms": _percentile(times, 0.5) * 1e3,
            "p95_ms": _percentile(times, 0.95) * 1e3, "found": found}


def child() -> None:
    """The subprocess: read a job (JSON) on stdin, print the measurement (JSON)."""
    job = json.loads(sys.stdin.read())
    print(json.dumps(asyncio.run(_measure(job))))


def _in_subprocess(job: dict[str, Any]) -> dict[str, Any]:
    import memvault

    source = str(Path(memvault.__file__).resolve().parent.parent)  # this memvault, not another
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", "from memvault.bench.stored import child; child()"],
                          input=json.dumps(job), capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measured process failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# the run


def _truth(corpus: NDArray[np.float32], rows_of: dict[str, NDArray[np.intp]], asked: NDArray[np.float32],
           searched: Sequence[str]) -> list[set[str]]:
    truth = []
    for row, resource in enumerate(searched):
        rows = rows_of[resource]
        scores = np.einsum("ij,j->i", corpus[rows], asked[row])
        best = rows[np.argsort(-scores, kind="stable")[:TOP_K]]
        truth.append({f"m{i:07d}" for i in best.tolist()})
    return truth


def _layout(size: int, layout: str, queries: int, seed: int, folder: Path, modes: Sequence[str],
            progress: Progress) -> dict[str, Any]:
    corpus, asked, threads = make_data(size, queries, seed)
    resources, thread_of = _layout_keys(size, layout, threads)
    if layout == "one":
        searched = [ONE_RESOURCE] * queries
    else:
        names = list(dict.fromkeys(resources))[:SPREAD_SEARCHED]
        searched = [names[i % len(names)] for i in range(queries)]
    path = folder / f"vectors-{size}-{layout}.db"
    progress(f"{size:,} vectors, {layout}: writing the store")
    build_s = build(path, corpus, resources, thread_of)
    wanted = set(searched)
    positions: dict[str, list[int]] = {}
    for i, resource in enumerate(resources):
        if resource in wanted:
            positions.setdefault(resource, []).append(i)
    rows_of = {r: np.asarray(p, dtype=np.intp) for r, p in positions.items()}
    truth = _truth(corpus, rows_of, asked, searched)
    loaded_rows = sum(len(p) for p in positions.values())
    del corpus
    np.save(folder / "queries.npy", asked)
    out: dict[str, Any] = {"size": size, "layout": layout, "resources": len(set(resources)),
                           "searched_resources": len(wanted), "loaded_vectors": loaded_rows,
                           "raw_float32_mb": loaded_rows * DIMENSIONS * 4 / 2**20,
                           "build_s": build_s, "file_mb": path.stat().st_size / 2**20}
    for mode in modes:
        progress(f"{size:,} vectors, {layout}: measuring {mode}")
        measured = _in_subprocess({"path": str(path), "queries": str(folder / "queries.npy"),
                                   "searched": searched, "mode": mode})
        found = measured.pop("found")
        measured["recall_at_10"] = float(np.mean([len(t & set(f)) / TOP_K
                                                  for t, f in zip(truth, found, strict=True)]))
        measured["resident_over_raw"] = measured["rss_loaded_mb"] / out["raw_float32_mb"]
        out[mode] = {k: round(v, 4) if isinstance(v, float) else v for k, v in measured.items()}
    path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return out


def _met(results: list[dict[str, Any]]) -> dict[str, bool | None]:
    at_1m = [r["lazy"] for r in results if r["size"] >= 1_000_000 and r["layout"] == "one" and "lazy" in r]
    lazy = [r["lazy"] for r in results if "lazy" in r]

    def check(name: str, values: list[float]) -> bool | None:
        op, bound = TARGETS[name]
        if not values:
            return None
        return all(v < bound if op == "<" else v <= bound if op == "<=" else v >= bound for v in values)

    return {"open_s_at_1m": check("open_s_at_1m", [r["open_s"] for r in at_1m]),
            "resident_over_raw_at_1m": check("resident_over_raw_at_1m",
                                             [r["resident_over_raw"] for r in at_1m]),
            "recall_at_10": check("recall_at_10", [r["recall_at_10"] for r in lazy]),
            "p50_ms_at_1m": check("p50_ms_at_1m", [r["p50_ms"] for r in at_1m])}


def run(*, sizes: Sequence[int] = (100_000,), queries: int = 200, seed: int = 1,
        layouts: Sequence[str] = ("one", "spread"), modes: Sequence[str] = ("lazy", "eager"),
        folder: Path | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Measure each size and layout (see the module docstring); returns a JSON-ready dict."""
    report = progress or (lambda _: None)
    results = []
    with tempfile.TemporaryDirectory(prefix="memvault-bench-vectors-", dir=folder) as scratch:
        for size in sizes:
            for layout in layouts:
                results.append(_layout(size, layout, queries, seed, Path(scratch), modes, report))
    return {"bench": "recall --scale", "dimensions": DIMENSIONS, "queries": queries, "seed": seed,
            "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "results": results, "targets": {k: f"{op} {b}" for k, (op, b) in TARGETS.items()},
            "targets_met": _met(results)}


def render(result: dict[str, Any], console: Any) -> None:
    """The result as a table."""
    from rich.table import Table

    table = Table(title=f"vectors at scale ({result['queries']} queries, top {TOP_K})")
    for column in ("size", "layout", "mode", "open s", "RSS at open MB", "first search ms",
                   "RSS loaded MB", "resident/raw", "p50 ms", "p95 ms", "recall@10"):
        table.add_column(column, justify="right")
    for row in result["results"]:
        for mode in ("lazy", "scan", "eager"):
            if mode in row:
                m = row[mode]
                table.add_row(f"{row['size']:,}", row["layout"], mode, f"{m['open_s']:.3f}",
                              f"{m['rss_open_mb']:.0f}", f"{m['first_search_ms']:.1f}",
                              f"{m['rss_loaded_mb']:.0f}", f"{m['resident_over_raw']:.2f}",
                              f"{m['p50_ms']:.2f}", f"{m['p95_ms']:.2f}", f"{m['recall_at_10']:.3f}")
    console.print(table)
    console.print(f"targets met: {result['targets_met']}")
