"""Importing memvault is cheap: in a fresh interpreter, ``import memvault``, the main names and the
sync twin load no numpy, no OpenTelemetry (SDK or API), no jsonschema and no extra. The import
time itself is a benchmark (``memvault bench import``), not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

NEVER = ("numpy", "jsonschema", "opentelemetry", "torch", "httpx", "psycopg", "psycopg_pool",
         "fastapi", "uvicorn", "mcp", "agents", "usearch", "tiktoken", "sentence_transformers",
         "memvault.testing", "pytest", "hypothesis")


def loaded(statement: str) -> set[str]:
    probe = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("statement", [
    "import memvault",
    "from memvault import Memory, Message, MemoryOptions, WorkingMemoryOptions",
    "from memvault.sync import Memory",
    "from memvault.runtime import Runtime, Turn",
])
def test_the_import_loads_nothing_heavy(statement: str) -> None:
    modules = loaded(statement)
    heavy = sorted(m for m in modules if m.split(".")[0] in NEVER or m in NEVER)
    assert heavy == [], f"{statement!r} loaded {heavy[:10]}"


def test_import_memvault_loads_the_errors_only() -> None:
    ours = sorted(m for m in loaded("import memvault") if m.startswith("memvault"))
    assert ours == ["memvault", "memvault.errors", "memvault.extras"]


def test_a_name_loads_on_first_use_and_a_missing_extra_is_named() -> None:
    probe = """
import sys
sys.modules["numpy"] = None   # as if the vectors extra were not installed
import memvault
from memvault.errors import MissingExtraError
assert memvault.Memory.__name__ == "Memory"
try:
    memvault.ExactIndex
except MissingExtraError as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "pip install 'memvault[vectors]'" in done.stdout
