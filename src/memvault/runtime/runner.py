"""The short way to run turns: a :class:`Runtime` over a memory, with one model and one owner of
the turns' background work.

::

    async with Runtime(memory, model=model) as runtime:
        async with runtime.turn(thread_id="t1", resource_id="ada", user_message="Hi") as turn:
            answer = await turn.run()
    # leaving the runtime waits for the titles and summaries (the memory stays open)

A :class:`~memvault.runtime.turn.Turn` can also be made directly (``Turn(memory, ...)``); the
runtime only saves repeating the model, the options and the owner of background work.
"""

from __future__ import annotations

from types import TracebackType

from memvault.llm.base import Model
from memvault.memory import Memory
from memvault.model import Message
from memvault.runtime.tasks import BackgroundTasks
from memvault.runtime.turn import Turn, TurnOptions


class Runtime:
    """Turns over ``memory`` (see the module docstring). ``model`` is each turn's default model
    and the model of titles and summaries unless ``summary_model`` is given; ``options``
    (default :class:`TurnOptions`) applies to every turn that gives none. ``tasks`` is the
    :class:`BackgroundTasks` the turns share (a new one by default)."""

    def __init__(
        self,
        memory: Memory,
        *,
        model: Model | None = None,
        summary_model: Model | None = None,
        options: TurnOptions | None = None,
        tasks: BackgroundTasks | None = None,
    ) -> None:
        self.memory = memory
        self.model = model
        self.summary_model = summary_model
        self.options = options
        self.tasks = tasks if tasks is not None else BackgroundTasks(memory)

    def turn(
        self,
        *,
        thread_id: str,
        resource_id: str,
        user_message: Message | str,
        model: Model | None = None,
        summary_model: Model | None = None,
        options: TurnOptions | None = None,
    ) -> Turn:
        """One turn, as an async context manager (:mod:`memvault.runtime.turn`); the arguments
        given here override the runtime's."""
        return Turn(self.memory, thread_id=thread_id, resource_id=resource_id, user_message=user_message,
                    model=model or self.model, summary_model=summary_model or self.summary_model,
                    options=options or self.options, tasks=self.tasks)

    async def flush(self) -> None:
        """Wait for the turns' background work (titles, summaries) and the memory's embedding."""
        await self.tasks.flush()

    async def close(self) -> None:
        """:meth:`flush`, then refuse new background work; the memory stays open."""
        await self.tasks.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
