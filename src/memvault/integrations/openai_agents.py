"""A ``Session`` for the OpenAI Agents SDK that keeps the conversation in a memvault thread.

Hand a :class:`MemvaultSession` to the SDK's runner and every item of the run (the user's input,
the model's messages, function calls and their outputs, reasoning, ...) is saved as one memvault
:class:`~memvault.model.Message` of the thread ``session_id`` under ``resource_id``::

    memory = await Memory.open("sqlite:///app.db")
    session = MemvaultSession("chat-1", memory, resource_id="ada")
    result = await Runner.run(agent, "Hi", session=session)

The SDK gets back exactly the items it added: each message keeps the original item, verbatim, in
``metadata["openai_agents_item"]``. The message's role and parts are a readable view of it for
memvault's other faces (search, recall, history windows, ``to_openai``):

* a message item (``role`` user, assistant, system or developer): that role (developer becomes
  ``system``), each text (``input_text``, ``output_text``) as a :class:`TextPart`, each image
  given by URL as an :class:`ImagePart`, any other content part as a :class:`DataPart`;
* ``function_call``: an ``assistant`` message with a :class:`ToolCallPart` (``args`` the parsed
  JSON arguments, or their text when they are not a JSON object);
* ``function_call_output``: a ``tool`` message with a :class:`ToolResultPart`;
* ``reasoning`` with summary text: an ``assistant`` message with a :class:`ReasoningPart`;
* anything else (hosted tool calls, MCP items, reasoning without a summary, items of kinds this
  module does not know): an ``assistant`` message with one :class:`DataPart` holding the item,
  named by its ``type``.

Messages that other code saved to the thread (without the original item) are read back as the
closest SDK items: text as easy input messages, tool calls as ``function_call`` and tool results
as ``function_call_output`` items; other parts (images, files, data) are left out.

The SDK is imported only when a session is made: without it,
:class:`~memvault.errors.MissingExtraError` names the ``agents`` extra, which ships
``openai-agents``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from memvault.errors import MissingExtraError, ValidationError
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
    check_json,
    valid_id,
)

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import Session, SessionSettings

    from memvault.memory import Memory

__all__ = ["ITEM_KEY", "MemvaultSession", "item_to_message", "message_to_items"]

ITEM_KEY = "openai_agents_item"
"""The metadata key under which each message keeps its original SDK item."""

_MESSAGE_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_TEXT_PARTS = ("input_text", "output_text")
_DETAILS = ("auto", "low", "high")


def _sdk_settings() -> ModuleType:
    """The SDK's ``agents.memory.session_settings`` module, or MissingExtraError without the SDK."""
    try:
        from agents.memory import session_settings
    except ImportError as exc:
        raise MissingExtraError(
            "MemvaultSession (the OpenAI Agents SDK session)", "agents", "openai-agents"
        ) from exc
    return session_settings


# ---------------------------------------------------------------- SDK item -> memvault


def item_to_message(item: Mapping[str, Any]) -> Message:
    """The memvault message that stores ``item`` (an SDK ``TResponseInputItem`` dict).

    The item is kept verbatim in ``metadata["openai_agents_item"]``; role and parts are the
    readable view described in the module docstring. Raises ValidationError when the item is
    not a mapping of plain JSON (no NaN, NUL bytes, lone surrogates or non-JSON objects)."""
    if not isinstance(item, Mapping):
        raise ValidationError(f"an Agents SDK item must be a mapping (dict), got {type(item).__name__}")
    try:
        stored = check_json(dict(item))
    except ValueError as exc:
        raise ValidationError(f"an Agents SDK item must be plain JSON: {exc}") from None
    role, parts = _view(stored)
    return Message(role=role, parts=parts, metadata={ITEM_KEY: stored})


def _view(item: dict[str, Any]) -> tuple[Role, list[Part]]:
    kind = item.get("type")
    role = item.get("role")
    try:
        if kind in (None, "message") and isinstance(role, str) and role in _MESSAGE_ROLES:
            return _MESSAGE_ROLES[role], _content_parts(item.get("content"))
        if kind == "function_call":
            call = ToolCallPart(
                tool_call_id=item["call_id"], name=item["name"], args=_args(item.get("arguments"))
            )
            return "assistant", [call]
        if kind == "function_call_output":
            return "tool", [ToolResultPart(tool_call_id=item["call_id"], output=item.get("output"))]
        if kind == "reasoning":
            summary = item.get("summary")
            texts = [
                s["text"]
                for s in (summary if isinstance(summary, list) else [])
                if isinstance(s, dict) and isinstance(s.get("text"), str)
            ]
            if texts:
                return "assistant", [ReasoningPart(text="\n".join(texts))]
    except (KeyError, TypeError, ValidationError):
        pass  # an item of a known kind but an unexpected shape: kept as data below
    return "assistant", [DataPart(data=item, name=kind if isinstance(kind, str) else None)]


def _args(arguments: Any) -> Any:
    """The JSON object in a function call's ``arguments`` text, or the text itself."""
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _content_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(text=content)]
    if not isinstance(content, list):
        return []
    parts: list[Part] = []
    for piece in content:
        try:
            parts.append(_content_part(piece))
        except ValidationError:
            parts.append(DataPart(data=piece))
    return parts


def _content_part(piece: Any) -> Part:
    kind = piece.get("type") if isinstance(piece, dict) else None
    if kind in _TEXT_PARTS and isinstance(piece.get("text"), str):
        return TextPart(text=piece["text"])
    if kind == "input_image" and isinstance(piece.get("image_url"), str):
        detail = piece.get("detail")
        return ImagePart(url=piece["image_url"], detail=detail if detail in _DETAILS else None)
    return DataPart(data=piece, name=kind if isinstance(kind, str) else None)


# ---------------------------------------------------------------- memvault -> SDK items


def message_to_items(message: Message) -> list[dict[str, Any]]:
    """The SDK items a message stands for: its original item when it has one, else the closest
    items its parts make (none for a message with neither text nor tool parts)."""
    original = message.metadata.get(ITEM_KEY)
    if isinstance(original, dict):
        return [original]
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


# ---------------------------------------------------------------- the session


class MemvaultSession:
    """The OpenAI Agents SDK ``Session`` protocol over the memvault thread ``session_id`` of
    ``resource_id`` (the thread is created by the first :meth:`add_items`).

    ``session_settings`` (a ``SessionSettings`` or its dict) sets the default ``limit`` of
    :meth:`get_items`, as for the SDK's own sessions. Items keep the thread's order (``seq``).
    Several sessions (and other memvault code) may share one :class:`~memvault.Memory`.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        resource_id: str,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        settings = _sdk_settings()
        self.session_id = valid_id(session_id, "session_id")
        self.resource_id = valid_id(resource_id, "resource_id")
        self.memory = memory
        if isinstance(session_settings, Mapping):
            session_settings = dict(session_settings)
        self.session_settings = cast(
            "SessionSettings",
            settings.SessionSettings()
            if session_settings is None
            else settings.coerce_session_settings(session_settings),
        )

    def __repr__(self) -> str:
        return f"MemvaultSession(session_id={self.session_id!r}, resource_id={self.resource_id!r})"

    async def _messages(self, last_n: int | None = None) -> list[Message]:
        return await self.memory.get_messages(
            thread_id=self.session_id, resource_id=self.resource_id, last_n=last_n
        )

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The conversation so far, oldest first. ``limit`` (default: the settings' ``limit``)
        keeps the latest N items, still in chronological order; ``None`` or a negative limit
        means all of them, ``0`` none (as the SDK's SQLiteSession)."""
        wanted = _sdk_settings().resolve_session_limit(limit, self.session_settings)
        if wanted is None or wanted < 0:
            return _items(await self._messages())
        if wanted == 0:
            return []
        window = wanted
        while True:  # a foreign message may make no item: widen the window until N items
            messages = await self._messages(last_n=window)
            items = _items(messages)
            if len(items) >= wanted or len(messages) < window:
                return items[-wanted:]
            window *= 2

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items, one message each, in one transaction (all or nothing)."""
        if not items:
            return
        messages = [item_to_message(cast("Mapping[str, Any]", item)) for item in items]
        await self.memory.save_messages(messages, thread_id=self.session_id, resource_id=self.resource_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Delete the newest message and return its item (``None`` when the session is empty).

        A message saved by other code that stands for no item is deleted and skipped; one that
        stands for several items is deleted whole and its last item returned."""
        while True:
            newest = await self._messages(last_n=1)
            if not newest:
                return None
            message = newest[0]
            removed = await self.memory.delete_messages(
                [message.id], thread_id=self.session_id, resource_id=self.resource_id
            )
            if not removed:
                continue  # another writer popped it first: look again
            items = message_to_items(message)
            if items:
                return cast("TResponseInputItem", items[-1])

    async def clear_session(self) -> None:
        """Delete every message of the thread (the thread itself, its title and metadata stay)."""
        await self.memory.clear_thread(thread_id=self.session_id, resource_id=self.resource_id)


def _items(messages: list[Message]) -> list[TResponseInputItem]:
    return [cast("TResponseInputItem", item) for message in messages for item in message_to_items(message)]


if TYPE_CHECKING:

    def _is_a_session(session: MemvaultSession) -> Session:
        return session  # mypy checks that MemvaultSession meets the SDK's Session protocol
