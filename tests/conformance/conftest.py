"""The conformance suite (:mod:`memvault.testing`) over memvault's own stores.

The plugin is registered in ``tests/conftest.py`` (pytest reads ``pytest_plugins`` only in a
top-level conftest); this folder provides the one fixture the suite needs,
``memvault_store_factory``, parametrized over :data:`STORES`, and ``test_suite.py`` collects the
packaged tests. Every test runs once per store: ``memory`` (the reference store) first.
``sqlite-encrypted`` is the SQLite store on an encrypted file (SQLCipher, the ``encryption``
extra), with a raw 32-byte key so that no key derivation slows the property tests down.

The PostgreSQL entry runs when ``MEMVAULT_TEST_POSTGRES_URL`` names a server (e.g.
``postgresql://postgres@127.0.0.1:5432/memvault_test``): each store gets a fresh schema, dropped
afterwards. Without it those tests skip, saying why; with ``MEMVAULT_REQUIRE_POSTGRES=1`` (CI)
a missing or unreachable server fails them instead.

Known bugs are declared in the suite with ``@pytest.mark.known_bug("BUG: ...", stores=["sqlite"])``:
a strict ``xfail`` on those stores, by the ids below.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from memvault.stores import Store, open_store
from memvault.stores.memory import InMemoryStore
from memvault.stores.postgres.store import PostgresStore
from memvault.stores.sqlite.store import SqliteStore
from memvault.testing import RowWriter, StoreFactory

# tests/conftest.py's own ``memory`` fixture (a SQLite Memory) would win over the plugin's here
from memvault.testing.plugin import memory, store_factory, thread_scoped  # noqa: F401
from postgres_server import drop_schema, postgres_url, with_schema


async def _sqlite(folder: Path) -> Store:
    return await open_store(f"sqlite:///{folder}/m.db")


CONFORMANCE_KEY = bytes(range(32))


async def _sqlite_encrypted(folder: Path) -> Store:
    return await SqliteStore.open(folder / "m.db", encryption_key=CONFORMANCE_KEY)


@asynccontextmanager
async def _postgres(folder: Path) -> AsyncIterator[Store]:
    """A store over a fresh schema of the test server, dropped afterwards."""
    url = postgres_url("the PostgreSQL store's tests")
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    try:
        store = await open_store(with_schema(url, schema))
        try:
            yield store
        finally:
            await store.close()
    finally:
        await drop_schema(url, schema)


STORES: list[StoreFactory] = [
    StoreFactory("memory", lambda folder: open_store("memory://")),
    StoreFactory("sqlite", _sqlite),
    StoreFactory("sqlite-encrypted", _sqlite_encrypted),
    StoreFactory("postgres", _postgres),
]
"""Every store the suite runs over; ``memory`` (the reference store) comes first."""


async def write_row(store: Store, resource_id: str, thread_id: str, message_id: str,
                    columns: dict[str, Any]) -> None:
    """The suite's :data:`~memvault.testing.RowWriter` for memvault's stores: the in-memory
    store's test hook; raw SQL on the SQLite file (through the store's connection) and on the PostgreSQL
    schema (through the store's pool), bypassing every check."""
    if isinstance(store, InMemoryStore):
        store._write_raw_row(resource_id, thread_id, message_id, columns)
        return
    names = list(columns)
    if isinstance(store, SqliteStore):  # through the store's own connection (keyed if encrypted)
        def update(conn: Any) -> None:
            sets = ", ".join(f"{name} = ?" for name in names)
            conn.execute(f"UPDATE messages SET {sets} WHERE resource_id = ? AND thread_id = ? AND id = ?",
                         (*columns.values(), resource_id, thread_id, message_id))
        await store._worker.write(update)
        return
    assert isinstance(store, PostgresStore)

    async def body(conn: Any) -> None:
        sets = ", ".join(f"{name} = %s" for name in names)
        await conn.execute(
            f"UPDATE messages SET {sets} WHERE resource_id = %s AND thread_id = %s AND id = %s",
            (*columns.values(), resource_id, thread_id, message_id))
    await store._db.write(body)


@pytest.fixture
def memvault_row_writer() -> RowWriter:
    """Raw row writes for the unreadable-row tests, on every store here."""
    return write_row


@pytest.fixture(params=STORES, ids=str)
def memvault_store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    """The suite's one fixture: each of memvault's stores in turn."""
    factory: StoreFactory = request.param
    return factory
