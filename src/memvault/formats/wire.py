"""Small helpers the wire-format converters share: typed field reads, data: URLs, the parts
a converter leaves out, and the metadata patches of :mod:`memvault.formats.fidelity`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from memvault.errors import ValidationError
from memvault.model import DataPart, Message, Part, TextPart, UnknownPart, UnreadablePart

__all__ = [
    "data_url",
    "dumps",
    "list_of",
    "mapping",
    "own_data",
    "parse_args",
    "read_each",
    "readable_messages",
    "record_content",
    "recorded_meta",
    "result_output",
    "split_data_url",
    "string",
    "write_each",
]

_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


def dumps(value: Any) -> str:
    """Compact JSON text (non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_args(raw: str) -> Any:
    """The JSON object in ``raw``, or ``raw`` itself when it is not one (NaN/Infinity refused)."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return raw
    return value if isinstance(value, dict) else raw


def mapping(value: Any, where: str, required: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """``value`` when it is a mapping holding ``required``; else ValidationError naming ``where``."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"{where} must be a mapping (dict), got {type(value).__name__}")
    if missing := [k for k in required if k not in value]:
        raise ValidationError(f"{where} is missing {', '.join(map(repr, missing))}")
    return value


def string(value: Any, where: str) -> str:
    """``value`` when it is a string; else ValidationError naming ``where``."""
    if not isinstance(value, str):
        raise ValidationError(f"{where} must be a string, got {type(value).__name__}")
    return value


def list_of(items: Any, what: str, call: str) -> list[Any]:
    """``items`` as a list; a single mapping, string or bytes is refused (wrap it in a list)."""
    if isinstance(items, Mapping | str | bytes | Message) or not isinstance(items, Iterable):
        raise ValidationError(f"{call} takes a list of {what}; wrap one in a list")
    return list(items)


def read_each(
    items: Iterable[Any], read: Callable[[Any, Mapping[str, str]], Message], label: str
) -> list[Message]:
    """``read(item, names)`` of each item in order, ``names`` mapping the tool call ids read so
    far to their tool names (a result's name is its call's); a ValidationError is raised again
    prefixed with ``<label> [<index>]: ``."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, item in enumerate(items):
        try:
            message = read(item, names)
        except ValidationError as exc:
            raise ValidationError(f"{label} [{i}]: {exc}") from None
        names.update((c.tool_call_id, c.name) for c in message.tool_calls)
        out.append(message)
    return out


def result_output(output: Any) -> Any:
    """A tool result's output as a wire format carries it: a string or a list of typed blocks
    (dicts with a string ``type``) as is, anything else as compact JSON text."""
    blocks = isinstance(output, list) and all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in output
    )
    return output if isinstance(output, str) or blocks else dumps(output)


def own_data(part: DataPart, prefix: str) -> dict[str, Any] | None:
    """A copy of the wire block a DataPart holds when it is named ``<prefix><type>`` and its
    ``data`` is that block (a dict whose ``type`` is ``<type>``); else ``None``."""
    name, data = part.name or "", part.data
    if name.startswith(prefix) and isinstance(data, dict) and data.get("type") == name[len(prefix) :]:
        return dict(data)
    return None


def data_url(media_type: str, data: str) -> str:
    """``data:<media_type>;base64,<data>``."""
    return f"data:{media_type};base64,{data}"


def split_data_url(url: str) -> tuple[str, str] | None:
    """``(media_type, data)`` of a base64 ``data:`` URL, else ``None``."""
    found = _DATA_URL.fullmatch(url)
    return (found.group(1), found.group(2)) if found else None


Numbered = list[tuple[int, Part]]


def readable_messages(messages: Any, call: str) -> list[tuple[int, Message, Numbered]]:
    """Each Message with its parts numbered by their place in ``message.parts``, leaving out
    the parts this memvault cannot read (:class:`UnknownPart`, :class:`UnreadablePart`) and
    a message left with no part by that. Anything but Messages is refused."""
    out: list[tuple[int, Message, Numbered]] = []
    for i, message in enumerate(list_of(messages, "Messages", call)):
        if not isinstance(message, Message):
            kind = type(message).__name__
            raise ValidationError(f"message [{i}] is a {kind}, not a Message; use Message.parse")
        parts: Numbered = [
            (j, p) for j, p in enumerate(message.parts) if not isinstance(p, UnknownPart | UnreadablePart)
        ]
        if message.parts and not parts:
            continue
        out.append((i, message, parts))
    return out


def write_each(
    messages: Any, write: Callable[[Message, Numbered], list[dict[str, Any]]], call: str
) -> list[dict[str, Any]]:
    """``write(message, parts)`` of each readable message (see :func:`readable_messages`), all
    the wire dicts in order; a ValidationError is raised again prefixed with
    ``message [<index>] (id <id>): ``."""
    out: list[dict[str, Any]] = []
    for i, message, parts in readable_messages(messages, call):
        try:
            out += write(message, parts)
        except ValidationError as exc:
            raise ValidationError(f"message [{i}] (id {message.id!r}): {exc}") from None
    return out


def recorded_meta(message: Message, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``message.metadata[key]`` (``{}`` when absent) and its per-part block patches (its
    ``"blocks"`` dict, else ``{}``); a value under ``key`` that is not a dict is a ValidationError."""
    meta = message.metadata.get(key, {})
    if not isinstance(meta, dict):
        raise ValidationError(f'metadata["{key}"] must be a dict; remove or fix it')
    patches: dict[str, Any] = meta["blocks"] if isinstance(meta.get("blocks"), dict) else {}
    return meta, patches


def record_content(meta: dict[str, Any], parts: list[Part], patches: dict[str, Any]) -> None:
    """Keep in ``meta`` what a content list's parts cannot hold: the per-part block patches
    (``"blocks"``, when any), and ``content: "parts"`` when the list holds one plain text block
    (which the default writes as a string)."""
    if patches:
        meta["blocks"] = patches
    if len(parts) == 1 and isinstance(parts[0], TextPart) and "0" not in patches:
        meta["content"] = "parts"
