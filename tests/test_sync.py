"""The synchronous twin: the same methods as memvault.Memory, usable with or without a running
event loop, with the same docs and the same typed errors."""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
import warnings
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory as AsyncMemory
from memvault import (
    Message,
    NotFoundError,
    ThreadExistsError,
    ThreadNotFoundError,
    ValidationError,
)
from memvault.errors import ConfigurationError
from memvault.sync import Memory as SyncMemory


def public_methods(cls: type, *, coroutines: bool | None = None) -> list[str]:
    found = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member):
            continue
        if coroutines is None or inspect.iscoroutinefunction(member) == coroutines:
            found.append(name)
    return sorted(found)


ASYNC_COROUTINES = public_methods(AsyncMemory, coroutines=True)
ASYNC_PUBLIC = public_methods(AsyncMemory)


def portal_threads() -> int:
    return sum(t.name == "memvault-sync" for t in threading.enumerate())


def test_introspection_sees_the_api() -> None:
    assert {"open", "close", "save_messages", "get_history", "update_working_memory",
            "compare_and_set_state"} <= set(ASYNC_COROUTINES)
    assert "working_memory_tool" in ASYNC_PUBLIC


@pytest.mark.parametrize("name", ASYNC_COROUTINES)
def test_every_coroutine_method_has_a_sync_twin(name: str) -> None:
    twin = getattr(SyncMemory, name, None)
    assert twin is not None, f"memvault.sync.Memory has no {name}()"
    assert callable(twin)
    assert not inspect.iscoroutinefunction(twin)


def test_the_sync_class_has_nothing_async() -> None:
    assert public_methods(SyncMemory, coroutines=True) == []
    assert set(ASYNC_PUBLIC) <= set(public_methods(SyncMemory))


def parameters(function: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
            if p.name not in ("self", "cls")]


@pytest.mark.parametrize("name", ASYNC_PUBLIC)
def test_twins_take_the_same_arguments(name: str) -> None:
    assert parameters(getattr(SyncMemory, name)) == parameters(getattr(AsyncMemory, name))


@pytest.mark.parametrize("name", ASYNC_PUBLIC)
def test_twins_keep_the_docstring(name: str) -> None:
    sync_doc = inspect.getdoc(getattr(SyncMemory, name))
    async_doc = inspect.getdoc(getattr(AsyncMemory, name))
    if name == "open":
        assert sync_doc is not None
        assert "memvault.Memory.open" in sync_doc
    else:
        assert sync_doc == async_doc


# -- using it ----------------------------------------------------------------------------------


def exercise(memory: SyncMemory) -> None:
    """A short session through the sync API, with results checked."""
    thread = memory.create_thread(resource_id="ada", thread_id="t1", title="Tea")
    assert thread.id == "t1"
    saved = memory.save_messages(
        [Message.user("I like green tea"), {"role": "assistant", "parts": [
            {"type": "text", "text": "Noted"}]}],
        thread_id="t1", resource_id="ada",
    )
    assert [m.seq for m in saved] == [1, 2]
    assert [m.text for m in memory.get_history(thread_id="t1", resource_id="ada")] == [
        "I like green tea", "Noted",
    ]
    assert [h.message.seq for h in memory.search_messages(resource_id="ada", query="tea")] == [1]
    memory.update_working_memory("likes green tea", resource_id="ada")
    assert memory.get_working_memory(resource_id="ada") == "likes green tea"
    assert "likes green tea" in memory.working_memory_instructions(resource_id="ada")
    assert memory.working_memory_tool()["function"]["name"] == "update_working_memory"
    state = memory.set_state({"step": 1}, resource_id="ada", key="run")
    assert memory.compare_and_set_state({"step": 2}, resource_id="ada", key="run",
                                        expected_version=state.version) is not None
    assert memory.list_threads(resource_id="ada").threads[0].title == "Tea"
    assert memory.delete_resource(resource_id="ada").messages == 2


def test_works_in_a_plain_function(tmp_path: Path) -> None:
    before = portal_threads()
    with SyncMemory.open(f"sqlite:///{tmp_path}/sync.db") as memory:
        assert isinstance(memory.aio, AsyncMemory)
        assert memory.options is memory.aio.options
        exercise(memory)
    assert portal_threads() == before  # close stops the background loop


async def test_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    with SyncMemory.open(f"sqlite:///{tmp_path}/sync.db") as memory:
        exercise(memory)
        await asyncio.sleep(0)  # our own loop is still fine
    assert asyncio.get_running_loop() is loop


def test_works_from_several_threads(tmp_path: Path) -> None:
    with SyncMemory.open(f"sqlite:///{tmp_path}/threads.db") as memory, ThreadPoolExecutor(4) as pool:
        list(pool.map(
            lambda i: memory.save_messages([Message.user(f"m{i}")], thread_id="t", resource_id="r"),
            range(20),
        ))
        seqs = [m.seq for m in memory.get_messages(thread_id="t", resource_id="r")]
    assert seqs == list(range(1, 21))


# -- same errors -------------------------------------------------------------------------------

ERROR_CASES = [
    pytest.param("get_messages", {"ids": "m1", "thread_id": "t", "resource_id": "r"},
                 ValidationError, id="ids-as-string"),
    pytest.param("get_messages", {"after": "nope", "thread_id": "t", "resource_id": "r"},
                 NotFoundError, id="unknown-cursor"),
    pytest.param("save_messages", {"messages": [{"role": "robot"}], "thread_id": "t",
                                   "resource_id": "r"}, ValidationError, id="bad-message"),
    pytest.param("create_thread", {"thread_id": "t", "resource_id": "r"}, ThreadExistsError,
                 id="thread-exists"),
    pytest.param("update_thread", {"thread_id": "nope", "resource_id": "r", "title": "x"},
                 ThreadNotFoundError, id="thread-missing"),
    pytest.param("list_threads", {"resource_id": "r", "limit": 0}, ValidationError, id="limit"),
    pytest.param("set_state", {"value": float("nan"), "resource_id": "r", "key": "k"},
                 ValidationError, id="state-nan"),
    pytest.param("update_working_memory", {"memory": 5, "resource_id": "r"}, ValidationError,
                 id="working-memory-type"),
]


@pytest.fixture
async def twins(tmp_path: Path) -> AsyncIterator[tuple[AsyncMemory, SyncMemory]]:
    aio = await AsyncMemory.open(f"sqlite:///{tmp_path}/async.db")
    sync = SyncMemory.open(f"sqlite:///{tmp_path}/sync.db")
    await aio.save_messages([Message.user("hi", id="m1")], thread_id="t", resource_id="r")
    sync.save_messages([Message.user("hi", id="m1")], thread_id="t", resource_id="r")
    yield aio, sync
    sync.close()
    await aio.close()


@pytest.mark.parametrize(("name", "kwargs", "error"), ERROR_CASES)
async def test_twins_raise_the_same_typed_errors(
    twins: tuple[AsyncMemory, SyncMemory], name: str, kwargs: dict[str, Any], error: type
) -> None:
    aio, sync = twins
    with pytest.raises(error) as from_async:
        await getattr(aio, name)(**kwargs)
    with pytest.raises(error) as from_sync:
        getattr(sync, name)(**kwargs)
    assert type(from_sync.value) is type(from_async.value)
    assert str(from_sync.value) == str(from_async.value)


@pytest.mark.parametrize(
    "url", ["nosuch://x", "sqlite:///x.db?bogus=1"],
)
def test_open_raises_the_same_typed_error(url: str) -> None:
    with pytest.raises(ConfigurationError) as from_sync:
        SyncMemory.open(url)
    with pytest.raises(ConfigurationError) as from_async:
        asyncio.run(AsyncMemory.open(url))
    assert str(from_sync.value) == str(from_async.value)


def test_a_failed_open_leaves_no_thread_behind() -> None:
    before = portal_threads()
    with pytest.raises(ConfigurationError):
        SyncMemory.open("nosuch://x")
    assert portal_threads() == before


def test_close_twice_is_harmless(tmp_path: Path) -> None:
    memory = SyncMemory.open(f"sqlite:///{tmp_path}/twice.db")
    memory.close()
    with warnings.catch_warnings():  # keep the never-awaited coroutine's warning in here
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            memory.close()
            second = None
        except RuntimeError as exc:
            second = repr(exc)
        gc.collect()
    assert second is None, f"second close raised {second}"
