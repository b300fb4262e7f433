"""Pydantic AI ``ModelMessage`` objects to memvault messages and back, exactly.

:func:`to_memvault` makes one memvault :class:`~memvault.model.Message` of each
``ModelRequest`` or ``ModelResponse``. The message keeps the Pydantic AI message in
``metadata["pydantic_ai"]`` as JSON text (Pydantic AI's own ``ModelMessagesTypeAdapter``
form), and its role and parts are a readable view for memvault's other faces (search, recall,
history windows, the format converters):

* a request of system prompts only: ``system``; of tool returns (and legacy retry prompts) only:
  ``tool``; any other request: ``user``; a response: ``assistant``;
* ``SystemPromptPart`` (in a request of system prompts only: in a user's request they are kept
  in the stored JSON only, as they are not the user's words), ``UserPromptPart`` texts,
  ``TextPart``: :class:`TextPart`; image URLs in a
  user prompt: :class:`ImagePart`; ``ThinkingPart``: :class:`ReasoningPart` (with its signature);
  ``ToolCallPart``: :class:`ToolCallPart` (``args`` the object, or the arguments' text when
  they are not a JSON object); ``ToolReturnPart``: :class:`ToolResultPart` (``output`` the
  content as JSON, ``is_error`` when its ``outcome`` is not ``success``); a legacy
  ``RetryPromptPart``: a :class:`ToolResultPart` with ``is_error`` (or a :class:`TextPart` when
  it answers no tool call); ``RetryFeedbackPart``: a :class:`TextPart` of its content;
* other parts (binary content, files, built-in tool parts, newer kinds) are kept only in the
  stored JSON.

**Stored once.** A text or tool output that a part shows exactly is left out of the JSON text
and put back from the part on reading (``{"message": ..., "refs": [[part, *path], ...]}``).
Values memvault's text cannot hold (NUL bytes, lone surrogates) are shown cleaned (NUL -> space,
lone surrogate -> U+FFFD) and kept exactly, escaped, in the JSON text.

:func:`to_pydantic_ai` reads messages back: a message saved by :func:`to_memvault` gives its
``ModelMessage`` exactly as Pydantic AI's own JSON persistence does
(``ModelMessagesTypeAdapter.validate_python(dump_python(m, mode="json"))``, which is ``m``
itself but for lazily computed fields and the translation of deprecated parts); one other code
saved to the
thread gives the closest one (text as prompts or ``TextPart``, tool calls and results, reasoning
as ``ThinkingPart``; other parts left out).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memvault.errors import ValidationError
from memvault.extras import import_optional
from memvault.integrations.stored_once import View, exact, restore
from memvault.model import (
    ImagePart,
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memvault.rules.exact import clean_text

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["KEY", "to_memvault", "to_pydantic_ai"]

KEY = "pydantic_ai"
"""The metadata key of the stored Pydantic AI message."""
Path = list[str | int]


def pydantic_ai_messages() -> Any:
    """The ``pydantic_ai.messages`` module, or MissingExtraError naming the extra."""
    return import_optional(
        "pydantic_ai.messages", "memvault's Pydantic AI integration", needs=("pydantic_ai",)
    )


def to_memvault(message: ModelMessage) -> Message:
    """The memvault message that stores ``message`` exactly (see the module's documentation).
    Anything but a ``ModelRequest`` or ``ModelResponse``, or one Pydantic AI's own
    ``ModelMessagesTypeAdapter`` cannot write as JSON, raises ValidationError."""
    module = pydantic_ai_messages()
    if not isinstance(message, module.ModelRequest | module.ModelResponse):
        raise ValidationError(
            f"expected a Pydantic AI ModelRequest or ModelResponse, got {type(message).__name__}"
        )
    try:
        dumped = module.ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    except (ValueError, UnicodeError) as exc:  # e.g. a lone surrogate where Pydantic AI cannot write one
        raise ValidationError(f"Pydantic AI cannot write this message as JSON: {exc}") from None
    view = View()
    kinds = [p.get("part_kind") for p in dumped["parts"]]
    system_only = bool(kinds) and all(kind == "system-prompt" for kind in kinds)
    for k, part in enumerate(dumped["parts"]):
        if part.get("part_kind") != "system-prompt" or system_only:
            _view_part(part, k, view)
    role: Role = "assistant"
    if dumped.get("kind") == "request":
        if system_only:
            role = "system"
        elif (
            view.parts
            and all(isinstance(p, ToolResultPart) for p in view.parts)
            and all(kind in ("tool-return", "retry-prompt") for kind in kinds)
        ):
            role = "tool"
        else:
            role = "user"
    return Message(role=role, parts=view.parts, metadata={KEY: view.stored(dumped)})


def _view_part(part: dict[str, Any], k: int, view: View) -> None:
    kind = part.get("part_kind")
    where: Path = ["parts", k, "content"]
    content = part.get("content")
    if kind in ("system-prompt", "text"):
        view.text(content, where)
    elif kind == "thinking":
        view.text(content, where, reasoning=True, signature=part.get("signature"))
    elif kind == "user-prompt":
        if isinstance(content, str):
            view.text(content, where)
        elif isinstance(content, list):
            for i, item in enumerate(content):
                if isinstance(item, str):
                    view.text(item, [*where, i])
                elif (
                    isinstance(item, dict)
                    and item.get("kind") == "image-url"
                    and isinstance(item.get("url"), str)
                ):
                    url = item["url"]
                    if exact(url):
                        view.add(ImagePart(url=url), [*where, i, "url"])
    elif kind == "tool-call":
        args = part.get("args")
        if isinstance(args, str):
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = None
            args = parsed if isinstance(parsed, dict) else args
        call, name = part.get("tool_call_id"), part.get("tool_name")
        if _is_id(call) and isinstance(name, str) and exact(name) and exact(args):
            view.add(ToolCallPart(tool_call_id=call, name=name, args=args or {}))
    elif kind == "retry-feedback":
        view.add(TextPart(text=clean_text(_retry_text(content))))
    elif kind in ("tool-return", "retry-prompt"):
        call, name = part.get("tool_call_id"), part.get("tool_name")
        ok = _is_id(call)
        label = name if isinstance(name, str) and exact(name) else None
        if kind == "tool-return" and ok:
            whole = exact(content)
            output = content if whole else None
            failed = part.get("outcome") not in (None, "success")
            view.add(
                ToolResultPart(tool_call_id=call, output=output, name=label, is_error=failed),
                where if whole else None,
            )
        elif kind == "retry-prompt":
            text = _retry_text(content)
            if ok and label is not None:
                view.add(
                    ToolResultPart(tool_call_id=call, output=clean_text(text), is_error=True, name=label)
                )
            else:
                view.add(TextPart(text=clean_text(text)))


def _is_id(value: Any) -> bool:
    """Whether ``value`` can be a memvault tool-call id (a non-empty string of at most 256
    characters, plain text)."""
    return isinstance(value, str) and bool(value.strip()) and len(value) <= 256 and exact(value)


def _retry_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


# ---------------------------------------------------------------- back to Pydantic AI


def to_pydantic_ai(messages: Iterable[Message]) -> list[ModelMessage]:
    """The Pydantic AI messages the memvault ``messages`` stand for, in order (see the
    module's documentation). A message that stands for nothing (e.g. no readable part) is
    left out."""
    module = pydantic_ai_messages()
    dumped: list[Any] = []
    for message in messages:
        item = _stored(message)
        if item is None:
            item = _foreign(message)
        if item is not None:
            dumped.append(item)
    result: list[ModelMessage] = module.ModelMessagesTypeAdapter.validate_python(dumped)
    return result


def _stored(message: Message) -> dict[str, Any] | None:
    item = restore(message, KEY)
    return item if isinstance(item, dict) else None


def _foreign(message: Message) -> dict[str, Any] | None:
    """The closest Pydantic AI message (as its JSON form) for a message other code saved."""
    stamp = message.created_at.isoformat()
    parts: list[dict[str, Any]] = []
    if message.role == "assistant":
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"part_kind": "text", "content": part.text})
            elif isinstance(part, ReasoningPart):
                parts.append({"part_kind": "thinking", "content": part.text, "signature": part.signature})
            elif isinstance(part, ToolCallPart):
                parts.append(
                    {
                        "part_kind": "tool-call",
                        "tool_name": part.name,
                        "args": part.args,
                        "tool_call_id": part.tool_call_id,
                    }
                )
        return {"kind": "response", "parts": parts, "timestamp": stamp} if parts else None
    for part in message.parts:
        if isinstance(part, TextPart):
            kind = "system-prompt" if message.role == "system" else "user-prompt"
            parts.append({"part_kind": kind, "content": part.text, "timestamp": stamp})
        elif isinstance(part, ToolResultPart):
            parts.append(
                {
                    "part_kind": "tool-return",
                    "tool_name": part.name or "",
                    "content": part.output,
                    "tool_call_id": part.tool_call_id,
                    "timestamp": stamp,
                }
            )
    return {"kind": "request", "parts": parts} if parts else None
