"""The persist queue: saves a turn's messages while the model streams, and all of them at its end.

Semantics:

- **Debounced.** ``schedule`` (or ``schedule_pending``, which drains a
  :class:`~memvault.runtime.buffer.ConversationBuffer`) only records the newest version of each
  message. The first change after a save arms a timer; ``debounce`` seconds later (default 0.2)
  everything pending is written in one ``save_messages`` call. Later changes do not push the
  timer back, so a steady stream is saved every ``debounce`` seconds and a crash loses at most
  about that much (plus whatever is held back, below).
- **One writer per thread, in order.** Each thread (``resource_id``, ``thread_id``) has one lane:
  its writes run one at a time, each taking what is pending when it starts. Threads write in
  parallel.
- **No tool call without its result in the store.** A message holding a call whose result is
  neither in the same write nor saved before is *dangling*. The ``dangling`` policy decides:

  - ``"hold"`` (the default): the whole message waits until every call in it has its result;
  - ``"strip"``: the message is saved without its dangling call parts (kept in the queue, so the
    full message is saved once the result is there). Less is lost in a crash during a long tool
    call; a reader of the store may see a message whose parts grow in the middle.

  At ``flush(final=True)`` (the end of a turn: calls still without a result will get none) both
  policies save the message with the dangling calls removed (a message of dangling calls only is
  not saved). A message that cannot be saved yet and was never saved also holds back the
  never-saved messages after it, so that the store's ``seq`` order stays the buffer's order.
  (:func:`memvault.rules.history.pair_tool_parts` is not used: it sees only the messages it is given,
  and would drop a result whose call was saved by an earlier write.)
- **Failures lose nothing.** A failed write puts its messages back (unless a newer version
  arrived meanwhile) and is tried again by the next write; ``flush`` raises the error of its own
  write. Background failures are logged as warnings. ``save_messages`` upserts by id, so writing
  a message again, or again after a write whose outcome is unknown, never duplicates it.

Use it as an async context manager, one per turn: leaving the block (normally, on an exception,
or when the task is cancelled) runs ``flush(final=True)`` for every thread it wrote. A queue shared
by concurrent turns ends each turn with ``flush(final=True, thread_id=..., resource_id=...)``::

    async with PersistQueue(memory) as queue:
        async for event in model.stream(...):
            apply(buffer, event)
            queue.schedule_pending(buffer)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Protocol

from memvault.errors import ValidationError
from memvault.model import Message, ToolCallPart
from memvault.runtime.buffer import ConversationBuffer

logger = logging.getLogger(__name__)

Dangling = Literal["hold", "strip"]
SaveHook = Callable[[list[Message]], None]


class MessageWriter(Protocol):
    """What the queue writes through: :class:`memvault.Memory` (or a wrapper of it)."""

    async def save_messages(
        self, messages: Iterable[Message], *, thread_id: str, resource_id: str
    ) -> list[Message]: ...

    async def delete_messages(self, ids: Sequence[str], *, thread_id: str, resource_id: str) -> int: ...


@dataclass(eq=False)
class _Lane:
    """One thread's queue: the newest unsaved version of each message, in first-scheduled order."""

    resource_id: str
    thread_id: str
    pending: dict[str, Message] = field(default_factory=dict)
    saved: set[str] = field(default_factory=set)  # ids known to be in the store
    answered: set[str] = field(default_factory=set)  # call ids whose result is in the store
    stripped: dict[str, Message] = field(default_factory=dict)  # pending versions saved stripped
    buffers: list[ConversationBuffer] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    timer: asyncio.Task[None] | None = None  # set only while the timer sleeps

    def add(self, messages: Iterable[Message]) -> None:
        for message in messages:
            if not isinstance(message, Message):
                raise ValidationError(f"schedule takes Messages, got {type(message).__name__}")
            self.pending[message.id] = message
            if message.seq is not None:  # read from the store: an earlier version is there
                self.saved.add(message.id)

    def known(self, message: Message) -> None:
        """Record that ``message`` (this version or an earlier one) is in the store."""
        self.saved.add(message.id)
        self.answered.update(r.tool_call_id for r in message.tool_results)

    def take(self, mode: Dangling | Literal["final"]) -> tuple[list[Message], list[Message]]:
        """What can be written now: (the pending versions, the versions to save). Messages saved
        in full (and, at ``final``, messages of dangling calls only) leave ``pending``; a message
        saved stripped stays until its calls are answered. See the module doc for what waits."""
        batch = list(self.pending.values())
        while True:
            answered = self.answered | {r.tool_call_id for m in batch for r in m.tool_results}
            chosen: list[Message] = []
            out: list[Message] = []
            blocked = False
            for message in batch:
                new = message.id not in self.saved
                ready = _without_dangling(message, answered, hold=mode == "hold")
                if ready is None and mode == "final":
                    del self.pending[message.id]  # only dangling calls: nothing to save
                    self.stripped.pop(message.id, None)
                elif ready is None or (blocked and new):
                    blocked = blocked or new
                elif mode == "final" or ready is message or self.stripped.get(message.id) is not message:
                    chosen.append(message)
                    out.append(ready)
            if len(chosen) == len(batch) or mode == "final":
                break
            batch = chosen
        for message, ready in zip(chosen, out, strict=True):
            if ready is message or mode == "final":
                del self.pending[message.id]
                self.stripped.pop(message.id, None)
            else:
                self.stripped[message.id] = message
        return chosen, out

    def put_back(self, originals: list[Message]) -> None:
        """After a failed write: its messages go back first, unless a newer version is pending."""
        for message in originals:
            if self.stripped.get(message.id) is message:
                del self.stripped[message.id]
        merged = {m.id: self.pending.pop(m.id, m) for m in originals}
        merged.update(self.pending)
        self.pending = merged


def _without_dangling(message: Message, answered: set[str], *, hold: bool) -> Message | None:
    """``message`` as it may be saved: as is when no call dangles; else ``None`` when holding,
    or a copy without the dangling calls (``None`` when nothing is left)."""
    parts = [p for p in message.parts if not isinstance(p, ToolCallPart) or p.tool_call_id in answered]
    if len(parts) == len(message.parts):
        return message
    if hold or not parts:
        return None
    return message.model_copy(update={"parts": parts})


class PersistQueue:
    """Debounced, ordered saving of messages to ``memory`` (a :class:`memvault.Memory`); see
    the module doc.

    ``debounce``: seconds from the first unsaved change to its write (default 0.2; 0 writes on
    the next loop iteration). ``dangling``: ``"hold"`` (default) or ``"strip"``. ``on_save`` is
    called after each successful write with the saved messages (with their ``seq``)."""

    def __init__(
        self,
        memory: MessageWriter,
        *,
        debounce: float = 0.2,
        dangling: Dangling = "hold",
        on_save: SaveHook | None = None,
    ) -> None:
        if isinstance(debounce, bool) or not isinstance(debounce, int | float) or not debounce >= 0:
            raise ValidationError(f"debounce must be a number of seconds >= 0, got {debounce!r}")
        if dangling not in ("hold", "strip"):
            raise ValidationError(f"dangling must be 'hold' or 'strip', got {dangling!r}")
        self.memory = memory
        self.debounce = float(debounce)
        self.dangling: Dangling = dangling
        self.on_save = on_save
        self._lanes: dict[tuple[str, str], _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # scheduling

    def schedule(self, messages: Iterable[Message], *, thread_id: str, resource_id: str) -> None:
        """Queue these versions of ``messages`` for the thread (a later version of an id replaces
        an earlier one) and arm the debounce timer. Needs a running event loop."""
        lane = self._lane(resource_id, thread_id)
        lane.add(messages)
        self._arm(lane)

    def schedule_pending(self, buffer: ConversationBuffer) -> None:
        """Queue the buffer's pending messages (:meth:`ConversationBuffer.drain_pending`). The
        queue remembers the buffer: every ``flush`` drains it first, so nothing it holds is
        missed even when the caller fails before its next ``schedule_pending``."""
        lane = self._lane(buffer.resource_id, buffer.thread_id)
        if not any(b is buffer for b in lane.buffers):
            lane.buffers.append(buffer)
            for message in buffer.messages:  # the seed: already in the store
                if message.seq is not None:
                    lane.known(message)
        lane.add(buffer.drain_pending())
        self._arm(lane)

    def unsaved(self, *, thread_id: str, resource_id: str) -> list[Message]:
        """The thread's messages waiting to be written (not counting undrained buffer changes)."""
        lane = self._lanes.get((resource_id, thread_id))
        return [] if lane is None else list(lane.pending.values())

    # writing

    async def flush(
        self, *, final: bool = False, thread_id: str | None = None, resource_id: str | None = None
    ) -> None:
        """Write everything that may be written now and wait for it; only the given thread (or
        resource) when named. ``final=True`` ends a turn: dangling calls are removed from the
        saved messages, and a retried turn's :meth:`ConversationBuffer.stale_ids` are deleted.
        Raises the first failed write's error (its messages stay queued for the next try)."""
        lanes = [
            lane for (resource, thread), lane in self._lanes.items()
            if thread_id in (None, thread) and resource_id in (None, resource)
        ]
        for lane in lanes:
            if lane.timer is not None:  # sleeping: this flush does its work
                lane.timer.cancel()
                lane.timer = None
            for buffer in lane.buffers:
                lane.add(buffer.drain_pending())
        outcomes = await asyncio.gather(*(self._write(lane, final) for lane in lanes), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def aclose(self) -> None:
        """``flush(final=True)`` for every thread, then wait for the background writes to end."""
        try:
            await self.flush(final=True)
        finally:
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> PersistQueue:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close (final flush), shielded from a cancellation of the task: a cancelled turn is
        flushed too. Cancelled again during the flush, the flush goes on in the background. When
        the block raised, a failing flush is logged and noted on the block's error, not raised."""
        closing = asyncio.ensure_future(self.aclose())
        try:
            await asyncio.shield(closing)
        except Exception as exc:
            if error is None:
                raise
            logger.warning("memvault: the final flush failed after an error: %r", exc)
            error.add_note(f"memvault: the final flush failed too: {exc!r}")

    # internals

    def _lane(self, resource_id: str, thread_id: str) -> _Lane:
        key = (resource_id, thread_id)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(resource_id, thread_id)
        return lane

    def _arm(self, lane: _Lane) -> None:
        if lane.timer is None and lane.pending:
            lane.timer = task = asyncio.get_running_loop().create_task(self._later(lane))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _later(self, lane: _Lane) -> None:
        await asyncio.sleep(self.debounce)
        lane.timer = None  # from here on, a flush no longer cancels this task
        try:
            await self._write(lane, final=False)
        except Exception as exc:
            logger.warning(
                "memvault: saving thread %r failed, will retry on the next write: %r", lane.thread_id, exc
            )

    async def _write(self, lane: _Lane, final: bool) -> None:
        async with lane.lock:
            originals, batch = lane.take("final" if final else self.dangling)
            if batch:
                try:
                    saved = await self.memory.save_messages(
                        batch, thread_id=lane.thread_id, resource_id=lane.resource_id
                    )
                except BaseException:
                    lane.put_back(originals)
                    raise
                for message in saved:
                    lane.known(message)
                if self.on_save is not None:
                    self.on_save(saved)
            if final and not lane.pending:
                await self._delete_stale(lane)

    async def _delete_stale(self, lane: _Lane) -> None:
        for buffer in lane.buffers:
            if stale := buffer.stale_ids():
                await self.memory.delete_messages(
                    stale, thread_id=lane.thread_id, resource_id=lane.resource_id
                )
                buffer.forget_stale()

