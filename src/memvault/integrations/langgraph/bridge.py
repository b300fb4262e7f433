"""How the LangGraph adapters reach memvault: the async :class:`~memvault.Memory` behind either
kind of memory, and the event loop their synchronous methods (``graph.invoke``) run on.

LangGraph calls a checkpointer's and a store's sync methods from worker threads and their async
methods from the graph's loop. memvault is async, so a sync call runs its coroutine on the
memory's loop: the private loop of a :class:`memvault.sync.Memory`, or, for an async memory, the
loop the adapter first ran on (which must keep running in another thread, as with
``loop.run_in_executor(None, graph.invoke, ...)``). A sync call from that loop's own thread would
wait for itself: it raises :class:`~memvault.errors.ConfigurationError` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from memvault.errors import ConfigurationError, ValidationError

if TYPE_CHECKING:
    from memvault.memory import Memory

R = TypeVar("R")


class Bridge:
    """The async memory of ``memory`` (a :class:`memvault.Memory` or a
    :class:`memvault.sync.Memory`) and the loop sync calls run on."""

    def __init__(self, memory: Any) -> None:
        from memvault.memory import Memory

        aio = getattr(memory, "aio", memory)
        if not isinstance(aio, Memory):
            raise ValidationError(
                f"memory must be a memvault.Memory or a memvault.sync.Memory, got {type(memory).__name__}"
            )
        self.memory: Memory = aio
        portal = getattr(memory, "portal", None)
        self.loop: asyncio.AbstractEventLoop | None = getattr(portal, "loop", None)
        if self.loop is None:
            try:
                self.loop = asyncio.get_running_loop()
            except RuntimeError:
                self.loop = None

    def seen(self) -> None:
        """Record the running loop as the memory's (called by every async method)."""
        if self.loop is None or self.loop.is_closed():
            self.loop = asyncio.get_running_loop()

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run ``coroutine`` on the memory's loop from a sync call, and wait for its result."""
        loop = self.loop
        if loop is None or loop.is_closed() or not loop.is_running():
            coroutine.close()
            raise ConfigurationError(
                "a sync call needs the memory's event loop running in another thread: open the memory "
                "with memvault.sync.Memory.open(...) for sync graphs (invoke, stream), or use the async "
                "methods (ainvoke, astream)"
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coroutine.close()
            raise ConfigurationError(
                "a sync call from the memory's own event loop would wait for itself: use the async "
                "methods (ainvoke, astream) there, or run the sync graph in a thread"
            )
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()
