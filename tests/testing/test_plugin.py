"""memvault.testing as a third-party backend uses it: a project of its own (its own pytest.ini,
pytest-asyncio in strict mode), one conftest with the plugin and one fixture, one test file that
imports the suite, run by pytest in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = '''
import pytest

from memvault.stores.memory import InMemoryStore
from memvault.testing import StoreFactory

pytest_plugins = ["memvault.testing.plugin"]

CORE = {"create_thread", "get_thread", "list_threads", "count_threads", "update_thread", "delete_thread",
        "save_messages", "get_messages", "delete_messages", "clear_thread", "delete_resource",
        "get_working_memory", "update_working_memory", "close"}


class CoreOnlyStore:
    """The reference store seen through the core protocol alone (no optional capability)."""

    def __init__(self):
        self._inner = InMemoryStore()

    def __getattr__(self, name):
        if name in CORE:
            return getattr(self._inner, name)
        raise AttributeError(name)


async def open_core(folder):
    return CoreOnlyStore()


async def open_full(folder):
    return InMemoryStore()


@pytest.fixture
def memvault_store_factory():
    return {FACTORY}


async def write_row(store, resource_id, thread_id, message_id, columns):
    inner = getattr(store, "_inner", store)
    inner._write_raw_row(resource_id, thread_id, message_id, columns)


@pytest.fixture
def memvault_row_writer():
    return write_row
'''

SUITE = "from memvault.testing.suite import *  # noqa: F403\n"


def _project(tmp_path: Path, conftest: str) -> None:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n")
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_conformance.py").write_text(SUITE)


def _pytest(tmp_path: Path, *args: str) -> tuple[str, dict[str, int]]:
    """pytest's output, and the counts of its last line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsx", "-p", "no:cacheprovider", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    lines = done.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    found = re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)", last)
    counts = {kind: int(n) for n, kind in found}
    return done.stdout + done.stderr, counts


def _run(tmp_path: Path, factory: str, *args: str) -> tuple[str, dict[str, int]]:
    _project(tmp_path, CONFTEST.replace("{FACTORY}", factory))
    return _pytest(tmp_path, *args)


def test_a_core_only_store_passes_the_core_and_skips_the_optional_tests(tmp_path: Path) -> None:
    output, counts = _run(tmp_path, 'StoreFactory("core", open_core)')
    assert set(counts) == {"passed", "skipped"}, output[-3000:]
    assert counts["passed"] > 250 and counts["skipped"] > 100, counts
    reasons = re.findall(r"^SKIPPED \[\d+\] .*?: (.*)$", output, re.MULTILINE)
    assert reasons and all(re.fullmatch(r"CoreOnlyStore \(core\) has no [a-z_, ]+ capability", r)
                           for r in reasons), set(reasons)
    named = {name for r in reasons for name in r.split("has no ")[1].removesuffix(" capability").split(", ")}
    assert named == {"full_text", "states", "summaries", "embeddings", "export", "batch_reads",
                     "passage_reads", "pool_search", "retention"}
    # the required tests never skip: every history, working-memory and ordering test passed
    assert not re.search(r"SKIPPED .*test_(last_n|text_append|any_history)", output)


def test_a_complete_store_passes_everything_in_strict_mode(tmp_path: Path) -> None:
    output, counts = _run(tmp_path, 'StoreFactory("full", open_full)')
    assert set(counts) == {"passed"}, output[-3000:]
    listed, _ = _pytest(tmp_path, "--collect-only")
    collected = int(re.findall(r"(\d+) tests? collected", listed)[-1])
    assert collected > 400 and counts["passed"] == collected  # every test of the suite ran and passed


@pytest.mark.parametrize(("store_id", "expected"), [("memory", "1 passed"), ("sqlite", "1 failed")])
def test_known_bugs_are_strict_xfails_on_the_stores_they_name(
    tmp_path: Path, store_id: str, expected: str
) -> None:
    """A test declaring a bug for "sqlite": the reference store behind that id does not have the
    bug, so the strict xfail fails (XPASS(strict)), as it will once fixed."""
    (tmp_path / "test_declared_bug.py").write_text(
        "import pytest\n\n\n"
        "@pytest.mark.known_bug('BUG: a declared bug', stores=['sqlite'])\n"
        "@pytest.mark.asyncio\n"
        "async def test_declared_bug(memory):\n"
        "    assert await memory.list_threads(resource_id='r') is not None\n")
    output, counts = _run(tmp_path, f'StoreFactory("{store_id}", open_full)', "-k", "test_declared_bug")
    assert counts == {expected.split()[1]: 1}, output[-2000:]
    if store_id == "sqlite":
        assert "[XPASS(strict)] BUG: a declared bug" in output


def test_a_missing_fixture_says_what_to_define(tmp_path: Path) -> None:
    _project(tmp_path, 'pytest_plugins = ["memvault.testing.plugin"]\n')
    output, counts = _pytest(tmp_path, "-k", "test_last_n")
    assert counts.get("errors") == 4, output[-2000:]
    assert "define a fixture memvault_store_factory" in output


def test_importing_memvault_loads_neither_the_suite_nor_pytest() -> None:
    code = ("import sys, memvault, memvault.stores, memvault.stores.capabilities; "
            "print(sorted(m for m in sys.modules if m.startswith(('memvault.testing', 'pytest', "
            "'hypothesis', '_pytest'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
