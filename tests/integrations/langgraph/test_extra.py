"""The adapters are optional: importing their package loads no LangGraph, and without LangGraph
using them raises MissingExtraError naming the ``langgraph`` extra (in a real subprocess whose
``import langgraph`` fails)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"
SCRIPT = textwrap.dedent("""
    import sys
    import memvault.integrations.langgraph as adapters
    assert not any(name.split(".")[0] == "langgraph" for name in sys.modules), "langgraph was imported"
    sys.modules["langgraph"] = None  # as if it were not installed
    from memvault.errors import MissingExtraError
    for name in ("MemvaultSaver", "MemvaultStore"):
        try:
            getattr(adapters, name)
        except MissingExtraError as exc:
            print(name, "->", exc)
        else:
            raise SystemExit(f"{name} loaded without LangGraph")
""")


def test_without_langgraph_the_error_names_the_extra() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert all("pip install 'memvault[langgraph]'" in line for line in lines), lines
