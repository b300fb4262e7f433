"""``memvault bench import``: what importing memvault costs, measured in fresh interpreters.

For each statement (``import memvault``, ``from memvault import Memory, Message``,
``from memvault.sync import Memory``) it runs ``python -X importtime -c <statement>`` ``runs``
times in a fresh subprocess and reports the medians of:

- ``own_ms``: the self time of memvault's own modules (what memvault's code costs);
- ``total_ms``: the cumulative time of the statement's top-level imports, dependencies
  included (pydantic, platformdirs, ...);
- ``modules``: how many memvault modules were loaded, and which heavy packages (numpy, the
  OpenTelemetry SDK, jsonschema, torch, httpx, psycopg, fastapi) were, which should be none.

The interpreter's own start-up is not counted. Figures vary with the machine's load: compare
statements measured in one run.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from typing import Any

STATEMENTS = (
    "import memvault",
    "from memvault import Memory, Message",
    "from memvault.sync import Memory",
)
HEAVY = ("numpy", "jsonschema", "opentelemetry.sdk", "torch", "httpx", "psycopg", "fastapi", "usearch")
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")
_PROBE = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def measure(statement: str) -> dict[str, Any]:
    """One fresh interpreter's import of ``statement``: own and total milliseconds, modules."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"{statement}; {_PROBE}"],
                          capture_output=True, text=True, check=True)
    own = total = 0
    for line in done.stderr.splitlines():
        found = _LINE.match(line)
        if found is None:
            continue
        self_us, cumulative_us, indent, name = int(found[1]), int(found[2]), found[3], found[4]
        if name == "memvault" or name.startswith("memvault."):
            own += self_us
        if len(indent) == 1:  # a top-level import of the statement (its dependencies included)
            total += cumulative_us
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "own_ms": own / 1000,
        "total_ms": total / 1000,
        "memvault_modules": sum(1 for m in modules if m == "memvault" or m.startswith("memvault.")),
        "heavy_loaded": [h for h in HEAVY if h in modules],
    }


def run(runs: int = 7) -> dict[str, Any]:
    """Medians over ``runs`` fresh interpreters per statement (see the module docstring)."""
    results: dict[str, Any] = {}
    for statement in STATEMENTS:
        samples = [measure(statement) for _ in range(runs)]
        results[statement] = {
            "own_ms_median": round(statistics.median(s["own_ms"] for s in samples), 1),
            "total_ms_median": round(statistics.median(s["total_ms"] for s in samples), 1),
            "memvault_modules": samples[0]["memvault_modules"],
            "heavy_loaded": samples[0]["heavy_loaded"],
        }
    return {"benchmark": "import", "runs": runs, "python": sys.version.split()[0], "statements": results}
