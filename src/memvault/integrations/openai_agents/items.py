"""Agents SDK items to memvault messages and back: each item stored once, exactly.

An item is what the SDK's own ``SQLiteSession`` stores: anything ``json.dumps`` takes (NUL
bytes, lone surrogates, NaN, any size). :func:`item_to_message` makes one memvault message of it,
whose role and parts are a readable view for memvault's other faces (search, recall, history,
``to_openai``):

* a message item (``role`` user, assistant, system or developer): that role (developer becomes
  ``system``), each text (``input_text``, ``output_text``, or a plain string content) as a
  :class:`TextPart`, each image given by URL as an :class:`ImagePart`, any other content part as
  a :class:`DataPart`;
* ``function_call``: an ``assistant`` message with a :class:`ToolCallPart` (``args`` the parsed
  JSON arguments, or their text when they are not a JSON object);
* ``function_call_output``: a ``tool`` message with a :class:`ToolResultPart`;
* ``reasoning`` with summary text: an ``assistant`` message with a :class:`ReasoningPart` per
  summary text;
* anything else (hosted tool calls, MCP items, reasoning without a summary, kinds this module
  does not know, values that are not objects): an ``assistant`` message with one
  :class:`DataPart` holding the item, named by its ``type``.

**Stored once.** Each value of the item that a part shows exactly (a text, an image URL, a tool
output, a data part's object) is kept only in that part; the rest of the item (its *skeleton*:
ids, types, statuses, the arguments' text) is kept in ``metadata["openai_agents"]`` as JSON
text with the parts' places recorded (``{"item": <JSON text>, "refs": [[part, field, *path],
...]}``). Reading puts the parts' values back into the skeleton: the item comes back exactly as
the SDK's own ``SQLiteSession`` gives it back (``json.loads(json.dumps(item))``: tuples become
lists, non-string keys strings, as JSON does). So a 9 MiB image costs 9 MiB, not 18.

**Cleaned for search.** memvault's text refuses NUL bytes and lone surrogates, so a value that
has them is not shown as is: its part gets a cleaned copy (NUL → space, lone surrogate → U+FFFD;
a structured value with them, or with NaN, is left out of the view) and the skeleton keeps the
exact value, escaped (``\\u0000``, ``\\udXXX``) inside the JSON text.

:func:`message_to_items` reads messages back: a message saved by this module gives its item; one
saved by memvault 0.x (the item verbatim in ``metadata["openai_agents_item"]``) gives that item;
messages other code saved to the thread read as the closest SDK items (text as easy input
messages, tool calls as ``function_call`` and tool results as ``function_call_output`` items;
other parts left out).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from memvault.errors import ValidationError
from memvault.model import (
    DataPart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memvault.rules.exact import clean_text, exact

__all__ = [
    "ITEM_KEY",
    "STORED_KEY",
    "ItemNotJSONError",
    "item_to_message",
    "message_to_items",
    "sdk_json",
]

STORED_KEY = "openai_agents"
"""The metadata key of an item's skeleton and the places of its values in the parts."""
ITEM_KEY = "openai_agents_item"
"""Where memvault 0.x kept each item verbatim (still read; no longer written)."""

_MESSAGE_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_TEXT_PARTS = ("input_text", "output_text")
_DETAILS = ("auto", "low", "high")
_SURROGATE = re.compile("[\ud800-\udfff]")

Path = list[str | int]


class ItemNotJSONError(ValidationError, TypeError):
    """An Agents SDK item that ``json.dumps`` refuses by type (bytes, a set, an object): a
    :class:`TypeError`, as the SDK's own sessions raise, and a memvault ValidationError."""


def sdk_json(item: Any) -> Any:
    """``item`` as the SDK's own sessions store it and give it back:
    ``json.loads(json.dumps(item))``. Raises :class:`ItemNotJSONError` (a TypeError) for what
    ``json.dumps`` refuses by type, ValidationError (a ValueError) for the rest (a circular
    reference, an integer over 4,300 digits, nesting too deep)."""
    try:
        text = json.dumps(item)
    except TypeError as exc:
        raise ItemNotJSONError(f"an Agents SDK item must be JSON-serialisable: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"an Agents SDK item cannot be written as JSON: {exc}") from None
    try:
        return json.loads(text)
    except RecursionError as exc:  # pragma: no cover - dumps and loads share the limit
        raise ValidationError(f"an Agents SDK item is nested too deeply: {exc}") from None


# ---------------------------------------------------------------- SDK item -> memvault


class _View:
    """The parts of the view being built, and the item's places they hold exactly."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.refs: list[list[Any]] = []

    def add(self, part: Part, field: str | None = None, path: Path | None = None) -> None:
        if field is not None and path is not None:
            self.refs.append([len(self.parts), field, *path])
        self.parts.append(part)

    def text(self, make: Callable[[str], Part], value: str, field: str, path: Path) -> None:
        """A text part of ``value``: exact (and referenced) when it can be, else cleaned."""
        if exact(value):
            self.add(make(value), field, path)
        else:
            self.add(make(clean_text(value)))

    def data(self, value: Any, name: Any, path: Path) -> None:
        label = name if isinstance(name, str) and exact(name) else None
        if exact(value):
            self.add(DataPart(data=value, name=label), "data", path)
        else:
            self.add(DataPart(name=label))


def item_to_message(item: Any) -> Message:
    """The memvault message that stores ``item`` (an SDK ``TResponseInputItem``, or any value
    the SDK's own sessions store) once, exactly (see the module docstring). Raises
    :class:`ItemNotJSONError` (a TypeError) or ValidationError for what the SDK's sessions
    refuse too."""
    value = sdk_json(item)
    view = _View()
    role = _view(value, view)
    skeleton = value
    for ref in view.refs:
        path = ref[2:]
        if not path:
            skeleton = None
            continue
        _parent(skeleton, path)[path[-1]] = None
    stored = {"item": _dump(skeleton), "refs": view.refs}
    return Message(role=role, parts=view.parts, metadata={STORED_KEY: stored})


def _dump(value: Any) -> str:
    """JSON text of ``value`` that memvault can store (lone surrogates written as escapes) and
    ``json.loads`` reads back exactly."""
    text = json.dumps(value, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _view(item: Any, view: _View) -> Role:
    """Fill ``view`` with the readable parts of ``item``; returns the message's role."""
    kind = item.get("type") if isinstance(item, dict) else None
    role = item.get("role") if isinstance(item, dict) else None
    attempt = _View()
    try:
        made: Role | None = None
        if not isinstance(item, dict):
            made = None
        elif kind in (None, "message") and isinstance(role, str) and role in _MESSAGE_ROLES:
            _content(item.get("content"), attempt)
            made = _MESSAGE_ROLES[role]
        elif kind == "function_call":
            _call(item, attempt)
            made = "assistant"
        elif kind == "function_call_output":
            output, call_id = item.get("output"), item["call_id"]
            if exact(output):
                attempt.add(ToolResultPart(tool_call_id=call_id, output=output), "output", ["output"])
            else:
                cleaned = clean_text(output) if isinstance(output, str) else None
                attempt.add(ToolResultPart(tool_call_id=call_id, output=cleaned))
            made = "tool"
        elif kind == "reasoning":
            summary = item.get("summary")
            for i, piece in enumerate(summary if isinstance(summary, list) else []):
                if isinstance(piece, dict) and isinstance(piece.get("text"), str):
                    attempt.text(lambda t: ReasoningPart(text=t), piece["text"], "text",
                                 ["summary", i, "text"])
            made = "assistant" if attempt.parts else None
        if made is not None:
            view.parts, view.refs = attempt.parts, attempt.refs
            return made
    except (KeyError, TypeError, ValidationError):
        pass  # an item of a known kind but an unexpected shape: kept as data below
    view.data(item, kind, [])
    return "assistant"


def _call(item: dict[str, Any], view: _View) -> None:
    arguments, call_id, name = item.get("arguments"), item["call_id"], item["name"]
    args = _args(arguments)
    if args is arguments and exact(arguments):  # the text itself: kept once, in the part
        view.add(ToolCallPart(tool_call_id=call_id, name=name, args=arguments), "args", ["arguments"])
    elif exact(args):  # the parsed object: the arguments' text stays in the item
        view.add(ToolCallPart(tool_call_id=call_id, name=name, args=args))
    else:
        cleaned = clean_text(arguments) if isinstance(arguments, str) else {}
        view.add(ToolCallPart(tool_call_id=call_id, name=name, args=cleaned))


def _args(arguments: Any) -> Any:
    """The JSON object in a function call's ``arguments`` text, or the text itself."""
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    return value if isinstance(value, dict) else arguments


def _content(content: Any, view: _View) -> None:
    if isinstance(content, str):
        view.text(lambda t: TextPart(text=t), content, "text", ["content"])
        return
    if not isinstance(content, list):
        return
    for i, piece in enumerate(content):
        kind = piece.get("type") if isinstance(piece, dict) else None
        if kind in _TEXT_PARTS and isinstance(piece.get("text"), str):
            view.text(lambda t: TextPart(text=t), piece["text"], "text", ["content", i, "text"])
        elif kind == "input_image" and isinstance(piece.get("image_url"), str) and exact(
            piece["image_url"]
        ):
            detail = piece.get("detail")
            image = ImagePart(url=piece["image_url"], detail=detail if detail in _DETAILS else None)
            view.add(image, "url", ["content", i, "image_url"])
        else:
            view.data(piece, kind, ["content", i])


# ---------------------------------------------------------------- memvault -> SDK items


def message_to_items(message: Message) -> list[Any]:
    """The SDK items a message stands for: its item when this module (or memvault 0.x) saved
    it, else the closest items its parts make (none for a message with neither text nor tool
    parts)."""
    stored = message.metadata.get(STORED_KEY)
    if isinstance(stored, dict):
        item = _restore(stored, message.parts)
        if item is not _BROKEN:
            return [item]
    original = message.metadata.get(ITEM_KEY)
    if isinstance(original, dict):
        return [original]
    return _foreign(message)


_BROKEN = object()


def _restore(stored: dict[str, Any], parts: list[Part]) -> Any:
    """The item: the skeleton with the parts' values put back, or ``_BROKEN`` when the stored
    record does not fit the parts (edited by other code): the message then reads as foreign."""
    try:
        item = json.loads(stored["item"])
        for part_index, field, *path in stored["refs"]:
            value = copy.deepcopy(getattr(parts[part_index], field))
            if not path:
                item = value
                continue
            container = _parent(item, path)
            if container[path[-1]] is not None:
                return _BROKEN
            container[path[-1]] = value
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError):
        return _BROKEN
    return item


def _foreign(message: Message) -> list[Any]:
    items: list[dict[str, Any]] = []
    if message.text and message.role != "tool":
        items.append({"role": message.role, "content": message.text})
    for call in message.tool_calls:
        arguments = call.args if isinstance(call.args, str) else json.dumps(call.args, ensure_ascii=False)
        items.append(
            {"type": "function_call", "call_id": call.tool_call_id, "name": call.name, "arguments": arguments}
        )
    for result in message.tool_results:
        output = result.output if isinstance(result.output, str) else json.dumps(
            result.output, ensure_ascii=False
        )
        items.append({"type": "function_call_output", "call_id": result.tool_call_id, "output": output})
    return items


def _parent(root: Any, path: Sequence[Any]) -> Any:
    """The container holding the value at ``path`` (keys and indexes) inside ``root``."""
    for key in path[:-1]:
        root = root[key]
    return root
