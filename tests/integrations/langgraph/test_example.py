"""examples/langgraph_memory.py runs as a user would run it: two real subprocesses over one
SQLite file, the second resuming the graph thread the first left, with the conversation, the
checkpoints and the long-term facts in the same file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_memory.py"
SRC = Path(__file__).resolve().parents[3] / "src"


def run(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_langgraph_example_resumes_across_processes(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.graph", reason="the example needs pip install 'memvault[langgraph]'")
    url = f"sqlite:///{tmp_path}/app.db"
    first = run(url, "I like green tea", "My boat is called Nimbus")
    assert "graph turns so far: 0" in first
    assert "bot: Tell me something first." in first
    assert "graph turns: 2; messages in the memvault thread: 4" in first

    second = run(url, "What tea do I like?")
    assert "graph turns so far: 2" in second
    assert "bot: You told me: I like green tea" in second
    assert "graph turns: 3; messages in the memvault thread: 6" in second
