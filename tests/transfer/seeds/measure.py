"""Measure the import (prints JSON): builds a VoltAgent and a Mastra database with ``bulk.mjs``
(50 conversations x 200 messages by default), then, ``--runs`` times each, into a new SQLite
file: the first import, a second import of the same source (idempotent: it changes nothing),
and, side by side as the yardstick, ``memvault import`` of the same records exported as JSON
Lines into another new file. Medians in seconds, and messages per second of the first import.

    PYTHONPATH=src python tests/transfer/seeds/measure.py [--conversations 50] [--messages 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from memvault import Memory
from memvault.transfer.jsonl import parse_records

HERE = Path(__file__).parent


async def _once(source: str, folder: Path, run: str) -> dict[str, float]:
    async with await Memory.open(f"sqlite:///{folder / f'{run}-first.db'}") as memory:
        start = time.perf_counter()
        await memory.import_from(source)
        first = time.perf_counter() - start
        start = time.perf_counter()
        await memory.import_from(source)
        second = time.perf_counter() - start
        sink = io.StringIO()
        await memory.export_records(sink)
    records = parse_records(sink.getvalue().splitlines())
    async with await Memory.open(f"sqlite:///{folder / f'{run}-jsonl.db'}") as memory:
        start = time.perf_counter()
        await memory.import_records(records)
        jsonl = time.perf_counter() - start
    return {"first": first, "second": second, "jsonl": jsonl}


def build(system: str, conversations: int, messages: int, folder: Path) -> Path:
    """The database ``bulk.mjs`` writes."""
    path = folder / f"{system}.db"
    subprocess.run(["node", str(HERE / "bulk.mjs"), system, str(path), str(conversations), str(messages)],
                   check=True, capture_output=True, cwd=HERE,
                   env={**os.environ, "NODE_ENV": "production", "MASTRA_TELEMETRY_DISABLED": "1"})
    return path


async def measure(system: str, path: Path, conversations: int, messages: int, runs: int,
                  folder: Path) -> dict[str, Any]:
    times = [await _once(f"{system}:{path}", folder, f"{system}-{run}") for run in range(runs)]
    median = {k: statistics.median(t[k] for t in times) for k in times[0]}
    total = conversations * messages
    return {"system": system, "messages": total, "runs": runs,
            "first_import_s": round(median["first"], 3), "second_import_s": round(median["second"], 3),
            "jsonl_import_s": round(median["jsonl"], 3),
            "first_messages_per_s": round(total / median["first"]),
            "first_over_jsonl": round(median["first"] / median["jsonl"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for system in ("voltagent", "mastra"):
            path = build(system, args.conversations, args.messages, Path(folder))
            result = asyncio.run(measure(system, path, args.conversations, args.messages, args.runs,
                                         Path(folder)))
            print(json.dumps(result))


if __name__ == "__main__":
    main()
