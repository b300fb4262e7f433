"""Closed means closed: once a Memory (or its store) is closed, every call raises
:class:`~memvault.errors.StoreClosedError` at once; nothing hangs, nothing is written, and
closing again is harmless.

Memory's public methods are enumerated by introspection, so a new method is covered without
adding it here; its required parameters get the values of ``SAMPLES`` by name (a method with a
parameter not in the table fails ``test_every_call_after_close_is_refused`` until one is added).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, Message
from memvault.errors import StoreClosedError
from memvault.model import Thread
from memvault.stores.base import ALL_MESSAGES
from memvault.testing import StoreFactory

TIMEOUT = 5.0
"""Seconds a call after close may take before the test calls it a hang (it should be instant)."""
HARMLESS = frozenset({"close", "flush", "stop_sweeping"})
"""Memory methods that stay callable after close: they have nothing left to do."""
SAMPLES: dict[str, Any] = {
    "resource_id": "closed-res",
    "thread_id": "closed-thread",
    "messages": [Message.user("after close", id="late")],
    "ids": ["late"],
    "key": "k",
    "value": {"v": 1},
    "expected_version": None,
    "text": "a summary",
    "through_message_id": "late",
    "memory": "a note",
    "query": "close",
    "last_n": 3,
    "max_age": timedelta(days=1),
    "sink": None,  # replaced by a fresh buffer per call
    "records": [],
    "source": "voltagent:/nonexistent/memory.db",
}


def _arguments(method: Any) -> dict[str, Any]:
    """Keyword arguments for ``method``: every required parameter, from :data:`SAMPLES`."""
    found: dict[str, Any] = {}
    for name, parameter in list(inspect.signature(method).parameters.items())[1:]:
        if parameter.default is not inspect.Parameter.empty or parameter.kind in (
                parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        assert name in SAMPLES, f"add a sample value for parameter {name!r} of {method.__name__} to SAMPLES"
        found[name] = io.StringIO() if name == "sink" else SAMPLES[name]
    return found


def _public_methods() -> list[str]:
    return sorted(name for name, value in inspect.getmembers(Memory, inspect.isfunction)
                  if not name.startswith("_"))


async def _refused(call: Any) -> None:
    """``call()`` (sync or async) raises StoreClosedError within :data:`TIMEOUT` seconds."""
    async def attempt() -> Any:
        result = call()
        return await result if inspect.isawaitable(result) else result

    with pytest.raises(StoreClosedError):
        await asyncio.wait_for(attempt(), TIMEOUT)


async def test_every_call_after_close_is_refused(store_factory: StoreFactory, tmp_path: Path) -> None:
    async with store_factory.memory(tmp_path) as memory:
        await memory.save_messages([Message.user("before close", id="early")],
                                   thread_id="closed-thread", resource_id="closed-res")
        await memory.close()
        for name in _public_methods():
            method = getattr(Memory, name)
            if name in HARMLESS:
                await asyncio.wait_for(_call(memory, name, method), TIMEOUT)
                continue
            await _refused(functools.partial(_call, memory, name, method))
        # twice in a row: the first refusal leaves nothing stuck behind it
        for _ in range(3):
            await _refused(lambda: memory.save_messages(
                [Message.user("again")], thread_id="closed-thread", resource_id="closed-res"))
        await asyncio.wait_for(memory.close(), TIMEOUT)


async def _call(memory: Memory, name: str, method: Any) -> Any:
    result = getattr(memory, name)(**_arguments(method))
    return await result if inspect.isawaitable(result) else result


async def test_the_store_itself_refuses_after_close(store_factory: StoreFactory, tmp_path: Path) -> None:
    """The store's own methods too, not only Memory's: a view sharing the store is refused."""
    async with store_factory.memory(tmp_path) as memory:
        store = memory.store
        await store.create_thread(Thread(id="t", resource_id="r"))
        await store.close()
        await _refused(lambda: store.save_messages("r", "t", [Message.user("late")]))
        await _refused(lambda: store.save_messages("r", "t", [Message.user("later")]))
        await _refused(lambda: store.get_messages("r", "t", ALL_MESSAGES))
        await _refused(lambda: store.get_thread("r", "t"))
        await _refused(lambda: store.create_thread(Thread(id="t2", resource_id="r")))
        await _refused(lambda: Memory(store).get_history(thread_id="t", resource_id="r"))
        await asyncio.wait_for(store.close(), TIMEOUT)


async def test_a_write_racing_close_is_settled(store_factory: StoreFactory, tmp_path: Path) -> None:
    """Writes started just before close either commit or raise StoreClosedError; none hangs."""
    async with store_factory.memory(tmp_path) as memory:
        writes = [asyncio.ensure_future(memory.save_messages(
            [Message.user(f"racing {i}")], thread_id="race", resource_id="r")) for i in range(20)]
        await asyncio.sleep(0)
        await memory.close()
        done, pending = await asyncio.wait(writes, timeout=TIMEOUT)
        assert not pending, "a write started before close never finished"
        for write in done:
            error = write.exception()
            assert error is None or isinstance(error, StoreClosedError), repr(error)
