"""The ``live`` fixture: one real server per test module (see :mod:`server_live`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server_live import B, Live, new_key, run, seed_b, start, stop


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    db = f"sqlite:///{tmp_path_factory.mktemp('server') / 'x.db'}"
    run(seed_b(db))
    b_key, admin_key = run(new_key(db, B, "bob's key")), run(new_key(db, None, "root"))
    base, server, thread = start(db)
    try:
        yield Live(base, db, server.config.app, b_key, admin_key)
    finally:
        stop(server, thread)
