"""LangGraph's published checkpointer conformance suite (``langgraph-checkpoint-conformance``)
against :class:`MemvaultSaver` over ``memory://``, a real SQLite file and a real PostgreSQL
schema: every capability, base and extended, detected and passed; nothing skipped."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import AsyncIterator

import pytest

from memvault import Memory

pytest.importorskip("langgraph.checkpoint.conformance", reason="needs memvault[dev] (the conformance suite)")

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from memvault.integrations.langgraph import MemvaultSaver


async def test_the_conformance_suite_passes_in_full(any_memory: Memory) -> None:
    store = type(any_memory.store).__name__

    @checkpointer_test(name=f"MemvaultSaver over {store}")
    async def saver() -> AsyncIterator[MemvaultSaver]:
        yield MemvaultSaver(any_memory, resource_id="conformance")

    report = await validate(saver)
    report.print_report()
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert not failures
    assert report.passed_all_base()
    assert {name for name, result in report.results.items() if result.detected and result.passed} == {
        c.value for c in ALL_CAPABILITIES
    }
    assert sum(r.tests_skipped for r in report.results.values()) == 0
    assert sum(r.tests_passed for r in report.results.values()) == _suite_size()


def _suite_size() -> int:
    """How many tests the installed suite has (every ``ALL_*_TESTS`` list of its spec)."""
    from langgraph.checkpoint.conformance import spec

    names = [f"{spec.__name__}.{m.name}" for m in pkgutil.iter_modules(spec.__path__)]
    modules = [importlib.import_module(name) for name in names]
    return sum(len(tests) for module in modules for name, tests in vars(module).items()
               if name.startswith("ALL_") and name.endswith("_TESTS"))
