"""The turn helper: everything memory does around one model call, in one ``async with``.

::

    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="Hi, I'm Ada") as turn:
        answer = await turn.run(model)          # or drive the model yourself, see below

(:class:`memvault.runtime.Runtime` starts turns with a shared model and one owner of their
background work: ``runtime.turn(thread_id=..., resource_id=..., user_message=...)``.)

Entering the block:

1. the thread is created if it is new, and the user's message is saved at once (durable before
   the model is called);
2. the context is assembled (:func:`memvault.runtime.context.assemble`): instructions with the working
   memory, the summary, recalled messages marked with where and when, and the history window,
   within the token budget, as OpenAI chat messages in :attr:`Turn.messages`.

Inside it, the model's output goes through a :class:`~memvault.runtime.buffer.ConversationBuffer`
(steps merge, results pair with their calls) and a debounced
:class:`~memvault.runtime.persist.PersistQueue` (one writer per thread; a crash loses at most the
debounce window and never leaves a call without its result in the store). Either call
:meth:`Turn.run` / :meth:`Turn.stream` with a :class:`~memvault.llm.base.Model` (they execute the
memory tools, and your own tools through ``execute``), or feed output yourself with
:meth:`Turn.append_text`, :meth:`Turn.add_tool_call`, :meth:`Turn.add_tool_result`, ...

Leaving the block flushes everything (also on an exception or a cancellation). Then, in the
background and never blocking the turn: a title for a new thread (from its first user message)
and a summary when the thread has grown past ``trigger_tokens``, run by the turn's
:class:`~memvault.runtime.tasks.BackgroundTasks` (``tasks=``; by default one of its own, at
:attr:`Turn.tasks`): ``await turn.tasks.flush()`` waits for them. A failing title or summary is
logged; it never fails the turn.

**Reads.** Entering reads the thread's newest messages (for a retry and the history window),
its summary and the working-memory note in one call (:meth:`memvault.Memory.read_turn`), saves
the user's message, then recall reads its full-text hits and their neighbours through one
:class:`~memvault.recall.RecallReader`: four store calls before the model runs, on a store with
:class:`~memvault.stores.capabilities.BatchReads` (the built-in ones).

**Retries.** The turn's id is the user message's id; the messages the turn creates get ids
derived from it (``f"{turn_id}-a0"``, ...). Entering a turn again with the same user message
(the same ``Message`` id) replaces the failed attempt's output instead of duplicating it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from memvault.errors import ValidationError
from memvault.formats.openai_chat import to_openai
from memvault.llm.base import (
    ChatMessage,
    Finish,
    Model,
    ModelEvent,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallEvent,
    Usage,
)
from memvault.memory import Memory
from memvault.model import Message, ToolCallPart, ToolResultPart, valid_id
from memvault.runtime.buffer import TURN_ID, ConversationBuffer
from memvault.runtime.context import Context, ContextOptions, assemble
from memvault.runtime.persist import PersistQueue
from memvault.runtime.summaries import SummaryOptions, summarize_if_needed
from memvault.runtime.tasks import BackgroundTasks
from memvault.runtime.titles import make_title
from memvault.runtime.tools import MemoryTools
from memvault.telemetry import traced

logger = logging.getLogger("memvault.turn")

ToolExecutor = Callable[[ToolCall], Awaitable[Any]]
"""Runs one of your tools: returns its output (JSON-ready or text); raising makes an error result."""

RETRY_LOOKBACK = 50
"""How many of the thread's newest messages are checked for a failed attempt of the turn."""


@dataclass(frozen=True)
class TurnOptions:
    """What a turn does around the model.

    - ``context``: how the input is assembled (:class:`memvault.runtime.context.ContextOptions`).
    - ``summaries`` (default :class:`memvault.runtime.summaries.SummaryOptions`, i.e. at 170,000
      tokens keep the last 6 messages): ``None`` never summarises. Needs a model.
    - ``titles`` (default ``True``): title a new thread from its first user message. Needs a model.
    - ``debounce`` (default 0.2 s): the persist queue's debounce while streaming.
    - ``max_steps`` (default 8): model calls :meth:`Turn.stream` makes in one turn (each tool
      round trip is one more).
    """

    context: ContextOptions = field(default_factory=ContextOptions)
    summaries: SummaryOptions | None = field(default_factory=SummaryOptions)
    titles: bool = True
    debounce: float = 0.2
    max_steps: int = 8

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValidationError("max_steps must be at least 1")


class _Recorder:
    """The memory as the persist queue writes to it, keeping what was saved (with its ``seq``)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.saved: list[Message] = []

    async def save_messages(self, messages: Iterable[Message], *, thread_id: str,
                            resource_id: str) -> list[Message]:
        saved = await self.memory.save_messages(messages, thread_id=thread_id, resource_id=resource_id)
        self.saved.extend(saved)
        return saved

    async def delete_messages(self, ids: Sequence[str], *, thread_id: str, resource_id: str) -> int:
        return await self.memory.delete_messages(ids, thread_id=thread_id, resource_id=resource_id)


class Turn:
    """One turn of one thread; use ``async with Turn(memory, ...)`` (see the module docstring).

    ``model`` is the default for :meth:`run` / :meth:`stream` and the model of titles and
    summaries (``summary_model`` overrides it for summaries and titles, e.g. a cheaper one).
    ``tasks`` runs the title and summary after the turn (default: the turn's own).
    """

    def __init__(
        self,
        memory: Memory,
        *,
        thread_id: str,
        resource_id: str,
        user_message: Message | str,
        model: Model | None = None,
        summary_model: Model | None = None,
        options: TurnOptions | None = None,
        tasks: BackgroundTasks | None = None,
    ) -> None:
        thread_id, resource_id = valid_id(thread_id, "thread_id"), valid_id(resource_id, "resource_id")
        if isinstance(user_message, str):
            user_message = Message.user(user_message)
        if not isinstance(user_message, Message) or user_message.role != "user":
            raise ValidationError("user_message must be a string or a Message with role 'user'")
        self.memory = memory
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.user_message = user_message
        self.turn_id = user_message.id
        self.model = model
        self.summary_model = summary_model or model
        self.options = options or TurnOptions()
        self.tasks = tasks if tasks is not None else BackgroundTasks(memory)
        self.tools = MemoryTools(memory, resource_id=resource_id, thread_id=thread_id)
        self.usage = Usage()
        self.context: Context | None = None
        self._buffer: ConversationBuffer | None = None
        self._queue: PersistQueue | None = None

    # entering and leaving

    async def __aenter__(self) -> Turn:
        await self._begin()
        return self

    @traced("turn")
    async def _begin(self) -> None:
        memory = self.memory
        lookback = max(RETRY_LOOKBACK, self._window_size())
        read = await memory.read_turn(thread_id=self.thread_id, resource_id=self.resource_id, last_n=lookback)
        recent = read.messages
        retry = any(m.metadata.get(TURN_ID) == self.turn_id for m in recent)
        self._buffer = ConversationBuffer(self.thread_id, self.resource_id, recent, turn_id=self.turn_id,
                                          retry=retry)
        self._buffer.add_user(self.user_message)
        writer = _Recorder(memory)
        self._queue = PersistQueue(writer, debounce=self.options.debounce)
        self._queue.schedule_pending(self._buffer)
        # the user's message is durable before the model runs (saving creates a new thread)
        await self._queue.flush()
        reader = memory.recall_reader(self.resource_id)
        tail = _tail(recent, writer.saved, self.user_message.id, retry)
        if tail is not None:
            reader.preload_tail(self.thread_id, tail, complete=len(recent) < lookback)
        reader.preload_note(self.thread_id, read.note)
        self.context = await assemble(memory, thread_id=self.thread_id, resource_id=self.resource_id,
                                      query=self.user_message.text, options=self.options.context,
                                      reader=reader, summary=read.summary)

    def _window_size(self) -> int:
        """How many of the newest messages the history window may take."""
        recall = self.options.context.recall_options or self.memory.options.recall
        if self.options.context.recall and recall.last_n is not None:
            return recall.last_n
        return self.memory.options.history.last_n

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._queue is not None:
            await self._queue.__aexit__(kind, error, tb)
        if error is None:
            self._after_turn()

    def _after_turn(self) -> None:
        """Title and summary, in the background (see the module docstring)."""
        model = self.summary_model
        if model is None:
            return
        if self.options.titles and self._first_user_message():
            self.tasks.spawn(self._title(model), name="title")
        if self.options.summaries is not None:
            self.tasks.spawn(
                summarize_if_needed(self.memory, model, thread_id=self.thread_id,
                                    resource_id=self.resource_id, options=self.options.summaries),
                name="summary",
            )

    def _first_user_message(self) -> bool:
        users = [m for m in self.buffer.messages if m.role == "user"]
        return len(users) == 1

    async def _title(self, model: Model) -> None:
        """Title the thread from its first user message, unless it has a title already."""
        thread = await self.memory.get_thread(thread_id=self.thread_id, resource_id=self.resource_id)
        if thread is None or thread.title is not None:
            return
        title = await make_title(model, self.user_message.text)
        if title:
            thread = await self.memory.get_thread(thread_id=self.thread_id, resource_id=self.resource_id)
            if thread is not None and thread.title is None:
                await self.memory.update_thread(thread_id=self.thread_id, resource_id=self.resource_id,
                                                title=title)

    # what the model sees

    @property
    def buffer(self) -> ConversationBuffer:
        if self._buffer is None:
            raise RuntimeError("use the turn inside `async with Turn(...)`")
        return self._buffer

    @property
    def output(self) -> list[Message]:
        """The messages this turn produced so far (after the user's message)."""
        messages = self.buffer.messages
        ids = [m.id for m in messages]
        return messages[ids.index(self.user_message.id) + 1:]

    @property
    def messages(self) -> list[ChatMessage]:
        """The model's input now: the assembled context, then this turn's output so far."""
        if self.context is None:
            raise RuntimeError("use the turn inside `async with Turn(...)`")
        return [*self.context.messages, *to_openai(self.output)]

    # feeding output by hand

    def append_text(self, delta: str, *, agent_id: str | None = None, agent_name: str | None = None) -> None:
        """A piece of the answer's text (steps merge into one assistant message)."""
        self.buffer.append_text(delta, agent_id=agent_id, agent_name=agent_name)
        self._schedule()

    def append_reasoning(self, delta: str, *, agent_id: str | None = None) -> None:
        """A piece of the model's reasoning."""
        self.buffer.append_reasoning(delta, agent_id=agent_id)
        self._schedule()

    def add_tool_call(self, call: ToolCall | ToolCallPart, *, agent_id: str | None = None) -> None:
        """A tool call the model made."""
        if isinstance(call, ToolCall):
            call = ToolCallPart(tool_call_id=call.id, name=call.name, args=call.args)
        self.buffer.add_tool_call(call, agent_id=agent_id)
        self._schedule()

    def add_tool_result(self, result: ToolResultPart) -> None:
        """A tool's result; it joins its call's message."""
        self.buffer.add_tool_result(result)
        self._schedule()

    def add_step(self, step: Message, *, agent_id: str | None = None, agent_name: str | None = None) -> None:
        """A whole assistant step (e.g. from a sub-agent: give its ``agent_id`` and name)."""
        self.buffer.add_step(step, agent_id=agent_id, agent_name=agent_name)
        self._schedule()

    def add(self, message: Message) -> None:
        """A whole message of any role, as it is (e.g. replaying a transcript): it never merges
        with the open assistant message."""
        self.buffer.add(message)
        self._schedule()

    def _schedule(self) -> None:
        assert self._queue is not None
        self._queue.schedule_pending(self.buffer)

    # driving a model

    async def stream(
        self,
        model: Model | None = None,
        *,
        tools: Sequence[Tool] = (),
        execute: ToolExecutor | None = None,
    ) -> AsyncIterator[ModelEvent]:
        """Call the model, feed its output through the buffer and queue, and yield its events.

        Memory tools are offered and run here; ``tools`` are yours, run by ``execute`` (its
        return value is the result; an exception becomes an error result). After tool results
        the model is called again, up to ``max_steps`` calls. A call to one of your tools with
        no ``execute`` ends the stream: the call stays in the buffer for you to answer with
        :meth:`add_tool_result`."""
        model = model or self.model
        if model is None:
            raise ValidationError("no model: pass one to Turn(model=...) or to stream()")
        offered = [*self.tools.definitions(), *tools]
        for _ in range(self.options.max_steps):
            response: ModelResponse | None = None
            async for event in model.stream(self.messages, tools=offered):
                if isinstance(event, TextDelta):
                    self.append_text(event.text)
                elif isinstance(event, ReasoningDelta):
                    self.append_reasoning(event.text)
                elif isinstance(event, ToolCallEvent):
                    self.add_tool_call(event.call)
                elif isinstance(event, Finish):
                    response = event.response
                yield event
            if response is not None:
                self.usage = Usage(self.usage.input_tokens + response.usage.input_tokens,
                                   self.usage.output_tokens + response.usage.output_tokens)
            calls = list(response.tool_calls) if response is not None else []
            if not calls or not await self._answer(calls, execute):
                return

    async def _answer(self, calls: list[ToolCall], execute: ToolExecutor | None) -> bool:
        """Run the calls; ``False`` when one is not ours to run (the stream then ends)."""
        for call in calls:
            if self.tools.handles(call.name):
                self.add_tool_result(await self.tools.execute(call))
            elif execute is not None:
                try:
                    output = await execute(call)
                    self.add_tool_result(ToolResultPart(tool_call_id=call.id, name=call.name, output=output))
                except asyncio.CancelledError:
                    raise
                except Exception as error:  # the tool failed: tell the model, not the caller
                    logger.warning("tool %s failed: %r", call.name, error)
                    self.add_tool_result(ToolResultPart(tool_call_id=call.id, name=call.name,
                                                        output=f"{type(error).__name__}: {error}",
                                                        is_error=True))
            else:
                return False
        return True

    async def run(
        self,
        model: Model | None = None,
        *,
        tools: Sequence[Tool] = (),
        execute: ToolExecutor | None = None,
    ) -> str:
        """:meth:`stream` to the end; returns the text of the last model call."""
        text: list[str] = []
        async for event in self.stream(model, tools=tools, execute=execute):
            if isinstance(event, Finish):
                text = [event.response.text]
        return "".join(text)


def _tail(recent: list[Message], saved: list[Message], user_id: str, retry: bool) -> list[Message] | None:
    """The thread's newest messages after the user's message was saved, from what the turn read
    and saved, or ``None`` when they cannot be known without reading again (a retry, or another
    writer saved between the read and the save)."""
    mine = [m for m in saved if m.id == user_id]
    if retry or not mine or any(m.id == user_id for m in recent):
        return None
    last = recent[-1].seq if recent else 0
    if last is None or mine[0].seq != last + 1:
        return None
    return [*recent, mine[0]]
