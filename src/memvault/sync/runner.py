"""The synchronous twin of :class:`memvault.runtime.Runtime`: turns without ``await``."""

from __future__ import annotations

from types import TracebackType

from memvault.llm.base import Model
from memvault.model import Message
from memvault.runtime.runner import Runtime as AsyncRuntime
from memvault.runtime.turn import TurnOptions
from memvault.sync.memory import Memory
from memvault.sync.turn import SyncTurn


class Runtime:
    """Turns over a sync :class:`~memvault.sync.Memory`, run on its private event loop; the
    arguments are those of :class:`memvault.runtime.Runtime`. ``aio`` is the async twin."""

    def __init__(
        self,
        memory: Memory,
        *,
        model: Model | None = None,
        summary_model: Model | None = None,
        options: TurnOptions | None = None,
    ) -> None:
        self._portal = memory.portal
        self.aio = AsyncRuntime(memory.aio, model=model, summary_model=summary_model, options=options)

    def turn(
        self,
        *,
        thread_id: str,
        resource_id: str,
        user_message: Message | str,
        model: Model | None = None,
        summary_model: Model | None = None,
        options: TurnOptions | None = None,
    ) -> SyncTurn:
        """One turn, as a context manager (:class:`SyncTurn`)."""
        return SyncTurn(self._portal, self.aio.turn(
            thread_id=thread_id, resource_id=resource_id, user_message=user_message, model=model,
            summary_model=summary_model, options=options))

    def flush(self) -> None:
        """Wait for the turns' background work (titles, summaries) and the memory's embedding."""
        self._portal.run(self.aio.flush())

    def close(self) -> None:
        """:meth:`flush`, then refuse new background work; the memory stays open."""
        self._portal.run(self.aio.close())

    def __enter__(self) -> Runtime:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
