"""What retention costs (``memvault bench retention``): the reads of a turn with and without a
policy, side by side in one run on one SQLite file, and the sweep's rate.

Every message read looks up the resource's policy (a primary-key probe of the ``retention``
table) and, with a policy, filters on the messages' age. The workload: ``messages`` messages in
20 threads of one resource, then ``queries`` timed calls of each read with no policy, then with a
store-wide policy that expires nothing, then the same with half of the messages expired (not yet
swept); then a sweep erasing them. Medians in milliseconds."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memvault.memory import Memory
from memvault.model import Message
from memvault.options import MemoryOptions

THREADS = 20


async def _median_ms(call: Callable[[], Awaitable[Any]], queries: int) -> float:
    times = []
    for _ in range(queries):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 4)


async def _reads(memory: Memory, queries: int) -> dict[str, float]:
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "get_history": lambda: memory.get_history(thread_id="t3", resource_id="r"),
        "read_turn": lambda: memory.read_turn(thread_id="t3", resource_id="r", last_n=10),
        "search_messages": lambda: memory.search_messages(resource_id="r", query="walrus tea 3"),
    }
    return {name: await _median_ms(call, queries) for name, call in calls.items()}


async def _run(messages: int, queries: int, folder: Path) -> dict[str, Any]:
    old = datetime.now(UTC) - timedelta(days=200)
    per_thread = max(1, messages // THREADS)
    async with await Memory.open(f"sqlite:///{folder}/retention.db",
                                 options=MemoryOptions(sweep_interval=None)) as memory:
        for t in range(THREADS):
            batch = [Message.user(f"note {i} about walrus {t} and tea {i % 7}", created_at=old)
                     if i % 2 else Message.user(f"note {i} about walrus {t} and tea {i % 7}")
                     for i in range(per_thread)]
            await memory.save_messages(batch, thread_id=f"t{t}", resource_id="r")
        await memory.search_messages(resource_id="r", query="walrus")  # index everything first
        result: dict[str, Any] = {"messages": per_thread * THREADS, "queries": queries}
        result["no_policy_ms"] = await _reads(memory, queries)
        await memory.set_retention(timedelta(days=365))
        result["policy_nothing_expired_ms"] = await _reads(memory, queries)
        await memory.set_retention(timedelta(days=90))
        result["policy_half_expired_ms"] = await _reads(memory, queries)
        start = time.perf_counter()
        swept = await memory.sweep()
        seconds = time.perf_counter() - start
        result["sweep"] = {**swept, "seconds": round(seconds, 3),
                           "messages_per_second": round(swept["messages"] / seconds) if seconds else None}
        result["after_sweep_ms"] = await _reads(memory, queries)
    base = result["no_policy_ms"]
    result["ratio_policy_to_none"] = {name: round(result["policy_nothing_expired_ms"][name] / base[name], 3)
                                      for name in base}
    return result


def run(messages: int = 10_000, queries: int = 300) -> dict[str, Any]:
    """The benchmark's JSON-ready result (see the module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        return asyncio.run(_run(messages, queries, Path(folder)))
