"""Convert between memvault messages and OpenAI Responses API items (``ResponseInputItemParam``).

``from_responses(items)`` returns one :class:`Message` per item; ``to_responses(messages)``
returns plain dicts for ``client.responses.create(input=...)`` (an output item, like a
``response.output`` entry dumped with ``model_dump()``, is accepted as input too). For every
valid input ``to_responses(from_responses(x)) == x`` exactly (as JSON).

Mapping:

* ``message`` items (``type`` given or not; roles ``user``, ``assistant``, ``system``,
  ``developer``; ``developer`` reads as ``system``): a Message of that role whose parts are the
  content: a string, ``input_text`` and ``output_text`` <-> :class:`TextPart`, ``input_image``
  <-> :class:`ImagePart` (``image_url``, or ``openai-file:<file_id>``; ``detail``),
  ``input_file`` <-> :class:`FilePart` (``file_data``, ``file_url`` or ``openai-file:<file_id>``;
  ``filename`` as ``name``), ``refusal`` <-> a :class:`TextPart` of the refusal text;
* ``function_call`` <-> an ``assistant`` Message with one :class:`ToolCallPart` (``call_id``,
  ``name``, ``args`` the parsed ``arguments`` object, or their text when it is not one);
* ``function_call_output`` <-> a ``tool`` Message with one :class:`ToolResultPart`
  (``output`` the string, or the list of content items as JSON; ``name`` the item's or the
  matching call's earlier in the list);
* ``reasoning`` <-> an ``assistant`` Message with a :class:`ReasoningPart` per summary text;
* any other item (hosted tool calls, ``item_reference``, ...) <-> an ``assistant`` Message with
  one :class:`DataPart` named ``openai:<type>`` holding the item.

What the parts cannot hold is kept in ``metadata["openai_responses"]`` (set only when needed):
``item``, the item's other fields (``id``, ``status``, ``phase``, ``role: "developer"``, a
missing ``type``, a reasoning item's ``encrypted_content`` and ``content``); ``blocks``, per part
number, the fields a content block or a call has beyond its part (``annotations``,
``logprobs``, the arguments' exact text, ...); ``content: "parts"`` for a list holding one plain
text. A block's or a call's record applies only while its part is unchanged, and a reasoning
item's only while its summary is (see :mod:`memvault.formats.fidelity`): an edit wins.

What the Responses API cannot carry, and what ``to_responses`` does with it:

* ids, thread and resource, ``created_at``, ``seq``, other metadata: dropped.
* :class:`ReasoningPart` that was not read from a Responses ``reasoning`` item (so has no item
  id to send back), and its ``signature``: left out; a message left empty by that is left out.
* ``ImagePart.media_type``, ``FilePart.media_type``; ``ToolResultPart.is_error`` (reads back
  ``False``); a ``ToolResultPart.output`` that is neither text nor a list of content items
  (dicts with a ``type``): written as compact JSON text and read back as that string.
* :class:`DataPart` not named ``openai:<type>`` holding that item, tool calls or reasoning
  outside assistant messages, images and files in assistant messages (Responses input takes
  an assistant's text only): refused with ValidationError.
* Parts this memvault cannot read (:class:`UnknownPart`, :class:`UnreadablePart`) are left out.
* A message mixing kinds (the runtime's assistant message with reasoning, text, calls and their
  results) becomes one item per kind run, in order; it reads back as separate messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memvault.errors import ValidationError
from memvault.formats.fidelity import apply, apply_to_part, fingerprint, part_patch, patch
from memvault.formats.wire import (
    dumps,
    list_of,
    mapping,
    own_data,
    parse_args,
    read_each,
    record_content,
    recorded_meta,
    result_output,
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

__all__ = ["KEY", "from_responses", "to_responses"]

KEY = "openai_responses"
"""The metadata key of what a message's parts cannot hold."""
FILE_SCHEME = "openai-file:"
DATA_PREFIX = "openai:"
ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
TEXT_TYPES = ("input_text", "output_text")
DETAILS = ("auto", "low", "high")


# ---------------------------------------------------------------- Responses -> memvault


def from_responses(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Convert Responses items (dicts) to Messages; raises ValidationError on bad input."""
    return read_each(list_of(items, "items", "from_responses"), _read, "Responses item")


def _read(item: Any, names: Mapping[str, str]) -> Message:
    item = mapping(item, "an item")
    kind = item.get("type", "message")
    meta: dict[str, Any] = {}
    if kind == "message":
        return _read_message(item, meta)
    part: Part
    if kind == "function_call":
        item = mapping(item, "a function_call", ("call_id", "name", "arguments"))
        text = string(item["arguments"], "arguments (a JSON text)")
        call_id, called = string(item["call_id"], "call_id"), string(item["name"], "name")
        try:
            part = ToolCallPart(tool_call_id=call_id, name=called, args=parse_args(text))
        except ValidationError:
            part = ToolCallPart(tool_call_id=call_id, name=called, args=text)  # e.g. "\\ud800" in it
        role: Role = "assistant"
    elif kind == "function_call_output":
        item = mapping(item, "a function_call_output", ("call_id", "output"))
        call_id = string(item["call_id"], "call_id")
        output = item["output"]
        if not isinstance(output, str):
            output = [dict(mapping(b, "output[]")) for b in list_of(output, "content items", "output")]
        given = item.get("name")
        name = given if isinstance(given, str) else names.get(call_id)
        part, role = ToolResultPart(tool_call_id=call_id, output=output, name=name), "tool"
    elif kind == "reasoning":
        summary = list_of(mapping(item, "a reasoning item", ("summary",))["summary"], "summaries", "summary")
        parts: list[Part] = [
            ReasoningPart(text=string(mapping(s, f"summary[{j}]", ("text",))["text"], f"summary[{j}].text"))
            for j, s in enumerate(summary)
        ]
        found = patch(item, _write_reasoning(parts))
        if found is not None:
            meta["item"] = {"part": _fingerprints(parts), **found}
        return Message(role="assistant", parts=parts, metadata={KEY: meta} if meta else {})
    else:
        part, role = DataPart(name=DATA_PREFIX + string(kind, "type"), data=dict(item)), "assistant"
    if (found := part_patch(part, item, _write_single(part))) is not None:
        meta["blocks"] = {"0": found}
    return Message(role=role, parts=[part], metadata={KEY: meta} if meta else {})


def _read_message(item: Mapping[str, Any], meta: dict[str, Any]) -> Message:
    item = mapping(item, "a message", ("role", "content"))
    role = item["role"]
    if role not in ROLES:
        raise ValidationError(f"role {role!r} is not supported; use one of: {', '.join(ROLES)}")
    content = item["content"]
    parts: list[Part] = []
    if isinstance(content, str):
        parts.append(TextPart(text=content))
    else:
        patches: dict[str, Any] = {}
        for j, raw in enumerate(list_of(content, "content parts", "content")):
            block = mapping(raw, f"content[{j}]", ("type",))
            part = _read_block(block, f"content[{j}]")
            if role == "assistant" and not isinstance(part, TextPart):
                raise ValidationError(
                    f"content[{j}]: an assistant message holds text only, not {part.type!r}"
                )
            if (found := part_patch(part, block, _write_block(part, role))) is not None:
                patches[str(j)] = found
            parts.append(part)
        record_content(meta, parts, patches)
    rest = {k: v for k, v in item.items() if k != "content"}
    if (found := patch(rest, {"type": "message", "role": ROLES[role]})) is not None:
        meta["item"] = found
    return Message(role=ROLES[role], parts=parts, metadata={KEY: meta} if meta else {})


def _read_block(block: Mapping[str, Any], where: str) -> Part:
    kind = block["type"]
    if kind in TEXT_TYPES:
        return TextPart(text=string(mapping(block, where, ("text",))["text"], f"{where}.text"))
    if kind == "refusal":
        return TextPart(text=string(mapping(block, where, ("refusal",))["refusal"], f"{where}.refusal"))
    if kind == "input_image":
        detail = block.get("detail")
        url = _file_url(block, ("image_url",), where)
        return ImagePart(url=url, detail=detail if detail in DETAILS else None)
    if kind == "input_file":
        name = block.get("filename")
        return FilePart(
            url=_file_url(block, ("file_data", "file_url"), where),
            name=name if isinstance(name, str) else None,
        )
    raise ValidationError(
        f"{where}: content type {kind!r} is not supported; use input_text, output_text, refusal, "
        "input_image or input_file"
    )


def _file_url(block: Mapping[str, Any], fields: tuple[str, ...], where: str) -> str:
    for field in fields:
        if isinstance(block.get(field), str):
            return str(block[field])
    if isinstance(file_id := block.get("file_id"), str):
        return FILE_SCHEME + file_id
    raise ValidationError(f"{where} needs one of {', '.join(map(repr, (*fields, 'file_id')))}")


# ---------------------------------------------------------------- memvault -> Responses


def to_responses(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Convert Messages to Responses input items; raises ValidationError for what the
    Responses API cannot hold (see the module's documentation)."""
    return write_each(messages, _write, "to_responses")


def _kind(part: Part, role: str) -> str:
    if isinstance(part, ToolCallPart | ToolResultPart | ReasoningPart | DataPart):
        if role != "assistant" and isinstance(part, ToolCallPart | ReasoningPart):
            raise ValidationError(f"{part.type!r} parts belong in assistant messages, not {role}")
        return part.type
    if role == "tool":
        raise ValidationError("a tool message must hold tool-result parts only (at least one)")
    if role == "assistant" and not isinstance(part, TextPart):
        raise ValidationError(
            f"an assistant message holds text only in Responses input, not {part.type!r} parts"
        )
    return "message"


def _write(message: Message, numbered: list[tuple[int, Part]]) -> list[dict[str, Any]]:
    meta, patches = recorded_meta(message, KEY)
    recorded = meta.get("item")
    reasoning_item = isinstance(recorded, dict) and "part" in recorded  # read from a reasoning item
    recorded_part = recorded.get("part") if isinstance(recorded, dict) else None
    if not reasoning_item:
        numbered = [(j, p) for j, p in numbered if not isinstance(p, ReasoningPart)]
        if not numbered and message.parts:
            return []
    if not numbered:
        if message.role == "tool":
            raise ValidationError("a tool message must hold tool-result parts only (at least one)")
        if reasoning_item and recorded_part == "":
            return [apply(_write_reasoning([]), recorded)]
        return [apply(_write_message(message.role, [], meta), recorded)]
    runs: list[tuple[str, list[tuple[int, Part]]]] = []
    for j, part in numbered:
        kind = _kind(part, message.role)
        if runs and runs[-1][0] == kind and kind in ("message", "reasoning"):
            runs[-1][1].append((j, part))
        else:
            runs.append((kind, [(j, part)]))
    out = []
    for kind, run in runs:
        parts = [p for _, p in run]
        if kind == "message":
            blocks = [apply_to_part(p, _write_block(p, message.role), patches.get(str(j))) for j, p in run]
            if _easy_assistant(message.role, recorded, blocks, parts):
                # an output message needs its id and status: one plain message per text instead
                items = [_write_message("assistant", [b], meta, single=True) for b in blocks]
                out += [apply(items[0], recorded)] if len(runs) == len(items) == 1 else items
                continue
            item = _write_message(message.role, blocks, meta, single=len(runs) == 1)
            out.append(apply(item, recorded) if len(runs) == 1 else item)
        elif kind == "reasoning":
            item = _write_reasoning(parts)
            fits = recorded_part == _fingerprints(parts)
            out.append(apply(item, recorded) if fits else item)
        else:
            j, part = run[0]
            out.append(apply_to_part(part, _write_single(part), patches.get(str(j))))
    return out


def _easy_assistant(role: str, recorded: Any, blocks: list[dict[str, Any]], parts: list[Part]) -> bool:
    """Whether an assistant's texts go as easy messages: no output-message id was recorded."""
    has_id = isinstance(recorded, dict) and isinstance(recorded.get("set"), dict) and "id" in recorded["set"]
    plain = all(b == _write_block(p, role) for b, p in zip(blocks, parts, strict=True))
    return role == "assistant" and not has_id and plain



def _write_message(
    role: str, blocks: list[dict[str, Any]], meta: Mapping[str, Any], single: bool = False
) -> dict[str, Any]:
    content: Any = blocks
    plain = len(blocks) == 1 and blocks[0] == _write_block(TextPart(text=str(blocks[0].get("text"))), role)
    if single and plain and meta.get("content") != "parts":
        content = blocks[0]["text"]
    return {"type": "message", "role": role, "content": content}


def _write_block(part: Part, role: str) -> dict[str, Any]:
    if isinstance(part, TextPart):
        if role == "assistant":
            return {"type": "output_text", "text": part.text, "annotations": []}
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        block = {"type": "input_image", "detail": part.detail or "auto"}
        key = "file_id" if part.url.startswith(FILE_SCHEME) else "image_url"
        return block | {key: part.url.removeprefix(FILE_SCHEME) if key == "file_id" else part.url}
    if isinstance(part, FilePart):
        if part.url.startswith(FILE_SCHEME):
            block = {"type": "input_file", "file_id": part.url.removeprefix(FILE_SCHEME)}
        else:
            block = {
                "type": "input_file",
                "file_data" if part.url.startswith("data:") else "file_url": part.url,
            }
        return block | ({"filename": part.name} if part.name is not None else {})
    raise ValidationError(f"the Responses API has no {part.type!r} content")


def _write_single(part: Part) -> dict[str, Any]:
    if isinstance(part, ToolCallPart):
        arguments = part.args if isinstance(part.args, str) else dumps(part.args)
        return {
            "type": "function_call",
            "call_id": part.tool_call_id,
            "name": part.name,
            "arguments": arguments,
        }
    if isinstance(part, ToolResultPart):
        output = result_output(part.output)
        return {"type": "function_call_output", "call_id": part.tool_call_id, "output": output}
    if isinstance(part, DataPart):
        if (own := own_data(part, DATA_PREFIX)) is not None:
            return own
        raise ValidationError(
            "the Responses API cannot carry data parts other than its own items (a DataPart named "
            "'openai:<type>' holding that item); turn it into a TextPart or drop it first"
        )
    raise ValidationError(f"the Responses API has no {part.type!r} items")


def _write_reasoning(parts: list[Part]) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": p.text} for p in parts if isinstance(p, ReasoningPart)]
    return {"type": "reasoning", "summary": summary}


def _fingerprints(parts: list[Part]) -> str:
    return ",".join(fingerprint(p) for p in parts)
