"""Where the SQLite pool search's time goes, phase by phase (issue 14, goal 1).

Times :func:`memvault.stores.sqlite.search.search_pool` on a file filled by ``memvault bench
turn``'s ``_fill`` (one resource ``r0``, 1,000 threads), straight on a connection (no worker hop),
with each phase wrapped by a timer: deciding the common words (``_common``), grouping the
matches by class (``_classes``), the whole search with its class reads (``_search``), and the
neighbourhood read (``rows_near``). Also times what the classes would cost as counts only (one
``count(*)`` per kept group: what the inverse document frequencies need), to size a search that
does not materialise every match. Prints JSON: medians and means in milliseconds.

    python scripts/profile_search_phases.py --fill 1000000 --file /tmp/f1m.db   # about 2.5 min
    python scripts/profile_search_phases.py --file /tmp/f1m.db --seed 1
    python scripts/profile_search_phases.py --file /tmp/f1m.db --seed 1 --mmap 2147418112  # mapped

``--seed`` seeds the query generator (the bench's text model); seed 1 draws the same made-up
vocabulary as the fill (harder queries: more of their words are in the file), other seeds
draw easier ones.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any

from memvault.bench.turn import ZipfText, _fill
from memvault.memory import Memory
from memvault.rules.words import fts5_match, query_groups
from memvault.stores.sqlite import search as S

PHASES = ("_common", "_classes", "_search", "rows_near")


async def fill(path: str, messages: int) -> None:
    memory = await Memory.open(f"sqlite:///{path}")
    try:
        await _fill(memory, messages, 1, 1000, ZipfText(random.Random(1)))
        await memory.search_messages(resource_id="r0", query="tea")  # indexes what is pending
    finally:
        await memory.close()


def timed(spent: dict[str, list[float]], name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            spent[name][-1] += time.perf_counter() - began
    return run


def summary(seconds: list[float]) -> dict[str, float]:
    return {"p50_ms": round(1000 * statistics.median(seconds), 2),
            "mean_ms": round(1000 * statistics.fmean(seconds), 2)}


def profile(path: str, seed: int, queries: int, mmap: int = 0) -> dict[str, Any]:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA mmap_size = {int(mmap)}")  # the store's searches map MMAP_BYTES
    text = ZipfText(random.Random(seed))
    asked = [query_groups(text(30, 120)) for _ in range(queries)]
    counts = S.WordCounts()
    found = []
    for groups in asked:  # warms the page cache and the word counts
        S.search_pool(conn, "r0", groups, None, 100, 5, counts)
        found.append(S._found(conn, "r0", groups, None, 100, counts))
    spent: dict[str, list[float]] = {name: [] for name in PHASES}
    for name in PHASES:
        setattr(S, name, timed(spent, name, getattr(S, name)))
    total, only_counts = [], []
    for groups, one in zip(asked, found, strict=True):
        for series in spent.values():
            series.append(0.0)
        began = time.perf_counter()
        S.search_pool(conn, "r0", groups, None, 100, 5, counts)
        total.append(time.perf_counter() - began)
        began = time.perf_counter()
        for group in one.kept:
            conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?",
                         ("body : " + (fts5_match([list(group)]) or ""),)).fetchone()
        only_counts.append(time.perf_counter() - began)
    matches = [sum(one.classes.sizes.values()) for one in found]
    reads = [s - c - k for s, c, k in zip(spent["_search"], spent["_classes"], spent["_common"], strict=True)]
    return {"file": path, "seed": seed, "queries": queries, "mmap_size": mmap, "search_pool": summary(total),
            **{name.strip("_"): summary(series) for name, series in spent.items()},
            "class_reads": summary(reads), "counts_only_instead_of_classes": summary(only_counts),
            "matches_per_query": {"p50": statistics.median(matches),
                                  "mean": round(statistics.fmean(matches))}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--fill", type=int, default=0, help="fill the file with this many messages first")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--mmap", type=int, default=0,
                        help="PRAGMA mmap_size of the connection (the store's searches use MMAP_BYTES)")
    args = parser.parse_args()
    if args.fill:
        asyncio.run(fill(args.file, args.fill))
    print(json.dumps(profile(args.file, args.seed, args.queries, args.mmap), indent=1))


if __name__ == "__main__":
    main()
