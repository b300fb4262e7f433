"""Importing memvault is cheap: in a fresh interpreter, ``import memvault``, the main names and the
sync twin load no numpy, no OpenTelemetry (SDK or API), no jsonschema and no extra. The import
time itself is a benchmark (``memvault bench import``), not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

NEVER = ("numpy", "jsonschema", "opentelemetry", "torch", "httpx", "psycopg", "psycopg_pool",
         "fastapi", "uvicorn", "mcp", "agents", "usearch", "tiktoken", "sentence_transformers",
         "memvault.testing", "pytest", "hypothesis", "sqlcipher3")


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
    # memvault.native loads the system's libstdc++ before anything can load usearch's module
    assert ours == ["memvault", "memvault.errors", "memvault.extras", "memvault.native"]


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


EXTRAS = ("numpy", "httpx", "psycopg", "psycopg_pool", "fastapi", "uvicorn", "mcp", "agents", "usearch",
          "tiktoken", "bpe_openai", "sentence_transformers", "torch", "fastembed", "sqlcipher3")


def test_the_demo_runs_on_the_default_install(tmp_path: Path) -> None:
    """The README's first command: `memvault demo` with none of the extras' packages importable
    (they are blocked in sys.modules, as if `pip install memvault` alone had run)."""
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in EXTRAS)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    script = (f"import sys; {blocked}; sys.argv = ['memvault', 'demo', '--db', {url!r}]; "
              "from memvault.cli.app import main; main()")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "What should I drink on my trip?" in done.stdout
