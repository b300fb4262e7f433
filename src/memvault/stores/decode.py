"""Decoding a stored message row, and containing one that cannot be decoded.

Rows were validated when they were written, so a good row is rebuilt without validating again
(:func:`memvault.stores.rows.trusted`). But a row may have been written by a newer memvault, or
damaged outside memvault; one such row must never make the rest of its thread unreadable. The
rule, the same on every store and for every read (``get_messages`` in all its forms, history,
search, recall, ``read_turn``, export, copy):

- a part whose ``type`` this memvault does not know, or whose part version (``"v"``) is newer
  than :data:`memvault.model.PART_VERSIONS`, reads as an :class:`~memvault.model.UnknownPart`
  that keeps the stored dict; the rest of the message reads normally, and saving it back stores
  the identical JSON;
- any other failure (``parts`` or ``metadata`` not JSON or of the wrong shape, a known part with
  missing or mistyped fields, a row format newer than :data:`memvault.model.ROW_FORMAT`, a
  ``created_us`` beyond the datetime range, an unknown role) makes the message a *placeholder*:
  the same id, thread, resource and seq, its role when valid (else ``"assistant"``), its time
  when valid (else the Unix epoch), empty metadata, and one
  :class:`~memvault.model.UnreadablePart` carrying the reason and the stored columns verbatim.
  A warning on the ``memvault.stores`` logger names the resource, thread and message ids and the
  reason (never the text), on every read that meets the row.

Reading a single message by id follows the same rule: it returns the placeholder, never an
error, so callers see one shape everywhere and can delete or repair the row by its id.
"""

from __future__ import annotations

import json
import logging
from _json import scanstring  # the C string scanner json.loads uses
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from memvault.model import (
    PART_VERSIONS,
    ROLES,
    ROW_FORMAT,
    DataPart,
    FilePart,
    ImagePart,
    Message,
    Model,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    UnreadablePart,
    is_unknown_part,
)
from memvault.stores.common import EPOCH, from_micros, to_micros

log = logging.getLogger("memvault.stores")

M = TypeVar("M", bound=Model)

_FIELDS: dict[type[Model], tuple[str, ...]] = {}
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` from already-valid ``values`` (taken over, not copied); missing
    optional fields are None (stored JSON leaves out None values only)."""
    model = cls.__new__(cls)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(cls.model_fields)
    if len(values) != len(names):
        values = {name: values.get(name) for name in names}
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


Check = Callable[[Any], bool]


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _any(value: Any) -> bool:
    return True


def _detail(value: Any) -> bool:
    return value in (None, "auto", "low", "high")


def _bool(value: Any) -> bool:
    return isinstance(value, bool) or value is None


_PARTS: dict[str, tuple[type[Model], dict[str, Check], frozenset[str]]] = {
    "text": (TextPart, {"type": _any, "text": _str}, frozenset({"text"})),
    "reasoning": (ReasoningPart, {"type": _any, "text": _str, "signature": _opt_str}, frozenset({"text"})),
    "tool-call": (ToolCallPart, {"type": _any, "tool_call_id": _str, "name": _str, "args": _any},
                  frozenset({"tool_call_id", "name"})),
    "tool-result": (ToolResultPart, {"type": _any, "tool_call_id": _str, "output": _any, "is_error": _bool,
                                     "name": _opt_str}, frozenset({"tool_call_id"})),
    "file": (FilePart, {"type": _any, "url": _str, "media_type": _opt_str, "name": _opt_str},
             frozenset({"url"})),
    "image": (ImagePart, {"type": _any, "url": _str, "media_type": _opt_str, "detail": _detail},
              frozenset({"url"})),
    "data": (DataPart, {"type": _any, "data": _any, "name": _opt_str}, frozenset()),
}
"""Each known part type: its model, a check per field (``type`` is known already), and the
fields it must have."""
assert set(_PARTS) == set(PART_VERSIONS)

_DEFAULTS: dict[str, dict[str, Any]] = {"tool-call": {"args": {}}, "tool-result": {"is_error": False}}
"""Fields whose default is not None (stored JSON leaves out only None values, but be lenient)."""


class Unreadable(Exception):
    """Raised inside decoding: ``reason`` says what failed, without any of the message's text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode_part(raw: Any, index: int) -> Part:
    """One stored part: a known one rebuilt, an unknown one kept verbatim; raises
    :class:`Unreadable` for anything else."""
    if not isinstance(raw, dict):
        raise Unreadable(f"parts[{index}] is a {type(raw).__name__}, not an object")
    kind = raw.get("type")
    entry = _PARTS.get(kind) if isinstance(kind, str) else None
    if entry is None or "v" in raw:
        if is_unknown_part(raw):
            if not isinstance(kind, str):
                raise Unreadable(f"parts[{index}] has no string type")
            return UnknownPart.model_construct(raw=raw)
        if entry is None:  # "unreadable": a placeholder's part was stored, bypassing Memory
            raise Unreadable(f"parts[{index}] is a placeholder's {kind!r} part")
        raw = {k: v for k, v in raw.items() if k != "v"}  # version 1, written explicitly
    cls, checks, required = entry
    for name, value in raw.items():
        check = checks.get(name)
        if check is None:
            raise Unreadable(f"parts[{index}] ({kind}) has an unknown field {name!r:.40}")
        if not check(value):
            raise Unreadable(f"parts[{index}] ({kind}) has a {type(value).__name__} {name}")
    if not required <= raw.keys():
        missing = ", ".join(sorted(required - raw.keys()))
        raise Unreadable(f"parts[{index}] ({kind}) lacks {missing}")
    defaults = _DEFAULTS.get(str(kind))
    if defaults and any(raw.get(name) is None for name in defaults):
        raw = {**raw, **{name: d for name, d in defaults.items() if raw.get(name) is None}}
    return trusted(cls, raw)  # type: ignore[return-value]


def decode_parts(stored: Any) -> list[Part]:
    """The stored ``parts`` column (row format 1: a JSON list, or a JSON string for a message
    of one text part, the SQLite store's compact form; later formats an object with a
    ``"format"`` number)."""
    if not isinstance(stored, str):
        raise Unreadable(f"parts is a {type(stored).__name__}, not text")
    value = _loads(stored, "parts")
    if isinstance(value, str):
        return [trusted(TextPart, {"type": "text", "text": value})]
    if isinstance(value, dict):
        version = value.get("format")
        if isinstance(version, int) and not isinstance(version, bool) and version > ROW_FORMAT:
            raise Unreadable(f"row format {version} is newer than this memvault reads ({ROW_FORMAT})")
        if version != 1 or not isinstance(value.get("parts"), list):
            raise Unreadable("parts is an object without a known format")
        value = value["parts"]
    if not isinstance(value, list):
        raise Unreadable(f"parts is a JSON {type(value).__name__}, not a list")
    return [decode_part(p, i) for i, p in enumerate(value)]


def decode_metadata(stored: Any) -> dict[str, Any]:
    if stored == "{}":
        return {}
    if not isinstance(stored, str):
        raise Unreadable(f"metadata is a {type(stored).__name__}, not text")
    value = _loads(stored, "metadata")
    if not isinstance(value, dict):
        raise Unreadable(f"metadata is a JSON {type(value).__name__}, not an object")
    return value


def decode_time(stored: Any) -> datetime:
    if not isinstance(stored, int) or isinstance(stored, bool):
        raise Unreadable(f"created_us is a {type(stored).__name__}, not an integer")
    try:
        return from_micros(stored)
    except OverflowError:
        raise Unreadable(f"created_us {stored} is beyond the datetime range") from None


_FIRST_US = to_micros(datetime.min.replace(tzinfo=EPOCH.tzinfo))
_LAST_US = to_micros(datetime.max.replace(tzinfo=EPOCH.tzinfo))


def readable_time(stored: Any) -> bool:
    """Whether :func:`decode_time` reads ``stored`` (an integer within the datetime range)."""
    return isinstance(stored, int) and not isinstance(stored, bool) and _FIRST_US <= stored <= _LAST_US


def compact_text(row: tuple[Any, ...]) -> tuple[str, dict[str, Any]] | None:
    """The text and the metadata of a row of ``id, thread_id, resource_id, seq, role, parts,
    metadata, created_us`` whose parts are one text part (the SQLite store's compact form, a JSON
    string, or a list of one ``{"type": "text", "text": ...}`` object, as PostgreSQL stores it)
    and whose every column decodes; ``None`` for any other row, which only building its message
    reads (as a message or as a placeholder)."""
    role, parts, metadata, created_us = row[4:]
    if not (isinstance(parts, str) and role in ROLES and readable_time(created_us)):
        return None
    try:
        if parts[:1] == '"':
            text = _loads(parts, "parts")
        elif parts.startswith(_ONE_TEXT_PART):
            value = _loads(parts, "parts")
            if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)
                    and value[0].keys() == _TEXT_KEYS and value[0]["type"] == "text"):
                return None
            text = value[0]["text"]
        else:
            return None
        found = decode_metadata(metadata)
    except Unreadable:
        return None
    return (text, found) if isinstance(text, str) else None


_ONE_TEXT_PART = '[{"type":"text","text":'
"""How a list of parts that starts with a text part is stored (compact JSON, fields in order)."""
_TEXT_KEYS = frozenset({"type", "text"})


def decode_role(stored: Any) -> str:
    if stored not in ROLES:
        raise Unreadable(f"role {str(stored)[:20]!r} is not one of {', '.join(ROLES)}")
    return str(stored)


_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The C scanner ``json.loads`` runs, without its two Python layers (about 2.7 of 3.3 µs for a
small object)."""


def _loads(stored: str, column: str) -> Any:
    """``json.loads(stored)``, by the scanners alone when the whole text is one value (what
    the stores write); anything else (spaces around, trailing data, malformed) is left to
    ``json.loads``, which reads or refuses it."""
    try:
        if stored[:1] == '"':  # a JSON string (the compact parts of one text part): its scanner alone
            value, end = scanstring(stored, 1)
        else:
            try:
                value, end = _scan(stored, 0)
            except StopIteration:  # no value at the start (empty, a space): json.loads says why
                end = -1
        if end == len(stored):
            return value
        return json.loads(stored)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"{column} is not JSON ({exc.msg} at character {exc.pos})") from None
    except (ValueError, RecursionError) as exc:  # integers over 4,300 digits, deep nesting
        raise Unreadable(f"{column} cannot be decoded ({type(exc).__name__})") from None


def placeholder(row: tuple[Any, ...], reason: str) -> Message:
    """The placeholder for a row of ``id, thread_id, resource_id, seq, role, parts, metadata,
    created_us`` that could not be decoded (see the module docstring), with the warning."""
    message_id, thread_id, resource_id, seq, role, parts, metadata, created_us = row
    warn(resource_id, thread_id, message_id, reason)
    try:
        created_at = decode_time(created_us)
    except Unreadable:
        created_at = EPOCH
    raw = {"role": role, "parts": parts, "metadata": metadata, "created_us": created_us}
    part = trusted(UnreadablePart, {"type": "unreadable", "reason": reason,
                                    "raw": {name: _plain(value) for name, value in raw.items()}})
    return trusted(Message, {
        "id": message_id, "role": role if role in ROLES else "assistant", "parts": [part],
        "thread_id": thread_id, "resource_id": resource_id, "created_at": created_at,
        "metadata": {}, "seq": seq,
    })


def _plain(value: Any) -> Any:
    """A stored value as JSON can hold it: text, integers and None as they are; bytes decoded
    with backslash escapes for what is not UTF-8; anything else as its ``repr``."""
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    return repr(value)


def warn(resource_id: Any, thread_id: Any, message_id: Any, reason: str) -> None:
    """Log that a row is unreadable, on every read that meets it (a row that stays broken keeps
    saying so; delete or repair it by id)."""
    log.warning("memvault: message %r of thread %r (resource %r) cannot be read and is returned as "
                "a placeholder: %s", message_id, thread_id, resource_id, reason)
