"""The one owner of the runtime's background work.

After a turn, a title (for a new thread) and a summary (when the thread has grown) are made in
the background, never blocking the turn. :class:`BackgroundTasks` runs them: a failure is
logged as a warning and never raised; :meth:`~BackgroundTasks.flush` waits for everything
started so far, the memory's embedding catch-up included (:meth:`memvault.Memory.flush`);
:meth:`~BackgroundTasks.close` waits the same way, then refuses new work.

The embedding of saved messages itself belongs to :class:`memvault.Memory`: vectors are derived
data of what it saves, written after the commit by its semantic index, with or without a runtime.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Protocol

logger = logging.getLogger("memvault.runtime")


class Flushable(Protocol):
    async def flush(self) -> None: ...


class BackgroundTasks:
    """Background work of one runtime (see the module docstring); ``memory`` is flushed by
    :meth:`flush` after the tasks (anything with an async ``flush``, e.g. a Memory)."""

    def __init__(self, memory: Flushable | None = None) -> None:
        self._memory = memory
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run ``work`` in the background; a failure is logged as a warning, never raised.
        Raises ``RuntimeError`` (and closes ``work``) after :meth:`close`."""
        if self._closed:
            work.close()
            raise RuntimeError("the background tasks are closed")

        async def guarded() -> None:
            try:
                await work
            except Exception as error:
                logger.warning("background %s failed: %r", name, error)

        task = asyncio.get_running_loop().create_task(guarded(), name=f"memvault.{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def pending(self) -> int:
        """How many tasks are still running."""
        return len(self._tasks)

    async def flush(self) -> None:
        """Wait until every task started so far (and any they start) is done, then flush the
        memory (its embedding catch-up)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._memory is not None:
            await self._memory.flush()

    async def close(self) -> None:
        """:meth:`flush`, then refuse new work; closing twice is harmless. The memory stays open:
        whoever opened it closes it."""
        if not self._closed:
            await self.flush()
            self._closed = True

    async def __aenter__(self) -> BackgroundTasks:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
