"""The conformance suite: one behaviour suite that every store must pass unchanged.

Every test takes the ``memory`` fixture, a :class:`memvault.Memory` over a fresh, empty store,
and runs once per entry of :data:`STORES`.

Adding a store (e.g. PostgreSQL) means appending one :class:`StoreFactory` to :data:`STORES`::

    @asynccontextmanager
    async def _postgres(tmp_path: Path) -> AsyncIterator[Memory]:
        url = os.environ.get("MEMVAULT_TEST_POSTGRES_URL")
        if not url:
            pytest.skip("set MEMVAULT_TEST_POSTGRES_URL to run the PostgreSQL conformance suite")
        memory = await Memory.open(url)            # must be empty: a fresh database or schema
        try:
            yield memory
        finally:
            await memory.delete_resource(...)      # or drop the schema
            await memory.close()

    STORES.append(StoreFactory("postgres", _postgres))

The factory gets the test's ``tmp_path``, yields an *empty* store and cleans up after itself.
Nothing else in the suite changes.

The PostgreSQL entry runs when ``MEMVAULT_TEST_POSTGRES_URL`` names a server (e.g.
``postgresql://postgres@127.0.0.1:5432/memvault_test``): each store gets a fresh schema, dropped
afterwards. Without it those tests skip, saying why; with ``MEMVAULT_REQUIRE_POSTGRES=1`` (CI)
a missing or unreachable server fails them instead.

Known bugs are declared, not skipped: ``@pytest.mark.known_bug("BUG: ...", stores=["sqlite"])``
(on a test or on one ``pytest.param``) turns into a strict ``xfail`` on those stores (all stores
when ``stores`` is omitted), so the test starts failing loudly once the bug is fixed.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from memvault import Memory, MemoryOptions, WorkingMemoryOptions
from postgres_server import drop_schema, postgres_url, with_schema


@dataclass(frozen=True)
class StoreFactory:
    """``open(tmp_path)`` is an async context manager yielding a Memory over an empty store."""

    id: str
    open: Callable[[Path], AbstractAsyncContextManager[Memory]]

    def __str__(self) -> str:
        return self.id


@asynccontextmanager
async def _open_url(url: str) -> AsyncIterator[Memory]:
    memory = await Memory.open(url)
    try:
        yield memory
    finally:
        await memory.close()


@asynccontextmanager
async def _postgres(tmp_path: Path) -> AsyncIterator[Memory]:
    """A Memory over a fresh schema of the test server, dropped afterwards."""
    url = postgres_url("the PostgreSQL store's tests")
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    try:
        async with _open_url(with_schema(url, schema)) as memory:
            yield memory
    finally:
        await drop_schema(url, schema)


STORES: list[StoreFactory] = [
    StoreFactory("memory", lambda tmp_path: _open_url("memory://")),
    StoreFactory("sqlite", lambda tmp_path: _open_url(f"sqlite:///{tmp_path}/m.db")),
    StoreFactory("postgres", _postgres),
]
"""Every store the suite runs over; ``memory`` (the reference store) comes first."""


@pytest.fixture(params=STORES, ids=str)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    """A Memory with default options over a fresh store of each kind; closed afterwards."""
    async with request.param.open(tmp_path) as opened:
        yield opened


@pytest.fixture
def thread_scoped(memory: Memory) -> Memory:
    """A second view of the same store whose working memory is per thread."""
    return Memory(memory.store, MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread")))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "known_bug(reason, stores=None): a bug in src/, a strict xfail on those stores (all if None)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        factory = callspec.params.get("memory") if callspec else None
        if not isinstance(factory, StoreFactory):
            continue
        for mark in item.iter_markers("known_bug"):
            stores = mark.kwargs.get("stores")
            if stores is None or factory.id in stores:
                item.add_marker(pytest.mark.xfail(strict=True, reason=mark.args[0]))


@pytest.fixture(params=STORES, ids=str)
def store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    """Each store's factory, for tests that open many fresh stores (e.g. property tests)."""
    factory: StoreFactory = request.param
    return factory
