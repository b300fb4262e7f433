"""The behaviour tests, one module per topic; ``from memvault.testing.suite import *`` brings every
test (and the fixtures they define) into a test module of your project, where pytest collects them.

Importing this package declares each test's marks on the test function itself, so they hold
wherever it is collected: the ``pytestmark`` of its module (capabilities) and ``asyncio`` on the
coroutine tests (so pytest-asyncio's strict mode runs them).
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest

from memvault.testing.suite import (
    test_batch_reads,
    test_closing,
    test_embedding_store,
    test_history,
    test_isolation,
    test_messages,
    test_ordering_properties,
    test_passage_reads,
    test_pool_search,
    test_record_counts,
    test_reference,
    test_retention,
    test_search,
    test_search_isolation_properties,
    test_search_query_properties,
    test_states,
    test_summaries,
    test_thread_queries,
    test_threads,
    test_unreadable_rows,
    test_working_memory,
)

MODULES: tuple[ModuleType, ...] = (
    test_threads,
    test_thread_queries,
    test_batch_reads,
    test_passage_reads,
    test_pool_search,
    test_messages,
    test_history,
    test_search,
    test_states,
    test_summaries,
    test_working_memory,
    test_isolation,
    test_search_isolation_properties,
    test_search_query_properties,
    test_ordering_properties,
    test_record_counts,
    test_retention,
    test_unreadable_rows,
    test_embedding_store,
    test_reference,
    test_closing,
)
"""Every module of the suite, in the order its tests run."""


def _is_fixture(value: Any) -> bool:
    return type(value).__name__ == "FixtureFunctionDefinition" or hasattr(value, "_pytestfixturefunction")


def _exports(module: ModuleType) -> dict[str, Any]:
    found: dict[str, Any] = {}
    module_marks = getattr(module, "pytestmark", [])
    for name, value in vars(module).items():
        if name.startswith("test_") and inspect.isfunction(value):
            marks = list(module_marks if isinstance(module_marks, list) else [module_marks])
            if inspect.iscoroutinefunction(value):
                marks.append(pytest.mark.asyncio)
            for mark in marks:
                value = mark(value)
            found[name] = value
        elif _is_fixture(value) and getattr(value, "__module__", None) == module.__name__:
            found[name] = value
    return found


def _collect() -> dict[str, Any]:
    names: dict[str, Any] = {}
    for module in MODULES:
        for name, value in _exports(module).items():
            if name in names:
                raise RuntimeError(f"{module.__name__}.{name} is also defined by another suite module")
            names[name] = value
    return names


_SUITE = _collect()
globals().update(_SUITE)
__all__ = sorted(_SUITE)
