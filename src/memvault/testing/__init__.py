"""The conformance suite every memvault store passes, as a pytest plugin a third-party store can run.

Install it with ``pip install 'memvault[testing]'`` (pytest, pytest-asyncio, hypothesis). A backend
runs the whole suite with one top-level ``conftest.py`` and one test file. The conftest registers
the plugin and provides ONE fixture, ``memvault_store_factory``, which returns a
:class:`StoreFactory`: a name (used by ``known_bug`` marks and shown in reports) and a function
that opens an EMPTY store in a folder of its own::

    # conftest.py (the project's top-level one: pytest reads pytest_plugins only there)
    import pytest

    from memvault.stores.memory import InMemoryStore
    from memvault.testing import StoreFactory

    pytest_plugins = ["memvault.testing.plugin"]


    async def open_store(folder):
        return InMemoryStore()  # yours: e.g. await MyStore.open(folder / "data.db")


    @pytest.fixture
    def memvault_store_factory() -> StoreFactory:
        return StoreFactory("mystore", open_store)

and the test file collects the suite by importing it (pytest collects the imported tests)::

    # test_memvault_conformance.py
    from memvault.testing.suite import *  # noqa: F403

Then ``pytest`` runs every behaviour test over a fresh store each time. ``open`` gets the test's
temporary folder and returns either an awaitable of the store (closed with ``store.close()``
afterwards) or an async context manager yielding it (which cleans up itself, e.g. drops a
database schema). Parametrize the fixture (``@pytest.fixture(params=[...])``) to run several
stores or configurations.

The suite's tests take ``memory``, a :class:`memvault.Memory` with default options over the store.
The core (:class:`memvault.stores.Store`: threads, messages, working-memory notes) is required:
those tests never skip. Tests of an optional capability (:mod:`memvault.stores.capabilities`) carry
``@pytest.mark.capability(name, ...)`` with names from :data:`CAPABILITIES` and skip, naming the
capability, on a store without it.

A bug a store knows about is declared, not skipped: ``@pytest.mark.known_bug("BUG: ...",
stores=["mystore"])`` makes the test a strict ``xfail`` on the stores with those ids (all stores
when ``stores`` is omitted), so it fails loudly once the bug is fixed.

The tests of unreadable rows (``test_unreadable_rows``) need to write raw column values into a
saved message row, as a newer memvault or damage on disk could leave them; a project enables them
by defining the fixture ``memvault_row_writer``, returning a :data:`RowWriter` for the store
(they skip, saying so, without it).

This package is never imported by ``import memvault``; it needs pytest and pytest-asyncio
(strict or auto mode both work: the suite marks its own async tests).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memvault import Memory
from memvault.stores.base import Store
from memvault.stores.capabilities import (
    supports_batch_reads,
    supports_embeddings,
    supports_export,
    supports_full_text,
    supports_passage_reads,
    supports_pool_search,
    supports_retention,
    supports_states,
    supports_summaries,
)

__all__ = ["CAPABILITIES", "RowWriter", "StoreFactory", "has", "missing"]

CAPABILITIES: Final[dict[str, Callable[[object], bool]]] = {
    "full_text": supports_full_text,
    "states": supports_states,
    "summaries": supports_summaries,
    "embeddings": supports_embeddings,
    "export": supports_export,
    "batch_reads": supports_batch_reads,
    "passage_reads": supports_passage_reads,
    "pool_search": supports_pool_search,
    "retention": supports_retention,
}
"""The optional capabilities a test can require, by name, with the guard that answers for a store:
``full_text`` (:class:`~memvault.stores.capabilities.FullTextSearch`), ``states``
(:class:`~memvault.stores.capabilities.StateStore`), ``summaries``
(:class:`~memvault.stores.capabilities.SummaryStore`), ``embeddings``
(:class:`~memvault.stores.capabilities.EmbeddingStore`), ``export``
(:class:`~memvault.stores.capabilities.ExportStore`), ``batch_reads``
(:class:`~memvault.stores.capabilities.BatchReads`), ``passage_reads``
(:class:`~memvault.stores.capabilities.PassageReads`), ``pool_search``
(:class:`~memvault.stores.capabilities.PoolSearch`) and ``retention``
(:class:`~memvault.stores.capabilities.Retention`)."""

Opened = AbstractAsyncContextManager[Store] | Awaitable[Store]

RowWriter = Callable[[Store, str, str, str, dict[str, Any]], Awaitable[None]]
"""``await writer(store, resource_id, thread_id, message_id, columns)`` overwrites columns of a
saved message's stored row with raw values, bypassing every check: ``role``, ``parts`` and
``metadata`` as the text the SQL stores keep (``parts`` a JSON list in row format 1),
``created_us`` an integer (microseconds since the epoch). The project's ``memvault_row_writer``
fixture returns one for the store under test, or None when it cannot."""


def missing(store: object, names: tuple[str, ...] | list[str]) -> list[str]:
    """Which of the capabilities ``names`` the store lacks (an unknown name raises ``KeyError``)."""
    unknown = [name for name in names if name not in CAPABILITIES]
    if unknown:
        raise KeyError(f"unknown capabilities {unknown}: use {sorted(CAPABILITIES)}")
    return [name for name in names if not CAPABILITIES[name](store)]


def has(memory: Memory, *names: str) -> bool:
    """Whether the store under ``memory`` has every capability named (for checks inside a test)."""
    return not missing(memory.store, names)


@dataclass(frozen=True)
class StoreFactory:
    """How the suite opens a fresh, empty store of one kind.

    ``id`` names it in test ids and in ``known_bug(stores=[...])``. ``open(folder)`` gets an empty
    temporary folder and returns an awaitable of the store (closed with ``close()`` afterwards) or
    an async context manager yielding it (which then cleans up itself)."""

    id: str
    open: Callable[[Path], Opened]

    def __str__(self) -> str:
        return self.id

    @asynccontextmanager
    async def memory(self, folder: Path) -> AsyncIterator[Memory]:
        """A :class:`memvault.Memory` with default options over a fresh store; closed afterwards."""
        opened = self.open(folder)
        if isinstance(opened, AbstractAsyncContextManager):
            async with opened as store:
                memory = Memory(store)
                try:
                    yield memory
                finally:
                    await memory.flush()
        else:
            store = await opened
            memory = Memory(store)
            try:
                yield memory
            finally:
                await memory.close()
