"""``memvault import --from SYSTEM:PATH`` in a real subprocess over a real SQLite target: the
counts and what was not carried, a second run that changes nothing, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def memvault(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMVAULT_DB": f"sqlite:///{db}", "PYTHONPATH": str(SRC)}
    env.pop("MEMVAULT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "memvault", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, check=False)


def test_import_from_voltagent_prints_counts_and_what_was_left(
        voltagent_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db = tmp_path / "memvault.db"
    done = memvault("import", "--from", f"voltagent:file:{voltagent_db[0]}", db=db)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"imported from voltagent {voltagent_db[0]}: 3 threads, 8 messages, "
                        "3 working memories, 2 states")
    assert "not carried:" in lines
    assert "  1 workflow states without a user (memvault states belong to a resource)" in lines
    exported = memvault("export", "--all", db=db)
    again = memvault("import", "--from", f"voltagent:{voltagent_db[0]}", "--json", db=db)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["counts"] == {"threads": 3, "messages": 8, "working_memories": 3,
                                                  "states": 2}
    assert memvault("export", "--all", db=db).stdout == exported.stdout  # nothing changed


def test_import_from_mastra_as_json(mastra_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    done = memvault("import", "--from", f"mastra:{mastra_db[0]}", "--json", db=tmp_path / "m.db")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["system"] == "mastra"
    assert report["counts"]["messages"] == sum(len(t["messages"]) for t in mastra_db[1]["threads"])


@pytest.mark.parametrize("args", [
    ["--from", "letta:x.db"],
    ["--from", "voltagent:{missing}"],
    ["--from", "voltagent:{garbage}"],
    ["--from", "voltagent:{garbage}", "--force"],
    [],
])
def test_bad_sources_are_one_line_and_write_nothing(args: list[str], tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00\x01 not sqlite " * 200)
    args = [a.format(missing=tmp_path / "missing.db", garbage=garbage) for a in args]
    db = tmp_path / "memvault.db"
    done = memvault("import", *args, db=db)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 1:
        assert done.stderr.strip().splitlines()[-1].startswith("memvault: "), done.stderr
    assert not db.exists()  # the target is not even created: the source is read first
    assert memvault("export", "--all", db=db).stdout == ""
