"""Every command reports a store it cannot open in one line on stderr, with exit status 1, never
a traceback: real subprocesses over a file that is not a database and a path below a regular
file (the ``memvault`` entry point, as a user runs it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    ["stats", "-r", "ada"],
    ["threads", "list", "-r", "ada"],
    ["search", "-r", "ada", "tea"],
    ["recall", "-r", "ada", "tea"],
    ["working-memory", "show", "-r", "ada"],
    ["export", "--all"],
    ["delete", "-r", "ada", "--yes"],
    ["purge"],
    ["reindex"],
    ["sweep"],
    ["retention", "show"],
    ["mcp", "-r", "ada"],
    ["serve", "--port", "0"],
]


@pytest.fixture(scope="module")
def bad_stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("bad")
    text = folder / "notes.db"
    text.write_text("this is a text file, not a database\n" * 20)
    return {"not a database": f"sqlite:///{text}", "below a file": f"sqlite:///{text}/inner.db"}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("kind", ["not a database", "below a file"])
def test_a_store_that_cannot_open_is_one_line(bad_stores: dict[str, str], command: list[str], kind: str,
                                              tmp_path: Path) -> None:
    env = {**os.environ, "MEMVAULT_DB": bad_stores[kind]}
    env.pop("MEMVAULT_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "memvault", *command], env=env, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("memvault: "), done.stderr
    assert "notes.db" in last, last  # names the file
    assert "unexpected" not in last, last  # a typed error, not a bug report
