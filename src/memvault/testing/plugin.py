"""The pytest plugin of the conformance suite: ``pytest_plugins = ["memvault.testing.plugin"]``.

It needs pytest-asyncio (``pip install 'memvault[testing]'``); the suite's async tests and
fixtures are declared as asyncio ones, so ``asyncio_mode`` may be ``strict`` (the default) or
``auto``. From ONE fixture the project defines, ``memvault_store_factory`` (a
:class:`memvault.testing.StoreFactory`, see :mod:`memvault.testing`), it builds:

- ``store_factory``: that factory, for tests that open many fresh stores (property tests);
- ``memory``: a :class:`memvault.Memory` with default options over a fresh store, closed after;
- ``thread_scoped``: a second view of the same store whose working memory is per thread.

It registers two markers:

- ``capability(name, ...)``: the test needs those optional capabilities
  (:data:`memvault.testing.CAPABILITIES`); on a store without one, ``memory`` skips the test
  and says which capability is missing;
- ``known_bug(reason, stores=None)``: a strict ``xfail`` on the stores whose factory id is listed
  (on every store when ``stores`` is omitted).

A project whose own conftest defines fixtures named ``memory``, ``store_factory`` or
``thread_scoped`` closer to the tests (those win over a plugin's) re-exports these next to the
suite: ``from memvault.testing.plugin import memory, store_factory, thread_scoped``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

try:
    import pytest_asyncio
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memvault.testing.plugin needs pytest-asyncio: pip install 'memvault[testing]'"
    ) from exc

from memvault import Memory, MemoryOptions, WorkingMemoryOptions
from memvault.testing import RowWriter, StoreFactory, missing

pytest.register_assert_rewrite("memvault.testing.suite", "memvault.testing.support")

__all__ = ["memory", "memvault_row_writer", "memvault_store_factory", "store_factory", "thread_scoped"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "known_bug(reason, stores=None): a known bug, a strict xfail on the stores with those "
        "factory ids (all if None)",
    )
    config.addinivalue_line(
        "markers",
        "capability(*names): the test needs these optional store capabilities "
        "(memvault.testing.CAPABILITIES) and skips on a store without them",
    )


@pytest.fixture
def memvault_store_factory() -> StoreFactory:
    """Override this fixture: return the :class:`~memvault.testing.StoreFactory` of your store."""
    pytest.fail(
        "define a fixture memvault_store_factory returning a memvault.testing.StoreFactory "
        "in your conftest.py (see the docstring of memvault.testing)",
        pytrace=False,
    )


@pytest.fixture
def memvault_row_writer() -> RowWriter | None:
    """Override this fixture to run the unreadable-row tests: return a
    :data:`~memvault.testing.RowWriter` for your store (None, the default, skips them)."""
    return None


def _declare_known_bugs(node: pytest.Item | pytest.Collector, store_id: str) -> None:
    for mark in node.iter_markers("known_bug"):
        stores = mark.kwargs.get("stores")
        if stores is None or store_id in stores:
            node.add_marker(pytest.mark.xfail(strict=True, reason=mark.args[0]))


@pytest.fixture
def store_factory(request: pytest.FixtureRequest, memvault_store_factory: StoreFactory) -> StoreFactory:
    """The project's factory (see :mod:`memvault.testing`), its ``known_bug`` marks applied."""
    if not isinstance(memvault_store_factory, StoreFactory):
        pytest.fail(f"memvault_store_factory returned {memvault_store_factory!r}, not a "
                    "memvault.testing.StoreFactory", pytrace=False)
    _declare_known_bugs(request.node, memvault_store_factory.id)
    return memvault_store_factory


@pytest_asyncio.fixture(loop_scope="function")
async def memory(
    request: pytest.FixtureRequest, store_factory: StoreFactory, tmp_path: Path
) -> AsyncIterator[Memory]:
    """A Memory with default options over a fresh, empty store; closed afterwards. Skips the test
    when the store lacks a capability its ``capability`` marks name."""
    async with store_factory.memory(tmp_path) as opened:
        needed = [name for mark in request.node.iter_markers("capability") for name in mark.args]
        lacking = missing(opened.store, needed)
        if lacking:
            pytest.skip(f"{type(opened.store).__name__} ({store_factory.id}) has no "
                        f"{', '.join(lacking)} capability")
        yield opened


@pytest.fixture
def thread_scoped(memory: Memory) -> Memory:
    """A second view of the same store whose working memory is per thread."""
    return Memory(memory.store, MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread")))
