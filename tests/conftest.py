"""Shared by the whole suite. Being here puts ``tests/`` on ``sys.path``, so that test modules
anywhere import the shared helpers (``postgres_server``) by name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memvault import Memory

pytest_plugins = ["memvault.testing.plugin"]  # the conformance suite's fixtures and markers


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    """A Memory over a new SQLite file (the embedded default). Suites that run over several
    stores (``tests/conformance``, ``tests/recall``) define their own."""
    opened = await Memory.open(f"sqlite:///{tmp_path / 'memvault.db'}")
    try:
        yield opened
    finally:
        await opened.close()
