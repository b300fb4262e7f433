"""The ``live`` fixture: one real server per test module (see :mod:`server_live`), over a SQLite
file; ``test_isolation.py`` also runs it over PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_live import Live, live_server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_server(f"sqlite:///{tmp_path_factory.mktemp('server') / 'x.db'}") as server:
        yield server
