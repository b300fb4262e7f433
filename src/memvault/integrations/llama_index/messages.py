"""LlamaIndex ``ChatMessage`` objects to memvault messages and back, exactly.

:func:`to_memvault` makes one memvault :class:`~memvault.model.Message` of a ``ChatMessage``;
the message keeps the ``ChatMessage`` in ``metadata["llama_index"]`` (its ``model_dump``, JSON
text; texts shown by a part are stored only there: :mod:`memvault.integrations.stored_once`),
and its role and parts are a readable view for memvault's other faces:

* roles: ``system`` and ``developer`` -> ``system``; ``user`` -> ``user``; ``assistant``,
  ``chatbot`` and ``model`` -> ``assistant``; ``tool`` and ``function`` -> ``tool`` when the
  message names its call (``additional_kwargs["tool_call_id"]``), else ``assistant``;
* ``TextBlock`` -> :class:`TextPart` (in a tool message: a :class:`ToolResultPart` whose output
  is the text); ``ThinkingBlock`` -> :class:`ReasoningPart`; ``ImageBlock`` with a URL ->
  :class:`ImagePart`; ``ToolCallBlock`` -> :class:`ToolCallPart`; other blocks (audio, video,
  documents, citations, images given as bytes or paths) are kept only in the stored JSON.

:func:`to_llama_index` reads back: a message saved by :func:`to_memvault` gives its
``ChatMessage`` exactly (``ChatMessage.model_validate(message.model_dump())``); one other code
saved gives the closest one (its text parts as text blocks, reasoning as thinking blocks, tool
calls as tool-call blocks, tool results as a ``tool`` message with the call's id).
"""

from __future__ import annotations

import json
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

if TYPE_CHECKING:
    from llama_index.core.base.llms.types import ChatMessage

__all__ = ["KEY", "llama_index_types", "to_llama_index", "to_memvault"]

KEY = "llama_index"
"""The metadata key of the stored ChatMessage."""
ROLES: dict[str, Role] = {
    "system": "system", "developer": "system", "user": "user", "assistant": "assistant",
    "chatbot": "assistant", "model": "assistant", "tool": "tool", "function": "tool",
}  # fmt: skip


def llama_index_types() -> Any:
    """The ``llama_index.core.base.llms.types`` module, or MissingExtraError naming the extra."""
    return import_optional("llama_index.core.base.llms.types", "memvault's LlamaIndex chat store")


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= 256 and exact(value)


def to_memvault(message: ChatMessage) -> Message:
    """The memvault message that stores ``message`` exactly (see the module's documentation).
    Anything but a ``ChatMessage`` raises ValidationError."""
    types = llama_index_types()
    if not isinstance(message, types.ChatMessage):
        raise ValidationError(f"expected a LlamaIndex ChatMessage, got {type(message).__name__}")
    try:
        dumped = message.model_dump(mode="json")
        json.dumps(dumped)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"LlamaIndex cannot write this ChatMessage as JSON: {exc}") from None
    call_id = (dumped.get("additional_kwargs") or {}).get("tool_call_id")
    role = ROLES.get(str(dumped.get("role")), "assistant")
    if role == "tool" and not _is_id(call_id):
        role = "assistant"
    view = View()
    for k, block in enumerate(dumped.get("blocks") or []):
        kind = block.get("block_type")
        where: list[str | int] = ["blocks", k]
        if kind == "text" and role == "tool":
            text = block.get("text")
            if isinstance(text, str) and exact(text):
                view.add(ToolResultPart(tool_call_id=call_id, output=text), [*where, "text"])
        elif kind == "text":
            view.text(block.get("text"), [*where, "text"])
        elif kind == "thinking":
            view.text(block.get("content"), [*where, "content"], reasoning=True)
        elif kind == "image" and isinstance(url := block.get("url"), str) and exact(url):
            view.add(ImagePart(url=url), [*where, "url"])
        elif kind == "tool_call":
            name, args = block.get("tool_name"), block.get("tool_kwargs")
            if _is_id(block.get("tool_call_id")) and isinstance(name, str) and exact(name) and exact(args):
                view.add(ToolCallPart(tool_call_id=block["tool_call_id"], name=name, args=args))
    if role == "tool" and not view.parts:
        role = "assistant"
    return Message(role=role, parts=view.parts, metadata={KEY: view.stored(dumped)})


def to_llama_index(message: Message) -> ChatMessage:
    """The ``ChatMessage`` the memvault ``message`` stands for (see the module's documentation)."""
    types = llama_index_types()
    stored = restore(message, KEY)
    if isinstance(stored, dict):
        try:
            return types.ChatMessage.model_validate(stored)  # type: ignore[no-any-return]
        except ValueError:
            pass  # damaged: read the parts instead
    blocks: list[Any] = []
    extra: dict[str, Any] = {}
    role = message.role
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append(types.TextBlock(text=part.text))
        elif isinstance(part, ReasoningPart):
            blocks.append(types.ThinkingBlock(content=part.text))
        elif isinstance(part, ImagePart):
            blocks.append(types.ImageBlock(url=part.url))
        elif isinstance(part, ToolCallPart):
            args = part.args if isinstance(part.args, dict) else {"arguments": part.args}
            blocks.append(
                types.ToolCallBlock(tool_call_id=part.tool_call_id, tool_name=part.name, tool_kwargs=args)
            )
        elif isinstance(part, ToolResultPart):
            output = (
                part.output if isinstance(part.output, str) else json.dumps(part.output, ensure_ascii=False)
            )
            blocks.append(types.TextBlock(text=output))
            extra["tool_call_id"] = part.tool_call_id
            role = "tool"
    return types.ChatMessage(role=role, blocks=blocks, additional_kwargs=extra)  # type: ignore[no-any-return]
