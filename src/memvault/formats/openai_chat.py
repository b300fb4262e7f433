"""Convert between memvault messages and OpenAI Chat Completions messages.

``from_openai(items)`` returns one :class:`Message` per OpenAI message; ``to_openai(messages)``
returns plain dicts ready for ``client.chat.completions.create(messages=...)``. For every valid
input ``to_openai(from_openai(x)) == x`` exactly; what OpenAI syntax cannot be held by our parts
is kept in ``metadata["openai"]`` (set only when needed):

* ``role``: ``"developer"`` for a developer message (which becomes ``role="system"``).
* ``name``: the message's ``name`` (on tool messages too, a legacy field many clients send).
* ``content_format``: the shape of ``content`` when it differs from the default shape that
  ``to_openai`` writes: ``"parts"`` (a list that would otherwise be written as a string or
  ``None``) or ``"omitted"`` (an assistant message without ``content``). Defaults: one text part
  is a string, no content is ``None`` (assistant) or ``[]`` (others), anything else a list.
* ``refusal``, ``annotations``, ``audio``, ``function_call`` (``null`` only), and a ``null`` or
  empty ``tool_calls``: assistant fields kept verbatim.
* ``raw_arguments``: ``{tool_call_id: text}`` for arguments that parse to a JSON object whose
  compact form differs from the text (spaces, key escapes, duplicate keys); written back only
  while it still parses to the call's ``args``.

Mapping: ``reasoning_content`` (DeepSeek, vLLM, ...) <-> :class:`ReasoningPart`; ``text`` <->
:class:`TextPart`; ``image_url`` ``{url, detail}`` <-> :class:`ImagePart`; ``file`` <->
:class:`FilePart` whose url is the ``file_data`` data: URL or ``openai-file:<file_id>``, with
``filename`` as ``name``; ``tool_calls`` <-> :class:`ToolCallPart` (``args`` is the parsed JSON
object, or the raw ``arguments`` text, written back verbatim, when it is not a JSON object); a
``tool`` message <-> a ``role="tool"`` Message with one :class:`ToolResultPart` whose ``output``
is the content string (list content: the text of its one part, or the list of the texts).
from_openai orders an assistant's parts as reasoning, content, tool calls.

What OpenAI chat cannot carry, and what ``to_openai`` does with it:

* ``id``, ``thread_id``, ``resource_id``, ``created_at``, ``seq`` and metadata other than
  ``"openai"``: dropped (from_openai gives a fresh id and ``created_at``).
* :class:`DataPart`: refused with ValidationError (its data would be lost or turned into text the
  model never asked for); convert it to a TextPart or drop it first. ``input_audio``, ``refusal``
  content parts and non-function tool calls are refused the same way by from_openai.
* ``ToolResultPart.is_error``: dropped (the model sees the output text; OpenAI has no flag), so it
  reads back ``False``. A non-string ``output`` (or tool-call ``args`` that are neither an object
  nor text) is written as compact JSON text and reads back as that string.
  ``ToolResultPart.name`` is not written; from_openai restores it from the matching tool call
  earlier in the same list.
* ``ImagePart.media_type``/``FilePart.media_type``, ``ReasoningPart.signature``: dropped; several
  reasoning parts are joined by newlines. A FilePart URL that is not ``data:`` or
  ``openai-file:`` is refused (OpenAI takes files only inline or uploaded).
* Parts this memvault cannot read are left out: an :class:`~memvault.model.UnknownPart` (a newer
  memvault wrote it) and the :class:`~memvault.model.UnreadablePart` of a placeholder for a row
  that could not be decoded (:mod:`memvault.stores.decode`). A message left with no part at all
  by that is left out entirely: the model is never shown a part it cannot use, nor an empty
  message. (The runtime's history window then also drops a tool call whose result was in such
  a message, so calls and results stay paired.)
* Tool results in a ``tool`` or ``user`` message become one ``tool`` message each, written before
  the rest of a user message; they read back as separate ``role="tool"`` Messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memvault.errors import ValidationError
from memvault.formats.wire import dumps, mapping, parse_args, read_each, string
from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    UnreadablePart,
)

__all__ = ["from_openai", "to_openai"]

ROLES = ("system", "developer", "user", "assistant", "tool")
PASSTHROUGH = ("refusal", "annotations", "audio", "function_call")
FILE_ID_SCHEME = "openai-file:"
FILE_FIELDS = ("file_data", "file_id", "filename")
ContentPart = TextPart | ImagePart | FilePart


def _fields(
    value: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Mapping[str, Any]:
    fields = mapping(value, where, required)
    if unknown := [k for k in fields if k not in required + optional]:
        allowed = ", ".join(required + optional)
        raise ValidationError(
            f"{where} has unsupported field(s) {', '.join(map(repr, unknown))}; allowed: {allowed}"
        )
    return fields


def _default_shape(role: str, content: list[ContentPart]) -> str:
    if not content:
        return "null" if role == "assistant" else "parts"
    return "text" if len(content) == 1 and isinstance(content[0], TextPart) else "parts"


# ---------------------------------------------------------------- OpenAI -> memvault


def from_openai(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Convert OpenAI chat messages (dicts) to Messages; raises ValidationError on bad input."""
    if isinstance(items, Mapping | str | bytes):
        raise ValidationError("from_openai takes a list of messages; wrap one message in a list")
    return read_each(items, _read, "OpenAI message")


def _read(item: Any, call_names: Mapping[str, str]) -> Message:
    if not isinstance(item, Mapping):
        raise ValidationError(f"must be a mapping (dict) with a 'role', got {type(item).__name__}")
    role = item.get("role")
    if role not in ROLES:
        raise ValidationError(f"role {role!r} is not supported; use one of: {', '.join(ROLES)}")
    meta: dict[str, Any] = {}
    if "name" in item:
        meta["name"] = string(item["name"], "name")
    if role == "tool":
        _fields(item, "a tool message", ("role", "content", "tool_call_id"), ("name",))
        call_id = string(item["tool_call_id"], "tool_call_id")
        content: Any = item["content"]
        if not isinstance(content, str):
            texts = [p.text for p in _read_content(content, "tool") if isinstance(p, TextPart)]
            content = texts[0] if len(texts) == 1 else texts
            meta["content_format"] = "parts"
        name = meta.get("name", call_names.get(call_id))
        part = ToolResultPart(tool_call_id=call_id, output=content, name=name)
        return Message(role="tool", parts=[part], metadata={"openai": meta} if meta else {})

    extra = ("tool_calls", "reasoning_content", *PASSTHROUGH) if role == "assistant" else ()
    _fields(item, f"a {role} message", ("role",), ("content", "name", *extra))
    if role == "developer":
        meta["role"] = "developer"
    parts: list[Part] = []
    if "reasoning_content" in item:
        parts.append(ReasoningPart(text=string(item["reasoning_content"], "reasoning_content")))
    raw = item.get("content")
    shape = "omitted" if "content" not in item else "null" if raw is None else "text"
    if shape != "text" and role != "assistant":
        raise ValidationError(f"a {role} message needs 'content' (a string or a list of parts)")
    if isinstance(raw, list):
        shape = "parts"
    content_parts: list[ContentPart] = []
    if raw is not None:
        content_parts = [TextPart(text=raw)] if isinstance(raw, str) else _read_content(raw, role)
    if shape != _default_shape(role, content_parts):
        meta["content_format"] = shape
    parts += content_parts
    calls = item.get("tool_calls")
    if isinstance(calls, list) and calls:
        parts += [_read_call(call, f"tool_calls[{j}]", meta) for j, call in enumerate(calls)]
    elif "tool_calls" in item:
        if calls is not None and calls != []:
            raise ValidationError(f"tool_calls must be a list, got {type(calls).__name__}")
        meta["tool_calls"] = calls
    if item.get("function_call") is not None:
        raise ValidationError("the deprecated function_call is not supported; use tool_calls")
    meta.update((key, item[key]) for key in PASSTHROUGH if key in item)
    role = "system" if role == "developer" else role
    return Message(role=role, parts=parts, metadata={"openai": meta} if meta else {})


def _read_content(content: Any, role: str) -> list[ContentPart]:
    if not isinstance(content, list):
        raise ValidationError(f"content must be a string or a list, got {type(content).__name__}")
    out: list[ContentPart] = []
    for j, raw in enumerate(content):
        where = f"content[{j}]"
        kind = raw.get("type") if isinstance(raw, Mapping) else None
        if kind == "text":
            text = _fields(raw, where, ("type", "text"))["text"]
            out.append(TextPart(text=string(text, f"{where}.text")))
        elif kind == "image_url" and role != "tool":
            where += ".image_url"
            image = _fields(
                _fields(raw, where, ("type", "image_url"))["image_url"],
                where,
                ("url",),
                ("detail",),
            )
            detail = string(image["detail"], f"{where}.detail") if "detail" in image else None
            out.append(ImagePart(url=string(image["url"], f"{where}.url"), detail=detail))
        elif kind == "file" and role != "tool":
            where += ".file"
            file = _fields(_fields(raw, where, ("type", "file"))["file"], where, (), FILE_FIELDS)
            if ("file_data" in file) == ("file_id" in file):
                raise ValidationError(f"{where} needs exactly one of 'file_data' and 'file_id'")
            if "file_id" in file:
                url = FILE_ID_SCHEME + string(file["file_id"], f"{where}.file_id")
            elif not (url := string(file["file_data"], f"{where}.file_data")).startswith("data:"):
                raise ValidationError(
                    f"{where}.file_data must be a data: URL (data:<type>;base64,...)"
                )
            name = string(file["filename"], f"{where}.filename") if "filename" in file else None
            out.append(FilePart(url=url, name=name))
        elif kind in ("input_audio", "refusal"):
            raise ValidationError(
                f"{where}: {kind!r} content parts are not supported; leave them out"
            )
        else:
            allowed = "text" if role == "tool" else "text, image_url, file"
            raise ValidationError(
                f"{where}: content part type {kind!r} is not allowed; use {allowed}"
            )
    return out


def _read_call(raw: Any, where: str, meta: dict[str, Any]) -> ToolCallPart:
    call = _fields(raw, where, ("id", "type", "function"))
    if call["type"] != "function":
        raise ValidationError(f"{where}.type is {call['type']!r}; only 'function' is supported")
    function = _fields(call["function"], f"{where}.function", ("name", "arguments"))
    call_id = string(call["id"], f"{where}.id")
    name = string(function["name"], f"{where}.function.name")
    text = string(function["arguments"], f"{where}.function.arguments (a JSON text)")
    args = parse_args(text)
    try:
        part = ToolCallPart(tool_call_id=call_id, name=name, args=args)
    except ValidationError:
        if isinstance(args, str):
            raise
        part = ToolCallPart(tool_call_id=call_id, name=name, args=text)  # e.g. "\\ud800" in it
    if isinstance(part.args, dict) and dumps(part.args) != text:
        meta.setdefault("raw_arguments", {})[call_id] = text
    return part


# ---------------------------------------------------------------- memvault -> OpenAI


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Convert Messages to OpenAI chat dicts; raises ValidationError for what OpenAI cannot hold."""
    if isinstance(messages, Message):
        raise ValidationError("to_openai takes a list of Messages; wrap one Message in a list")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Message):
            kind = type(message).__name__
            raise ValidationError(f"message [{i}] is a {kind}, not a Message; use Message.parse")
        if any(isinstance(p, UnknownPart | UnreadablePart) for p in message.parts):
            readable = [p for p in message.parts if not isinstance(p, UnknownPart | UnreadablePart)]
            if not readable:
                continue
            message = message.model_copy(update={"parts": readable})
        try:
            out += _write(message)
        except ValidationError as exc:
            raise ValidationError(f"message [{i}] (id {message.id!r}): {exc}") from None
    return out


def _write(message: Message) -> list[dict[str, Any]]:
    meta = message.metadata.get("openai", {})
    if not isinstance(meta, dict):
        raise ValidationError('metadata["openai"] must be a dict; remove or fix it')
    results = message.tool_results
    rest: list[Part] = [p for p in message.parts if not isinstance(p, ToolResultPart)]
    if message.role == "tool" and (rest or not results):
        raise ValidationError("a tool message must hold tool-result parts only (at least one)")
    if results and message.role == "assistant":
        return _write_steps(message, meta)
    if results and message.role not in ("tool", "user"):
        raise ValidationError(f"tool results cannot be in a {message.role} message; use role tool")
    out = [_write_result(p, meta, message.role) for p in results]
    if message.role != "tool" and (rest or not results):
        out.append(_write_message(message, rest, meta))
    return out


def _write_steps(message: Message, meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An assistant message that holds its tool results too (as the runtime's conversation
    buffer makes one: each result right after its call) becomes the OpenAI sequence: an
    assistant message with the calls, a tool message per result, and so on. One way only:
    :func:`from_openai` reads that sequence back as separate messages."""
    out: list[dict[str, Any]] = []
    step: list[Part] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            if step:
                out.append(_write_message(message, step, meta))
                step = []
            out.append(_write_result(part, meta, "tool"))
        else:
            step.append(part)
    if step:
        out.append(_write_message(message, step, meta))
    return out


def _write_result(part: ToolResultPart, meta: Mapping[str, Any], role: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "tool", "tool_call_id": part.tool_call_id}
    output = part.output
    if role == "tool" and meta.get("content_format") == "parts":
        strings = isinstance(output, list) and all(isinstance(t, str) for t in output)
        texts = output if strings else [output if isinstance(output, str) else dumps(output)]
        out["content"] = [{"type": "text", "text": text} for text in texts]
    else:
        out["content"] = output if isinstance(output, str) else dumps(output)
    if role == "tool" and isinstance(meta.get("name"), str):
        out["name"] = meta["name"]
    return out


def _write_message(message: Message, parts: list[Part], meta: Mapping[str, Any]) -> dict[str, Any]:
    assistant = message.role == "assistant"
    developer = meta.get("role") == "developer" and message.role == "system"
    content: list[ContentPart] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    raws = meta.get("raw_arguments")
    for part in parts:
        if isinstance(part, TextPart | ImagePart | FilePart):
            content.append(part)
        elif isinstance(part, ReasoningPart) and assistant:
            reasoning.append(part.text)
        elif isinstance(part, ToolCallPart) and assistant:
            raw = raws.get(part.tool_call_id) if isinstance(raws, dict) else None
            function = {"name": part.name, "arguments": _write_args(part, raw)}
            calls.append({"id": part.tool_call_id, "type": "function", "function": function})
        elif isinstance(part, DataPart):
            raise ValidationError(
                "OpenAI chat cannot carry data parts; turn each into "
                "TextPart(text=json.dumps(data)) or drop it before to_openai"
            )
        else:
            raise ValidationError(f"OpenAI chat has no {part.type!r} parts in {message.role} messages")
    out: dict[str, Any] = {"role": "developer" if developer else message.role}
    if isinstance(meta.get("name"), str):
        out["name"] = meta["name"]
    if reasoning:
        out["reasoning_content"] = "\n".join(reasoning)
    wanted = meta.get("content_format")
    feasible = wanted == "parts" or (wanted == "omitted" and assistant and not content)
    shape = wanted if feasible else _default_shape(message.role, content)
    first = content[0] if content else None
    if shape == "text" and isinstance(first, TextPart):
        out["content"] = first.text
    elif shape != "omitted":
        out["content"] = None if shape == "null" else [_write_part(p) for p in content]
    if calls:
        out["tool_calls"] = calls
    elif assistant and meta.get("tool_calls", 0) in (None, []):
        out["tool_calls"] = meta["tool_calls"]
    if assistant:
        out.update((key, meta[key]) for key in PASSTHROUGH if key in meta)
    return out


def _write_args(part: ToolCallPart, raw: Any) -> str:
    if isinstance(part.args, str):
        return part.args
    canonical = dumps(part.args)
    if isinstance(raw, str) and isinstance(parsed := parse_args(raw), dict):
        return raw if dumps(parsed) == canonical else canonical
    return canonical


def _write_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        image = {"url": part.url} | ({"detail": part.detail} if part.detail else {})
        return {"type": "image_url", "image_url": image}
    if part.url.startswith(FILE_ID_SCHEME):
        file = {"file_id": part.url.removeprefix(FILE_ID_SCHEME)}
    elif part.url.startswith("data:"):
        file = {"file_data": part.url}
    else:
        raise ValidationError(
            f"OpenAI chat takes files only as data: URLs or uploaded ids ({FILE_ID_SCHEME}<id>), "
            f"not {part.url[:40]!r}; download or upload the file first"
        )
    if part.name is not None:
        file["filename"] = part.name
    return {"type": "file", "file": file}
