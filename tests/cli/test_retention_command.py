"""``memvault retention set|clear|show`` and ``memvault sweep``: policies kept in the store file,
expired messages hidden at once and erased by the sweep (run once as a real subprocess)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memvault import Memory, Message
from memvault.cli.app import app

runner = CliRunner()
OLD = datetime.now(UTC) - timedelta(days=400)


async def _seed(url: str) -> None:
    async with await Memory.open(url) as memory:
        for resource in ("ada", "bob"):
            await memory.save_messages([Message.user("an old note", created_at=OLD),
                                        Message.user("a new note")], thread_id="t", resource_id=resource)


async def _texts(url: str, resource: str) -> list[str]:
    async with await Memory.open(url) as memory:
        return [m.text for m in await memory.get_messages(thread_id="t", resource_id=resource)]


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/cli.db"
    asyncio.run(_seed(url))
    return url


def _run(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout)


def test_policies_are_set_shown_and_cleared(db: str) -> None:
    assert _run("retention", "show", "--db", db) == {"store": None, "resources": {}}
    assert _run("retention", "set", "365d", "--db", db) == {"resource_id": None, "max_age": "365d"}
    _run("retention", "set", "2w", "-r", "bob", "--db", db)
    assert _run("retention", "show", "--db", db) == {"store": "365d", "resources": {"bob": "2w"}}
    shown = runner.invoke(app, ["retention", "show", "--db", db]).stdout
    assert "the store: 365d" in shown and "resource 'bob': 2w" in shown
    assert asyncio.run(_texts(db, "ada")) == ["a new note"]  # hidden at once, before any sweep
    _run("retention", "clear", "-r", "bob", "--db", db)
    _run("retention", "clear", "--db", db)
    assert _run("retention", "show", "--db", db) == {"store": None, "resources": {}}
    assert asyncio.run(_texts(db, "ada")) == ["an old note", "a new note"]


@pytest.mark.parametrize("age", ["90", "ninety days", "0d", "1.5d", "1000000000w", "90x"])
def test_a_bad_age_is_refused(db: str, age: str) -> None:
    result = runner.invoke(app, ["retention", "set", age, "--db", db])
    assert result.exit_code == 1
    assert "memvault:" in result.stderr
    assert _run("retention", "show", "--db", db) == {"store": None, "resources": {}}


def test_sweep_as_a_subprocess(db: str) -> None:
    _run("retention", "set", "365d", "-r", "ada", "--db", db)
    env = {**os.environ, "MEMVAULT_DB": db}
    done = subprocess.run([sys.executable, "-m", "memvault", "sweep", "--json"], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == {"resource_id": None,
                                       "swept": {"messages": 1, "threads": 0, "resources": 1}}
    _run("retention", "clear", "-r", "ada", "--db", db)
    assert asyncio.run(_texts(db, "ada")) == ["a new note"]  # erased, not hidden
    assert asyncio.run(_texts(db, "bob")) == ["an old note", "a new note"]  # no policy: untouched
