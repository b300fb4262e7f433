"""Convert between memvault messages and Anthropic Messages API messages (``MessageParam``).

``from_anthropic(items)`` returns one :class:`Message` per Anthropic message;
``to_anthropic(messages)`` returns plain dicts for ``client.messages.create(messages=...)``.
For every valid input ``to_anthropic(from_anthropic(x)) == x`` exactly (as JSON: a tuple reads
back as a list).

Mapping (content blocks <-> parts, in order):

* ``text`` <-> :class:`TextPart`;
* ``image`` <-> :class:`ImagePart`: a ``base64`` source is the URL
  ``data:<media_type>;base64,<data>`` (``media_type`` set too), a ``url`` source its URL, a
  ``file`` source ``anthropic-file:<file_id>``;
* ``document`` with a ``base64``, ``url`` or ``file`` source <-> :class:`FilePart` (the same URLs);
* ``tool_use`` <-> :class:`ToolCallPart` (``input`` is ``args``);
* ``tool_result`` <-> :class:`ToolResultPart`: ``output`` is the ``content`` string, its list of
  blocks as JSON, or ``None`` when there is no content; ``is_error`` as is; ``name`` restored from
  the matching ``tool_use`` earlier in the same list;
* ``thinking`` <-> :class:`ReasoningPart` (``thinking`` text and ``signature``);
* ``redacted_thinking`` and every other block type (server tools, search results, documents
  with text sources, ...) <-> a :class:`DataPart` named ``anthropic:<type>`` holding the block.

Roles: ``user``, ``assistant`` and ``system`` as is; a user message whose content is only
``tool_result`` blocks reads as a ``role="tool"`` Message (written back as ``user``).

What a part cannot hold is kept in ``metadata["anthropic"]`` (set only when needed):
``content: "parts"`` when a list holding one plain text block was sent (the default writes it as
a string), and ``blocks``: per part number, the fields of the block the part does not give
(``cache_control``, ``citations``, ``is_error: false``, a URL image whose URL is a ``data:``
URL, ...; see :mod:`memvault.formats.fidelity`). Those apply only while the part is unchanged:
an edited part is written in the default form.

What Anthropic cannot carry, and what ``to_anthropic`` does with it:

* ids, thread and resource, ``created_at``, ``seq``, metadata other than ``"anthropic"``:
  dropped (from_anthropic gives fresh ids).
* ``ImagePart.detail``, ``ImagePart.media_type`` of a non-``data:`` URL, ``FilePart.name``:
  dropped (a document's ``title`` is kept in the block patch when it was read from Anthropic).
* A :class:`ReasoningPart` without a ``signature`` (another provider's reasoning): left out,
  as Anthropic takes back only signed thinking; a message left empty by that is left out.
* ``ToolResultPart.output`` that is neither text, ``None`` nor a list of blocks (dicts with a
  ``type``): written as compact JSON text, and reads back as that string.
* :class:`DataPart` not named ``anthropic:<type>`` (with that block as ``data``), tool calls
  whose ``args`` are not a JSON object, non-text parts in a system message and tool calls
  outside an assistant message: refused with ValidationError.
* Parts this memvault cannot read (:class:`UnknownPart`, :class:`UnreadablePart`) are left out,
  and a message left with no part by that.
* An assistant message holding its tool results (as the runtime's buffer keeps them) becomes an
  assistant message, a user message with the results, and so on; it reads back as separate
  messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memvault.errors import ValidationError
from memvault.formats.fidelity import apply_to_part, part_patch
from memvault.formats.wire import (
    data_url,
    list_of,
    mapping,
    own_data,
    read_each,
    record_content,
    recorded_meta,
    result_output,
    split_data_url,
    string,
    write_each,
)
from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["KEY", "from_anthropic", "to_anthropic"]

KEY = "anthropic"
"""The metadata key of what a message's parts cannot hold."""
FILE_SCHEME = "anthropic-file:"
DATA_PREFIX = "anthropic:"
ROLES = ("user", "assistant", "system")


# ---------------------------------------------------------------- Anthropic -> memvault


def from_anthropic(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Convert Anthropic messages (dicts) to Messages; raises ValidationError on bad input."""
    return read_each(list_of(items, "messages", "from_anthropic"), _read, "Anthropic message")


def _read(item: Any, names: Mapping[str, str]) -> Message:
    item = mapping(item, "a message", ("role", "content"))
    if unknown := [k for k in item if k not in ("role", "content")]:
        raise ValidationError(f"unsupported field(s) {', '.join(map(repr, unknown))}; allowed: role, content")
    role = item["role"]
    if role not in ROLES:
        raise ValidationError(f"role {role!r} is not supported; use one of: {', '.join(ROLES)}")
    content = item["content"]
    meta: dict[str, Any] = {}
    if isinstance(content, str):
        parts: list[Part] = [TextPart(text=content)]
    else:
        if isinstance(content, Mapping) or not isinstance(content, Iterable):
            raise ValidationError(
                f"content must be a string or a list of blocks, got {type(content).__name__}"
            )
        blocks = list(content)
        parts = []
        patches: dict[str, Any] = {}
        for j, raw in enumerate(blocks):
            where = f"content[{j}]"
            block = mapping(raw, where, ("type",))
            part = _read_block(block, where, role, names)
            if (found := part_patch(part, block, _write_block(part))) is not None:
                patches[str(j)] = found
            parts.append(part)
        record_content(meta, parts, patches)
        if blocks and all(b.get("type") == "tool_result" for b in blocks) and role == "user":
            role = "tool"
    out_role: Role = role
    return Message(role=out_role, parts=parts, metadata={KEY: meta} if meta else {})


def _read_block(block: Mapping[str, Any], where: str, role: str, names: Mapping[str, str]) -> Part:
    kind = block["type"]
    if role == "system" and kind != "text":
        raise ValidationError(f"{where}: a system message holds text blocks only, not {kind!r}")
    if (kind, role) in (("tool_use", "user"), ("tool_result", "assistant")):
        side = "assistant" if kind == "tool_use" else "user"
        raise ValidationError(
            f"{where}: a {kind} block belongs in a{'n' * (side == 'assistant')} {side} message"
        )
    if kind == "text":
        return TextPart(text=string(mapping(block, where, ("text",))["text"], f"{where}.text"))
    if kind in ("image", "document"):
        source = mapping(mapping(block, where, ("source",))["source"], f"{where}.source", ("type",))
        read = _read_source(source, f"{where}.source")
        if read is not None:
            url, media_type = read
            if kind == "image":
                return ImagePart(url=url, media_type=media_type)
            return FilePart(url=url, media_type=media_type)
    elif kind == "tool_use":
        block = mapping(block, where, ("id", "name", "input"))
        args = mapping(block["input"], f"{where}.input")
        return ToolCallPart(
            tool_call_id=string(block["id"], f"{where}.id"),
            name=string(block["name"], f"{where}.name"),
            args=dict(args),
        )
    elif kind == "tool_result":
        call_id = string(mapping(block, where, ("tool_use_id",))["tool_use_id"], f"{where}.tool_use_id")
        content = block.get("content")
        if content is not None and not isinstance(content, str):
            content = [dict(mapping(b, f"{where}.content")) for b in list_of(content, "blocks", where)]
        is_error = block.get("is_error", False)
        return ToolResultPart(
            tool_call_id=call_id, output=content, is_error=is_error is True, name=names.get(call_id)
        )
    elif kind == "thinking":
        block = mapping(block, where, ("thinking", "signature"))
        return ReasoningPart(
            text=string(block["thinking"], f"{where}.thinking"),
            signature=string(block["signature"], f"{where}.signature"),
        )
    string(kind, f"{where}.type")
    return DataPart(name=DATA_PREFIX + kind, data=dict(block))


def _read_source(source: Mapping[str, Any], where: str) -> tuple[str, str | None] | None:
    """``(url, media_type)`` of a base64, url or file source; ``None`` for other sources."""
    kind = source["type"]
    if kind == "base64":
        source = mapping(source, where, ("media_type", "data"))
        media_type = string(source["media_type"], f"{where}.media_type")
        return data_url(media_type, string(source["data"], f"{where}.data")), media_type
    if kind == "url":
        return string(mapping(source, where, ("url",))["url"], f"{where}.url"), None
    if kind == "file":
        return FILE_SCHEME + string(mapping(source, where, ("file_id",))["file_id"], f"{where}.file_id"), None
    return None


# ---------------------------------------------------------------- memvault -> Anthropic


def to_anthropic(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Convert Messages to Anthropic message dicts; raises ValidationError for what Anthropic
    cannot hold (see the module's documentation)."""
    return write_each(messages, _write, "to_anthropic")


def _write(message: Message, numbered: list[tuple[int, Part]]) -> list[dict[str, Any]]:
    meta, patches = recorded_meta(message, KEY)
    kept = [(j, p) for j, p in numbered if not (isinstance(p, ReasoningPart) and p.signature is None)]
    if numbered and not kept:
        return []
    results = [p for _, p in kept if isinstance(p, ToolResultPart)]
    if message.role == "tool" and (len(results) != len(kept) or not results):
        raise ValidationError("a tool message must hold tool-result parts only (at least one)")
    if results and message.role == "system":
        raise ValidationError("tool results cannot be in a system message; use role tool")
    runs: list[tuple[str, list[tuple[int, Part]]]] = []
    for j, part in kept:
        side: str = (
            "user" if message.role in ("user", "tool") or isinstance(part, ToolResultPart) else message.role
        )
        if runs and runs[-1][0] == side:
            runs[-1][1].append((j, part))
        else:
            runs.append((side, [(j, part)]))
    if not runs:
        runs = [("user" if message.role == "tool" else message.role, [])]
    out = []
    for role, run in runs:
        blocks = []
        for j, part in run:
            if isinstance(part, ToolCallPart) and role != "assistant":
                raise ValidationError(f"tool calls belong in assistant messages, not {message.role}")
            if role == "system" and not isinstance(part, TextPart):
                raise ValidationError(f"a system message holds text only, not {part.type!r} parts")
            blocks.append(apply_to_part(part, _write_block(part), patches.get(str(j))))
        content: Any = blocks
        plain = len(blocks) == 1 and blocks[0] == {"type": "text", "text": blocks[0].get("text")}
        if len(runs) == 1 and plain and meta.get("content") != "parts":
            content = blocks[0]["text"]
        out.append({"role": role, "content": content})
    return out



def _write_block(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart | FilePart):
        kind = "image" if isinstance(part, ImagePart) else "document"
        return {"type": kind, "source": _write_source(part.url)}
    if isinstance(part, ToolCallPart):
        if not isinstance(part.args, dict):
            raise ValidationError(
                f"tool call {part.tool_call_id!r} has args that are not a JSON object; "
                "Anthropic's tool_use input must be one"
            )
        return {"type": "tool_use", "id": part.tool_call_id, "name": part.name, "input": part.args}
    if isinstance(part, ToolResultPart):
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_call_id}
        if part.output is not None:
            block["content"] = result_output(part.output)
        if part.is_error:
            block["is_error"] = True
        return block
    if isinstance(part, ReasoningPart):
        return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
    if isinstance(part, DataPart):
        if (own := own_data(part, DATA_PREFIX)) is not None:
            return own
        raise ValidationError(
            "Anthropic cannot carry data parts other than its own blocks (a DataPart named "
            "'anthropic:<type>' holding that block); turn it into a TextPart or drop it first"
        )
    raise ValidationError(f"Anthropic has no {part.type!r} parts")


def _write_source(url: str) -> dict[str, Any]:
    if (split := split_data_url(url)) is not None:
        return {"type": "base64", "media_type": split[0], "data": split[1]}
    if url.startswith(FILE_SCHEME):
        return {"type": "file", "file_id": url[len(FILE_SCHEME) :]}
    return {"type": "url", "url": url}
