"""The vocabulary: messages and their parts, threads, pages and search hits.

These models validate everything that enters memvault. Every string (ids, text, metadata) must
be valid Unicode without NUL bytes or lone surrogates, and metadata must be plain JSON. Bad input
raises :class:`memvault.errors.ValidationError` before anything is written.

Example::

    Message.user("I like green tea")
    Message(role="assistant", parts=[ToolCallPart(tool_call_id="c1", name="lookup", args={"q": 1})])
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self, TypeAlias

import pydantic
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_serializer,
)

from memvault.errors import ValidationError, shown

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
MAX_ID_LENGTH = 256


def check_text(value: str) -> str:
    """Refuse NUL bytes and lone surrogates (they cannot be stored or encoded as UTF-8)."""
    if "\x00" in value:
        raise ValueError("text contains a NUL byte (\\x00); remove it before saving")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"text contains a lone surrogate at position {exc.start}; "
            "it is not valid Unicode: decode your input with errors='replace'"
        ) from None
    return value


MAX_JSON_DEPTH = 64


MAX_JSON_INT_BITS = 14_000
"""The largest integer a JSON value may hold, in bits (about 4,200 digits: Python writes at most
4,300 digits of an integer as text)."""


def check_json(value: Any, path: str = "$", depth: int = 0) -> Any:
    """Refuse values that are not plain JSON: only dict (str keys), list, str, int, float, bool, None,
    nested at most 64 levels deep (which also refuses self-referencing values)."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{path} is nested more than {MAX_JSON_DEPTH} levels deep (or refers to itself)")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_JSON_INT_BITS:
            raise ValueError(f"{path} is an integer of more than {MAX_JSON_INT_BITS:,} bits, which JSON "
                             "text cannot hold here: store it as a string")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path} is {shown(value)}, which JSON cannot represent")
        return value
    if isinstance(value, str):
        check_text(value)
        return value
    if isinstance(value, list | tuple):
        return [check_json(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{path} has a key {shown(key)} that is not a string; JSON keys are strings")
            check_text(key)
            out[key] = check_json(item, f"{path}.{key}", depth + 1)
        return out
    raise ValueError(f"{path} is a {type(value).__name__}, which is not JSON")


def check_id(value: str) -> str:
    """Ids are non-empty strings of at most 256 characters."""
    check_text(value)
    if not value.strip():
        raise ValueError("an id must be a non-empty string")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"an id must be at most {MAX_ID_LENGTH} characters, got {len(value)}")
    return value


def valid_id(value: Any, name: str) -> str:
    """``value`` checked as an id (see :func:`check_id`) for a public call: anything else raises
    :class:`memvault.errors.ValidationError` naming the argument ``name``."""
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type(value).__name__}")
    try:
        return check_id(value)
    except ValueError as exc:
        raise ValidationError(f"{name}: {exc}") from None


RESOURCE_NOTE_KEY = "resource"
"""The store key of a resource's working-memory note."""


def note_key(thread_id: str | None) -> str:
    """The store key of a working-memory note: :data:`RESOURCE_NOTE_KEY` for the resource's
    note (``thread_id`` ``None``), ``"thread:<id>"`` for one thread's note. Stores delete a
    thread's note with the thread under this key."""
    return RESOURCE_NOTE_KEY if thread_id is None else f"thread:{thread_id}"


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def now() -> datetime:
    return datetime.now(UTC)


_ids = random.Random(os.urandom(16))
os.register_at_fork(after_in_child=lambda: _ids.seed(os.urandom(16)))


def new_id() -> str:
    """A new id: 32 hex digits, the first 12 the time in milliseconds (so ids sort by creation
    time, like UUIDv7), then 80 random bits from a per-process generator seeded by the OS."""
    return f"{time.time_ns() // 1_000_000:012x}{_ids.getrandbits(80):020x}"


Text = Annotated[str, AfterValidator(check_text)]
Id = Annotated[str, AfterValidator(check_id)]
JSON = Annotated[Any, AfterValidator(check_json)]
Metadata = Annotated[dict[str, Any], AfterValidator(check_json)]
Timestamp = Annotated[datetime, AfterValidator(as_utc)]


class Model(BaseModel):
    """Base of the vocabulary: strict about unknown fields; errors are memvault's own."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as exc:
            raise ValidationError(_describe(exc, type(self).__name__)) from None

    def __setattr__(self, name: str, value: Any) -> None:
        """Assigning a field validates the value like the constructor (memvault's error)."""
        try:
            super().__setattr__(name, value)
        except pydantic.ValidationError as exc:
            raise ValidationError(_describe(exc, type(self).__name__)) from None

    @classmethod
    def parse(cls, data: Any, *, unknown_parts: bool = False) -> Self:
        """Validate a dict (or an instance) into this model, raising memvault's ValidationError.
        With ``unknown_parts`` a part dict of a type this memvault does not know (or of a newer
        part version) becomes an :class:`UnknownPart` kept verbatim instead of an error."""
        token = _UNKNOWN_PARTS.set(unknown_parts)
        try:
            return cls.model_validate(data)
        except pydantic.ValidationError as exc:
            raise ValidationError(_describe(exc, cls.__name__)) from None
        finally:
            _UNKNOWN_PARTS.reset(token)


_UNKNOWN_PARTS: ContextVar[bool] = ContextVar("memvault_unknown_parts", default=False)
"""Set by ``Model.parse(..., unknown_parts=True)`` while it validates (a context variable: the
models' own ``__init__`` does not pass pydantic's validation context on)."""


def _describe(exc: pydantic.ValidationError, name: str) -> str:
    """One message naming where each problem is (``parts.0.text: ...``), said once: a nested
    model's error is not wrapped again, nor prefixed with pydantic's "Value error"."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"])
        cause = (error.get("ctx") or {}).get("error")
        message = str(cause) if isinstance(cause, Exception) else error["msg"]
        message = _INVALID.sub("", message.removeprefix("Value error, "), count=1)
        lines.append(f"{where}: {message}" if where and not message.startswith(f"{where}:") else message)
    return f"invalid {name}: " + "; ".join(dict.fromkeys(lines))


_INVALID = re.compile(r"^invalid [A-Za-z]+: ")


class TextPart(Model):
    """Plain text, as the user typed it or the model wrote it."""

    type: Literal["text"] = "text"
    text: Text


class ReasoningPart(Model):
    """A model's reasoning. Kept for the record and for models that need it back; never searched."""

    type: Literal["reasoning"] = "reasoning"
    text: Text
    signature: Text | None = None


class ToolCallPart(Model):
    """A model's request to run a tool. ``args`` is a JSON object, or the raw text when the model
    produced arguments that are not a JSON object (kept verbatim so nothing is lost)."""

    type: Literal["tool-call"] = "tool-call"
    tool_call_id: Id
    name: Text
    args: JSON = Field(default_factory=dict)


class ToolResultPart(Model):
    """The outcome of a tool call, joined to its call by ``tool_call_id``."""

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: Id
    output: JSON = None
    is_error: bool = False
    name: Text | None = None


class FilePart(Model):
    """A reference to a file: a URL (``https:``, ``file:``, ``data:``) and its media type."""

    type: Literal["file"] = "file"
    url: Text
    media_type: Text | None = None
    name: Text | None = None


class ImagePart(Model):
    """A reference to an image by URL (``https:`` or ``data:``), with an optional detail hint."""

    type: Literal["image"] = "image"
    url: Text
    media_type: Text | None = None
    detail: Literal["auto", "low", "high"] | None = None


class DataPart(Model):
    """Structured data attached to a message (any JSON value), with an optional name."""

    type: Literal["data"] = "data"
    data: JSON = None
    name: Text | None = None


class UnknownPart(Model):
    """A part this memvault cannot read because a newer memvault wrote it: a ``type`` it does not
    know, or a known type with a part version (``"v"``) newer than :data:`PART_VERSIONS` gives.

    ``raw`` is the stored part exactly; it is dumped and saved back unchanged, so reading a
    message and saving it again (or copying, exporting and importing it) keeps the part
    byte-identical for the newer memvault. Nothing reads inside it: it is not searched, not
    counted as text, and :mod:`memvault.formats` leaves it out. Message validation accepts an
    UnknownPart instance; a dict whose type is unknown is refused unless the caller opts in
    (``Message.parse(data, unknown_parts=True)``, which import uses).
    """

    raw: dict[str, JSON]

    @property
    def type(self) -> str:
        """The stored part's ``type`` (as written by the newer memvault)."""
        kind = self.raw.get("type")
        return kind if isinstance(kind, str) else ""

    @model_serializer(mode="plain")
    def _as_stored(self) -> dict[str, Any]:
        return self.raw


class UnreadablePart(Model):
    """The one part of a placeholder: a stored message row memvault could not decode (bad JSON,
    a known part with invalid fields, an out-of-range time, an unknown role, a row format newer
    than :data:`ROW_FORMAT`). ``reason`` says what failed (never the message's text); ``raw``
    holds the stored columns (``role``, ``parts``, ``metadata``, ``created_us``) for repair:
    verbatim when text, an integer or null; bytes decoded with backslash escapes, anything else
    as its ``repr``. A message holding one is never saved: save, copy and import refuse or skip it (see
    docs/concepts.md, "Unreadable rows").
    """

    type: Literal["unreadable"] = "unreadable"
    reason: Text
    raw: dict[str, Any] = Field(default_factory=dict)


PART_VERSIONS: dict[str, int] = {
    "text": 1, "reasoning": 1, "tool-call": 1, "tool-result": 1, "file": 1, "image": 1, "data": 1,
}
"""The newest version of each part type this memvault reads. Version 1 is stored without a
``"v"`` key; a stored part whose ``"v"`` is higher reads as an :class:`UnknownPart`."""

ROW_FORMAT = 1
"""The newest stored message format this memvault reads: format 1 keeps ``parts`` as a JSON list,
or, for a message of one text part, as that text, a JSON string (the SQLite store's compact form).
A later format stores an object ``{"format": n, ...}``; a row with ``n`` above this reads as a
placeholder (:class:`UnreadablePart`)."""


def _part_tag(value: Any) -> str | None:
    if isinstance(value, UnknownPart):
        return "unknown"
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in PART_VERSIONS or kind == "unreadable" else None


Part = Annotated[
    Annotated[TextPart, Tag("text")] | Annotated[ReasoningPart, Tag("reasoning")]
    | Annotated[ToolCallPart, Tag("tool-call")] | Annotated[ToolResultPart, Tag("tool-result")]
    | Annotated[FilePart, Tag("file")] | Annotated[ImagePart, Tag("image")]
    | Annotated[DataPart, Tag("data")] | Annotated[UnknownPart, Tag("unknown")]
    | Annotated[UnreadablePart, Tag("unreadable")],
    Discriminator(
        _part_tag, custom_error_type="part_type",
        custom_error_message="a part's type must be one of " + ", ".join(PART_VERSIONS),
    ),
]
"""Any part. :class:`UnknownPart` and :class:`UnreadablePart` come from reading stored rows;
``Part`` accepts them as instances (a message read can be handled like any other), but a
message holding an UnreadablePart cannot be saved."""


class Message(Model):
    """One entry of a thread.

    ``id`` is the caller's (a random hex id by default): saving a message with the same id in the
    same thread again updates it instead of adding a copy. ``seq`` is assigned by the store on the
    first save and gives the thread its total order; it is ``None`` on a message not yet saved.
    ``thread_id`` and ``resource_id`` are filled in by the store on save.
    """

    id: Id = Field(default_factory=new_id)
    role: Role
    parts: list[Part] = Field(default_factory=list)
    thread_id: Id | None = None
    resource_id: Id | None = None
    created_at: Timestamp = Field(default_factory=now)
    metadata: Metadata = Field(default_factory=dict)
    seq: int | None = None

    @field_validator("parts", mode="before")
    @classmethod
    def _unknown_parts(cls, value: Any) -> Any:
        """Under ``Message.parse(..., unknown_parts=True)``, wrap unknown part dicts."""
        if _UNKNOWN_PARTS.get() and isinstance(value, list):
            return [UnknownPart(raw=p) if isinstance(p, dict) and is_unknown_part(p) else p for p in value]
        return value

    @property
    def unreadable(self) -> UnreadablePart | None:
        """The :class:`UnreadablePart` when this message is a placeholder for a stored row memvault
        could not read, else None."""
        for part in self.parts:
            if isinstance(part, UnreadablePart):
                return part
        return None

    @classmethod
    def user(cls, text: str, **fields: Any) -> Message:
        return cls(role="user", parts=[TextPart(text=text)], **fields)

    @classmethod
    def assistant(cls, text: str, **fields: Any) -> Message:
        return cls(role="assistant", parts=[TextPart(text=text)], **fields)

    @classmethod
    def system(cls, text: str, **fields: Any) -> Message:
        return cls(role="system", parts=[TextPart(text=text)], **fields)

    @property
    def text(self) -> str:
        """The text parts joined by newlines (reasoning and tool parts left out)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    def parts_json(self) -> str:
        """The parts as compact JSON, the form the stores keep (row format 1: a list; an
        :class:`UnknownPart` exactly as it was stored)."""
        return json.dumps(
            [p.raw if isinstance(p, UnknownPart) else p.model_dump(mode="json", exclude_none=True)
             for p in self.parts],
            ensure_ascii=False,
            separators=(",", ":"),
        )


def is_unknown_part(part: dict[str, Any]) -> bool:
    """Whether a stored part dict is one this memvault cannot read: its ``type`` is not a known
    part type, or its part version ``"v"`` is newer than :data:`PART_VERSIONS` gives."""
    kind = part.get("type")
    if kind == "unreadable":
        return False  # a placeholder's part: never taken for a newer memvault's
    if not isinstance(kind, str) or kind not in PART_VERSIONS:
        return True
    version = part.get("v", 1)
    return not isinstance(version, int) or isinstance(version, bool) or version > PART_VERSIONS[kind]


class Thread(Model):
    """One conversation, owned by exactly one resource. ``(resource_id, id)`` names it."""

    id: Id = Field(default_factory=new_id)
    resource_id: Id
    title: Text | None = None
    metadata: Metadata = Field(default_factory=dict)
    created_at: Timestamp = Field(default_factory=now)
    updated_at: Timestamp = Field(default_factory=now)


class ThreadPage(Model):
    """A page of threads, newest activity first; pass ``next_cursor`` to get the next page."""

    threads: list[Thread]
    next_cursor: str | None = None


class SearchHit(Model):
    """A message found by search. ``score`` is higher for better matches (BM25 relevance, >= 0)."""

    message: Message
    score: float


class State(Model):
    """A keyed record an agent or workflow keeps to suspend and resume a run.

    ``version`` starts at 1 and grows by one on every write; compare-and-set checks it.
    ``workflow_id`` names the workflow the run belongs to (queries select by it); ``thread_id``,
    when set, scopes the state to one of the resource's threads: deleting the thread deletes it.
    ``created_at`` is the first write's time (a record without one takes ``updated_at``).
    """

    resource_id: Id
    key: Id
    value: JSON = None
    status: Text | None = None
    version: int = 1
    workflow_id: Id | None = None
    thread_id: Id | None = None
    created_at: Timestamp = Field(default_factory=now)
    updated_at: Timestamp = Field(default_factory=now)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _created_with_first_write(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("created_at") is None and data.get("updated_at") is not None:
            return {**data, "created_at": data["updated_at"]}
        return data


class Summary(Model):
    """The running summary of a thread's older part: every message up to and including the one
    at ``through_seq`` (``through_message_id``) is summarised in ``text``.

    Derived data: deleting or editing a summarised message, clearing or deleting the thread or
    its resource deletes the summary in the same operation (no deleted text left behind); the
    next summary is then made afresh. ``version`` starts at 1 and grows by one on every write
    (compare-and-set, so two summarisers never overwrite each other).
    """

    resource_id: Id
    thread_id: Id
    text: Text
    through_seq: int = Field(ge=1)
    through_message_id: Id
    version: int = 1
    updated_at: Timestamp = Field(default_factory=now)
