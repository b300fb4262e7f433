"""Source databases for the import tests, built by VoltAgent's and Mastra's own code.

``tests/transfer/seeds`` pins the npm packages (package.json + package-lock.json); its two
scripts write a LibSQL file each through the libraries' public APIs and print, as JSON, what the
libraries read back from it. Without Node.js the tests skip, saying so, except under CI
(``CI=true``, or ``MEMVAULT_REQUIRE_NODE=1`` as ``.ci/run`` sets), where they fail: CI always
runs them. Node present but packages missing: CI fails
(``.ci/run`` installs them with ``npm ci``); elsewhere the fixture runs ``npm ci`` itself and
skips, saying why, when that fails (no registry).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import postgres_server
from memvault import Memory

SEEDS = Path(__file__).parent / "seeds"
NODE_ENV = {**os.environ, "NODE_ENV": "production", "MASTRA_TELEMETRY_DISABLED": "1"}
"""The scripts' environment: no network from the libraries (VoltAgent refreshes a model
registry from models.dev outside production; Mastra sends usage telemetry unless disabled)."""
IN_CI = (os.environ.get("CI", "").lower() in ("1", "true", "yes")
         or os.environ.get("MEMVAULT_REQUIRE_NODE") == "1")


def _missing(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (under CI these tests must run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def node() -> str:
    """The ``node`` executable, with the pinned packages installed."""
    found = shutil.which("node")
    if found is None:
        _missing("Node.js is not installed: the VoltAgent and Mastra import tests build their "
                 "source databases with the real npm packages")
    assert found is not None
    if not (SEEDS / "node_modules" / "@voltagent" / "libsql").is_dir() or \
            not (SEEDS / "node_modules" / "@mastra" / "libsql").is_dir():
        if IN_CI:
            pytest.fail("the npm packages of tests/transfer/seeds are not installed: "
                        "run `npm ci --prefix tests/transfer/seeds` (.ci/run does)")
        npm = shutil.which("npm")
        done = npm is not None and subprocess.run(
            [npm, "ci", "--prefix", str(SEEDS), "--no-audit", "--no-fund"], capture_output=True,
            timeout=600, check=False).returncode == 0
        if not done:
            pytest.skip("the npm packages of tests/transfer/seeds are not installed and "
                        "`npm ci --prefix tests/transfer/seeds` failed (no npm registry?)")
    return found


def build(node: str, script: str, path: Path) -> dict[str, Any]:
    """Run ``seeds/<script>`` to write the database at ``path``; what the library read back."""
    done = subprocess.run([node, str(SEEDS / script), str(path)], capture_output=True, text=True,
                          timeout=300, check=False, cwd=SEEDS, env=NODE_ENV)
    assert done.returncode == 0, f"{script} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def voltagent_db(node: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A VoltAgent memory database and what VoltAgent reads from it."""
    path = tmp_path_factory.mktemp("voltagent") / "memory.db"
    return path, build(node, "voltagent.mjs", path)


@pytest.fixture(scope="session")
def mastra_db(node: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A Mastra memory database and what Mastra reads from it."""
    path = tmp_path_factory.mktemp("mastra") / "memory.db"
    return path, build(node, "mastra.mjs", path)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    """An empty memvault to import into: a new SQLite file, ``memory://``, or a fresh schema of
    the test PostgreSQL server (skipped without one, as in the rest of the suite)."""
    if request.param != "postgres":
        url = f"sqlite:///{tmp_path / 'target.db'}" if request.param == "sqlite" else "memory://"
        async with await Memory.open(url) as memory:
            yield memory
        return
    server = postgres_server.postgres_url("the import tests on PostgreSQL")
    schema = f"imp_{uuid.uuid4().hex[:10]}"
    try:
        async with await Memory.open(postgres_server.with_schema(server, schema)) as memory:
            yield memory
    finally:
        await postgres_server.drop_schema(server, schema)
