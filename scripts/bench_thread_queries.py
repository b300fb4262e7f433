"""Thread and state query latency on a SQLite file (prints JSON): one resource with N threads
(titles and metadata varied) beside another resource as large; the median of R runs of each
call, in milliseconds. ``python scripts/bench_thread_queries.py [N] [R]`` (defaults 20000, 25).

Every call reads an index led by the resource (the plan tests check it), so a filter costs a
walk over the resource's own threads, and an offset one over the skipped ones."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from memvault import Memory, Thread
from memvault.stores.capabilities import require_export


async def _fill(memory: Memory, resource_id: str, count: int) -> None:
    store = require_export(memory.store)
    for i in range(count):
        title = f"Trip {i} to Paris" if i % 10 == 0 else f"Chat {i}"
        await store.restore_thread(Thread(resource_id=resource_id, id=f"t{i:06d}", title=title,
                                          metadata={"project": f"p{i % 50}"}))
    for i in range(200):
        await memory.set_state({"step": i}, resource_id=resource_id, key=f"run{i}", workflow_id=f"wf{i % 4}",
                               status="suspended" if i % 5 == 0 else "running")


async def _median(call: Callable[[], Awaitable[Any]], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 3)


async def main(count: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        async with await Memory.open(f"sqlite:///{folder}/bench.db") as memory:
            for resource_id in ("ada", "bob"):
                await _fill(memory, resource_id, count)
            page = await memory.list_threads(resource_id="ada", order_by="created_at", direction="asc",
                                             limit=20)
            calls: dict[str, Callable[[], Awaitable[Any]]] = {
                "list default (20)": lambda: memory.list_threads(resource_id="ada"),
                "list created asc, next page by cursor": lambda: memory.list_threads(
                    resource_id="ada", order_by="created_at", direction="asc", cursor=page.next_cursor),
                "list title_contains (1 in 10 match)": lambda: memory.list_threads(
                    resource_id="ada", title_contains="PARIS"),
                "list metadata (1 in 50 match)": lambda: memory.list_threads(
                    resource_id="ada", metadata={"project": "p7"}),
                "list offset = N/2": lambda: memory.list_threads(resource_id="ada", offset=count // 2),
                "count all": lambda: memory.count_threads(resource_id="ada"),
                "count title_contains": lambda: memory.count_threads(
                    resource_id="ada", title_contains="paris"),
                "count metadata": lambda: memory.count_threads(
                    resource_id="ada", metadata={"project": "p7"}),
                "list_suspended (workflow)": lambda: memory.list_suspended(
                    resource_id="ada", workflow_id="wf0"),
                "update_state (merge)": lambda: memory.update_state(
                    resource_id="ada", key="run1", merge={"n": 1}),
            }
            return {"threads_per_resource": count, "resources": 2, "runs": runs,
                    "median_ms": {name: await _median(call, runs) for name, call in calls.items()}}


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    r = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    print(json.dumps(asyncio.run(main(n, r)), indent=2))
