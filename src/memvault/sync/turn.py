"""The synchronous twin of the turn helper (:mod:`memvault.runtime.turn`).

``memvault.sync.Memory.turn(...)`` returns a :class:`SyncTurn`: the same turn, driven on the sync
memory's private event loop::

    with memory.turn(thread_id="t1", resource_id="ada", user_message="Hi") as turn:
        answer = turn.run(model)
        # or: for event in turn.stream(model): ...

``execute`` (your tools) is a plain function here; it runs on the memory's loop thread.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Callable, Coroutine, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memvault.llm.base import ChatMessage, Model, ModelEvent, Tool, ToolCall
from memvault.model import Message, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from memvault.runtime.context import Context
    from memvault.runtime.turn import ToolExecutor, Turn

R = TypeVar("R")
_DONE = object()


class Portal(Protocol):
    def run(self, coroutine: Coroutine[Any, Any, R]) -> R: ...


class SyncTurn:
    """A :class:`memvault.runtime.turn.Turn` without ``await`` (see the module docstring)."""

    def __init__(self, portal: Portal, turn: Turn) -> None:
        self._portal = portal
        self.aio = turn

    def __enter__(self) -> SyncTurn:
        self._portal.run(self.aio.__aenter__())
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._portal.run(self.aio.__aexit__(kind, error, tb))

    # reading

    @property
    def messages(self) -> list[ChatMessage]:
        return self.aio.messages

    @property
    def context(self) -> Context | None:
        return self.aio.context

    @property
    def output(self) -> list[Message]:
        return self.aio.output

    # feeding output by hand (on the loop: the persist queue's timers live there)

    def _on_loop(self, action: Callable[[], None]) -> None:
        async def run() -> None:
            action()

        self._portal.run(run())

    def append_text(self, delta: str, *, agent_id: str | None = None, agent_name: str | None = None) -> None:
        self._on_loop(lambda: self.aio.append_text(delta, agent_id=agent_id, agent_name=agent_name))

    def append_reasoning(self, delta: str, *, agent_id: str | None = None) -> None:
        self._on_loop(lambda: self.aio.append_reasoning(delta, agent_id=agent_id))

    def add_tool_call(self, call: ToolCall | ToolCallPart, *, agent_id: str | None = None) -> None:
        self._on_loop(lambda: self.aio.add_tool_call(call, agent_id=agent_id))

    def add_tool_result(self, result: ToolResultPart) -> None:
        self._on_loop(lambda: self.aio.add_tool_result(result))

    def add_step(self, step: Message, *, agent_id: str | None = None, agent_name: str | None = None) -> None:
        self._on_loop(lambda: self.aio.add_step(step, agent_id=agent_id, agent_name=agent_name))

    # driving a model

    def run(
        self,
        model: Model | None = None,
        *,
        tools: Sequence[Tool] = (),
        execute: Callable[[ToolCall], Any] | None = None,
    ) -> str:
        """See :meth:`memvault.runtime.turn.Turn.run`."""
        return self._portal.run(self.aio.run(model, tools=tools, execute=_async(execute)))

    def stream(
        self,
        model: Model | None = None,
        *,
        tools: Sequence[Tool] = (),
        execute: Callable[[ToolCall], Any] | None = None,
    ) -> Iterator[ModelEvent]:
        """See :meth:`memvault.runtime.turn.Turn.stream`: the events, as they come."""
        events: queue.Queue[Any] = queue.Queue()

        async def pump() -> None:
            try:
                async for event in self.aio.stream(model, tools=tools, execute=_async(execute)):
                    events.put(event)
            except BaseException as error:
                events.put(error)
                raise
            finally:
                events.put(_DONE)

        loop = getattr(self._portal, "loop", None)
        if not isinstance(loop, asyncio.AbstractEventLoop):
            raise TypeError("stream needs the sync memory's event loop")
        future = asyncio.run_coroutine_threadsafe(pump(), loop)
        while (item := events.get()) is not _DONE:
            if isinstance(item, BaseException):
                break
            yield item
        future.result()  # raises what the stream raised


def _async(execute: Callable[[ToolCall], Any] | None) -> ToolExecutor | None:
    if execute is None:
        return None
    run = execute

    async def call(tool: ToolCall) -> Any:
        return run(tool)

    return call
