"""The conversation buffer: a thread's messages as one turn of the model streams in.

The buffer holds the history it was seeded with plus what the turn adds, in order, and knows
which messages changed since they were last handed to the persist queue (*pending*).

Semantics:

- **Steps merge.** Consecutive assistant output (``add_step``, ``append_text``,
  ``append_reasoning``, ``add_tool_call``) of one agent goes into one assistant message, the
  *open* one; it keeps the id it was created with. A user, system or tool message, a whole
  message added with ``add``, another agent's output or ``start_turn`` closes it, and the next
  assistant output starts a new message. Seeded messages are never open.
- **Text deltas** extend the last part of the open message when it is a text part (reasoning
  deltas: a reasoning part); otherwise they start a new part. Text after a tool call is a new part.
- **Tool results pair with their calls.** ``add_tool_result`` finds its call through an index
  (call id → message and position, one dict lookup) and places the result in the *same* message,
  right after the call, so a call and its result are always saved together. A result whose call
  the buffer does not know raises :class:`UnknownToolCallError`. A second result for a call
  replaces the first.
- **Sub-agents.** Output given ``agent_id`` (and optionally ``agent_name``) goes into messages
  whose ``metadata["agent_id"]`` / ``metadata["agent_name"]`` say so; one agent's output never
  merges into another agent's message. :func:`timeline` reads the order back.
- **Deterministic ids.** With a ``turn_id``, the messages the buffer creates are named
  ``f"{turn_id}-a{n}"`` (assistant) and ``f"{turn_id}-u{n}"`` (``add_user`` given a string), n
  counting from 0 and skipping ids the buffer already holds, and every message the turn adds is
  tagged ``metadata["turn_id"]``. A retried turn therefore produces the same ids, and the store
  (which upserts by id) overwrites the failed attempt instead of duplicating it. Seed a retry with
  ``retry=True``: the seed's messages of that turn (the failed attempt) are dropped, and the ids
  the new attempt does not produce again are reported by :meth:`ConversationBuffer.stale_ids`.

Example::

    buffer = ConversationBuffer("t1", "ada", history, turn_id="turn-7")
    buffer.add_user("What's the weather in Paris?")
    buffer.append_text("Let me check. ")
    buffer.add_tool_call(ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Paris"}))
    buffer.add_tool_result(ToolResultPart(tool_call_id="c1", output={"temp": 21}))
    buffer.append_text("It is 21°C.")
    queue.schedule(buffer.drain_pending(), thread_id="t1", resource_id="ada")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memvault.errors import ValidationError
from memvault.model import (
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    check_text,
    new_id,
    valid_id,
)

AGENT_ID = "agent_id"
AGENT_NAME = "agent_name"
TURN_ID = "turn_id"
CHECKPOINT_VERSION = 1


class UnknownToolCallError(ValidationError):
    """A tool result names a call the buffer does not hold (add the call first)."""

    def __init__(self, tool_call_id: str) -> None:
        super().__init__(
            f"tool result for {tool_call_id!r}: the buffer has no tool call with this id; "
            "add the call (add_tool_call or add_step) before its result"
        )
        self.tool_call_id = tool_call_id


def _delta(value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"a delta must be a string, got {type(value).__name__}")
    try:
        return check_text(value)
    except ValueError as exc:
        raise ValidationError(f"delta: {exc}") from None


@dataclass(eq=False)
class _Entry:
    """One message of the buffer. Results of the message's own calls are kept aside in
    ``results`` and placed right after their call when the message is built, so positions in
    ``parts`` never shift (the call index stays valid) and pairing costs O(1)."""

    message: Message
    parts: list[Part]
    results: dict[str, ToolResultPart] = field(default_factory=dict)
    stale: bool = False

    @classmethod
    def of(cls, message: Message) -> _Entry:
        calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
        entry = cls(message, [])
        for part in message.parts:
            if isinstance(part, ToolResultPart) and part.tool_call_id in calls \
                    and part.tool_call_id not in entry.results:
                entry.results[part.tool_call_id] = part
            else:
                entry.parts.append(part)
        return entry

    def build(self) -> Message:
        """The message with its current parts (rebuilt only after a change)."""
        if self.stale:
            parts: list[Part] = []
            for part in self.parts:
                parts.append(part)
                if isinstance(part, ToolCallPart) and (result := self.results.get(part.tool_call_id)):
                    parts.append(result)
            self.message = self.message.model_copy(update={"parts": parts})
            self.stale = False
        return self.message


class ConversationBuffer:
    """A thread's messages while a turn streams in; see the module doc for the semantics.

    ``messages`` seeds the buffer (the history, in thread order; not pending). ``turn_id`` turns
    on deterministic ids; ``retry=True`` drops the seed's messages of ``turn_id``."""

    def __init__(
        self,
        thread_id: str,
        resource_id: str,
        messages: Sequence[Message] = (),
        *,
        turn_id: str | None = None,
        retry: bool = False,
    ) -> None:
        self.thread_id = valid_id(thread_id, "thread_id")
        self.resource_id = valid_id(resource_id, "resource_id")
        self.turn_id: str | None = None
        self._entries: list[_Entry] = []
        self._position: dict[str, int] = {}
        self._calls: dict[str, tuple[_Entry, int]] = {}
        self._unanswered: dict[str, ToolCallPart] = {}
        self._pending: set[str] = set()
        self._open: tuple[str, str | None] | None = None
        self._dropped: dict[str, None] = {}
        for message in messages:
            if not isinstance(message, Message):
                raise ValidationError(f"the seed must hold Messages, got {type(message).__name__}")
            if retry and turn_id is not None and message.metadata.get(TURN_ID) == turn_id:
                self._dropped[message.id] = None
            else:
                self._put(message, pending=False)
        self.start_turn(turn_id)

    # reading

    @property
    def messages(self) -> list[Message]:
        """Every message, in order (the seed, then what the turns added). The messages are the
        buffer's own: copy before changing one."""
        return [entry.build() for entry in self._entries]

    def get(self, message_id: str) -> Message | None:
        """The message with this id, or ``None``."""
        position = self._position.get(message_id)
        return None if position is None else self._entries[position].build()

    @property
    def has_pending(self) -> bool:
        """Whether some message changed since the last :meth:`drain_pending`."""
        return bool(self._pending)

    def pending_tool_calls(self) -> list[ToolCallPart]:
        """The tool calls without a result yet, in the order they were added."""
        return list(self._unanswered.values())

    def stale_ids(self) -> list[str]:
        """Ids of a failed attempt's messages (dropped from the seed by ``retry=True``) that this
        attempt has not produced again: they are still in the store, and no longer belong."""
        return [i for i in self._dropped if i not in self._position]

    def forget_stale(self) -> None:
        """Forget :meth:`stale_ids` (after deleting them from the store)."""
        self._dropped.clear()

    def drain_pending(self) -> list[Message]:
        """Each message changed since the last drain, once, in buffer order, as deep copies.
        Only the marks are cleared: the messages stay in the buffer."""
        ids = sorted(self._pending, key=self._position.__getitem__)
        self._pending.clear()
        return [self._entries[self._position[i]].build().model_copy(deep=True) for i in ids]

    # adding whole messages

    def start_turn(self, turn_id: str | None) -> None:
        """Begin a turn: close the open assistant message; new ids derive from ``turn_id``."""
        self.turn_id = None if turn_id is None else valid_id(turn_id, "turn_id")
        self._open = None

    def add(self, message: Message) -> str:
        """Add a whole message of any role; returns its id. An id the buffer holds already is
        replaced in place (as the store does). Closes the open assistant message."""
        if not isinstance(message, Message):
            raise ValidationError(f"add takes a Message, got {type(message).__name__}")
        self._open = None
        return self._put(self._tagged(message)).message.id

    def add_user(self, message: Message | str) -> str:
        """Add the user's message (a string becomes a text message, ``f"{turn_id}-u{n}"`` with a
        turn id); returns its id."""
        if isinstance(message, str):
            message = Message.user(message, id=self._next_id("u"))
        elif not isinstance(message, Message) or message.role != "user":
            raise ValidationError("add_user takes a string or a Message with role 'user'")
        return self.add(message)

    # assistant output

    def add_step(self, step: Message, *, agent_id: str | None = None, agent_name: str | None = None) -> str:
        """Add one assistant step: its parts are appended to the open message of this agent (a
        new message if none is open; it takes the step's id, or ``f"{turn_id}-a{n}"``, and
        ``created_at``). The step's metadata is merged in. Returns the message id."""
        if not isinstance(step, Message) or step.role != "assistant":
            raise ValidationError("add_step takes a Message with role 'assistant'")
        own = {p.tool_call_id for p in step.parts if isinstance(p, ToolCallPart)}
        for part in step.parts:  # check before changing anything
            if isinstance(part, ToolResultPart) and part.tool_call_id not in own | self._calls.keys():
                raise UnknownToolCallError(part.tool_call_id)
        entry = self._assistant(agent_id, agent_name, step)
        if step.metadata:
            entry.message = entry.message.model_copy(update={"metadata": {**entry.message.metadata,
                                                                          **step.metadata}})
        for part in step.parts:
            if isinstance(part, ToolCallPart):
                self._call(entry, part)
            elif isinstance(part, ToolResultPart):
                self.add_tool_result(part)
            else:
                entry.parts.append(part)
        return self._touch(entry)

    def append_text(self, delta: str, *, agent_id: str | None = None, agent_name: str | None = None) -> str:
        """Append a text delta to the open message (see the module doc); returns its id."""
        delta = _delta(delta)
        entry = self._assistant(agent_id, agent_name)
        last = entry.parts[-1] if entry.parts else None
        if isinstance(last, TextPart):
            entry.parts[-1] = TextPart.model_construct(text=last.text + delta)
        else:
            entry.parts.append(TextPart(text=delta))
        return self._touch(entry)

    def append_reasoning(
        self,
        delta: str,
        *,
        signature: str | None = None,
        agent_id: str | None = None,
        agent_name: str | None = None,
    ) -> str:
        """Append a reasoning delta (and set its ``signature`` when given); returns the id."""
        delta = _delta(delta)
        sign = None if signature is None else _delta(signature)
        entry = self._assistant(agent_id, agent_name)
        last = entry.parts[-1] if entry.parts else None
        if isinstance(last, ReasoningPart):
            entry.parts[-1] = ReasoningPart.model_construct(
                text=last.text + delta, signature=last.signature if sign is None else sign
            )
        else:
            entry.parts.append(ReasoningPart(text=delta, signature=sign))
        return self._touch(entry)

    def add_tool_call(
        self, call: ToolCallPart, *, agent_id: str | None = None, agent_name: str | None = None
    ) -> str:
        """Append a tool call to the open message; returns its id. Call ids are unique in a buffer."""
        if not isinstance(call, ToolCallPart):
            raise ValidationError(f"add_tool_call takes a ToolCallPart, got {type(call).__name__}")
        entry = self._assistant(agent_id, agent_name)
        self._call(entry, call)
        return self._touch(entry)

    def add_tool_result(self, result: ToolResultPart) -> str:
        """Place a result right after its call, in the call's message (any agent's, even a
        seeded one); returns that message's id. Unknown call: :class:`UnknownToolCallError`."""
        if not isinstance(result, ToolResultPart):
            raise ValidationError(f"add_tool_result takes a ToolResultPart, got {type(result).__name__}")
        found = self._calls.get(result.tool_call_id)
        if found is None:
            raise UnknownToolCallError(result.tool_call_id)
        entry = found[0]
        entry.results[result.tool_call_id] = result
        self._unanswered.pop(result.tool_call_id, None)
        return self._touch(entry)

    # checkpoints

    def checkpoint(self) -> dict[str, Any]:
        """The whole buffer as JSON-ready data (messages as dicts, pending ids, the open message,
        the turn); :meth:`restore` rebuilds an equal buffer."""
        return {
            "version": CHECKPOINT_VERSION,
            "thread_id": self.thread_id,
            "resource_id": self.resource_id,
            "turn_id": self.turn_id,
            "messages": [m.model_dump(mode="json") for m in self.messages],
            "pending": sorted(self._pending, key=self._position.__getitem__),
            "open": None if self._open is None else list(self._open),
            "stale": list(self._dropped),
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> ConversationBuffer:
        """A buffer from :meth:`checkpoint` data; malformed data raises ValidationError."""
        if not isinstance(data, Mapping) or data.get("version") != CHECKPOINT_VERSION:
            raise ValidationError(f"not a buffer checkpoint of version {CHECKPOINT_VERSION}")
        try:
            messages = [Message.parse(m) for m in data["messages"]]
            buffer = cls(data["thread_id"], data["resource_id"], messages, turn_id=data["turn_id"])
            pending = [str(i) for i in data["pending"]]
            stale = [str(i) for i in data["stale"]]
            opened = data["open"]
        except (KeyError, TypeError) as exc:
            raise ValidationError(f"malformed buffer checkpoint: {exc!r}") from None
        if unknown := [i for i in pending if i not in buffer._position]:
            raise ValidationError(f"checkpoint marks unknown messages pending: {unknown}")
        buffer._pending.update(pending)
        buffer._dropped = dict.fromkeys(stale)
        if opened is not None:
            if opened[0] not in buffer._position:
                raise ValidationError(f"checkpoint's open message {opened[0]!r} is not in it")
            buffer._open = (opened[0], opened[1])
        return buffer

    # internals

    def _put(self, message: Message, *, pending: bool = True) -> _Entry:
        entry = _Entry.of(message)
        position = self._position.get(message.id)
        if position is None:
            self._position[message.id] = len(self._entries)
            self._entries.append(entry)
        else:
            self._forget_calls(self._entries[position])
            self._entries[position] = entry
        for index, part in enumerate(entry.parts):
            if isinstance(part, ToolCallPart):
                self._calls[part.tool_call_id] = (entry, index)
                if part.tool_call_id not in entry.results:
                    self._unanswered[part.tool_call_id] = part
            elif isinstance(part, ToolResultPart):
                self._unanswered.pop(part.tool_call_id, None)
        if pending:
            self._pending.add(message.id)
        return entry

    def _forget_calls(self, entry: _Entry) -> None:
        for part in entry.parts:
            if isinstance(part, ToolCallPart):
                found = self._calls.get(part.tool_call_id)
                if found is not None and found[0] is entry:
                    del self._calls[part.tool_call_id]
                    self._unanswered.pop(part.tool_call_id, None)

    def _call(self, entry: _Entry, call: ToolCallPart) -> None:
        if call.tool_call_id in self._calls:
            raise ValidationError(f"tool call id {call.tool_call_id!r} is already in the buffer")
        self._calls[call.tool_call_id] = (entry, len(entry.parts))
        self._unanswered[call.tool_call_id] = call
        entry.parts.append(call)

    def _touch(self, entry: _Entry) -> str:
        entry.stale = True
        self._pending.add(entry.message.id)
        return entry.message.id

    def _tagged(self, message: Message) -> Message:
        if self.turn_id is None or message.metadata.get(TURN_ID) == self.turn_id:
            return message
        return message.model_copy(update={"metadata": {**message.metadata, TURN_ID: self.turn_id}})

    def _next_id(self, kind: str) -> str:
        if self.turn_id is None:
            return new_id()
        n = 0
        while f"{self.turn_id}-{kind}{n}" in self._position:
            n += 1
        return f"{self.turn_id}-{kind}{n}"

    def _assistant(self, agent_id: str | None, agent_name: str | None, step: Message | None = None) -> _Entry:
        """The open assistant message of ``agent_id``, or a new one (which becomes the open one)."""
        agent = None if agent_id is None else valid_id(agent_id, "agent_id")
        last = self._entries[-1] if self._entries else None
        if self._open is not None and last is not None and self._open == (last.message.id, agent):
            return last
        metadata: dict[str, Any] = {}
        if agent is not None:
            metadata[AGENT_ID] = agent
            if agent_name is not None:
                metadata[AGENT_NAME] = _delta(agent_name)
        fields: dict[str, Any] = {"role": "assistant", "metadata": metadata}
        if step is not None:
            fields["created_at"] = step.created_at
        fields["id"] = step.id if step is not None and self.turn_id is None else self._next_id("a")
        entry = self._put(self._tagged(Message(**fields)))
        self._open = (entry.message.id, agent)
        return entry


def agent_of(message: Message) -> str | None:
    """The sub-agent that produced ``message`` (``metadata["agent_id"]``), ``None`` for the main
    agent and for user, system and tool messages."""
    agent = message.metadata.get(AGENT_ID)
    return agent if isinstance(agent, str) else None


def timeline(messages: Iterable[Message]) -> list[tuple[str | None, Message]]:
    """``(agent_id or None, message)`` in conversation order: by ``seq`` when every message has
    one (as read from a store), else as given (a buffer's order)."""
    ordered = list(messages)
    if all(m.seq is not None for m in ordered):
        ordered.sort(key=lambda m: m.seq or 0)
    return [(agent_of(m), m) for m in ordered]


def by_agent(messages: Iterable[Message]) -> dict[str | None, list[Message]]:
    """Each agent's messages in conversation order (``None``: the main agent and the others)."""
    out: dict[str | None, list[Message]] = {}
    for agent, message in timeline(messages):
        out.setdefault(agent, []).append(message)
    return out
