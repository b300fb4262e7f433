"""`memvault bench turn`'s assemblies on one filled file, without a fill before each run
(issue 14, goal 1).

`bench turn` fills a new file for every run, and on a shared machine the minute of filling
moves the figure it prints more than a change does. This fills a file once (one resource
``r0``, 1,000 threads, the bench's text model and seed) and, on every run, opens it and times
``queries`` assemblies with a fixed query seed, the first 20 left out as warm-up. Run it
alternately with two trees (``PYTHONPATH``) to compare them on the same file and queries.
Prints the p50 and p95 in milliseconds.

    python scripts/steady_assembly.py /tmp/f100k.db 100000          # fills on the first run
    PYTHONPATH=/tmp/old/src python scripts/steady_assembly.py /tmp/f100k.db 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time

from memvault.bench.turn import ZipfText, _fill
from memvault.memory import Memory
from memvault.runtime.context import assemble

WARM_UP = 20


async def main(path: str, messages: int, queries: int, fresh: bool) -> None:
    memory = await Memory.open(f"sqlite:///{path}")
    try:
        if fresh:
            await _fill(memory, messages, 1, 1000, ZipfText(random.Random(1)))
            await memory.update_working_memory("- Name: Ada\n- Likes: green tea", resource_id="r0")
        rng = random.Random(5)
        text = ZipfText(rng)
        timings = []
        for i in range(queries + WARM_UP):
            thread = f"t{rng.randrange(1000)}"
            query = text(30, 120)
            began = time.perf_counter()
            await assemble(memory, thread_id=thread, resource_id="r0", query=query)
            if i >= WARM_UP:
                timings.append(1000.0 * (time.perf_counter() - began))
        timings.sort()
        print(round(statistics.median(timings), 2), round(timings[int(0.95 * (len(timings) - 1))], 2))
    finally:
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("messages", type=int, help="messages to fill with, when the file is new")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.file, args.messages, args.queries, not os.path.exists(args.file)))
