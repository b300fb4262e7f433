"""The URL of a test store of each kind, for fixtures parametrised over stores: ``memory://``, a
real SQLite file in the test's ``tmp_path``, or a fresh schema on the PostgreSQL test server
(skipping the test when there is none; :func:`drop_store` removes the schema afterwards)."""

from __future__ import annotations

import uuid
from pathlib import Path

from postgres_server import drop_schema, postgres_url, with_schema


def store_url(kind: str, tmp_path: Path, what: str) -> tuple[str, str | None, str | None]:
    """``(url, base, schema)`` for ``kind`` (``"memory"``, ``"sqlite"`` or ``"postgres"``):
    for PostgreSQL, ``base`` is the server's URL and ``schema`` the test's fresh schema, else
    both are ``None``. ``what`` names the tests in the skip reason when there is no server."""
    if kind == "memory":
        return "memory://", None, None
    if kind == "sqlite":
        return f"sqlite:///{tmp_path}/memvault.db", None, None
    base = postgres_url(what)
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    return with_schema(base, schema), base, schema


async def drop_store(base: str | None, schema: str | None) -> None:
    """Drop the PostgreSQL schema :func:`store_url` made; nothing for the other kinds."""
    if base is not None and schema is not None:
        await drop_schema(base, schema)
