""":class:`MemvaultHistory`: a Pydantic AI agent's message history in a memvault thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memvault.errors import ValidationError
from memvault.integrations.pydantic_ai.messages import pydantic_ai_messages, to_memvault, to_pydantic_ai
from memvault.model import Message, valid_id

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from memvault.memory import Memory

__all__ = ["MemvaultHistory"]


class MemvaultHistory:
    """The message history of the memvault thread ``thread_id`` under ``resource_id``, for
    Pydantic AI's ``message_history``::

        history = MemvaultHistory(memory, thread_id="chat-1", resource_id="ada")
        result = await agent.run("Hi", message_history=await history.load())
        await history.save(result.new_messages())

    Each ``ModelMessage`` is one memvault message (:mod:`.messages`: stored exactly, with a
    readable and searchable view), so recall, search and the other faces see the conversation.
    An instance is bound to one resource: it never reads or writes another resource's thread.
    """

    def __init__(self, memory: Memory, *, thread_id: str, resource_id: str) -> None:
        pydantic_ai_messages()  # MissingExtraError now rather than at the first load
        self.memory = memory
        self.thread_id = valid_id(thread_id, "thread_id")
        self.resource_id = valid_id(resource_id, "resource_id")

    def __repr__(self) -> str:
        return f"MemvaultHistory(thread_id={self.thread_id!r}, resource_id={self.resource_id!r})"

    async def load(self, *, last_n: int | None = None) -> list[ModelMessage]:
        """The thread's messages as Pydantic AI messages, oldest first, ready for
        ``message_history``. ``last_n`` (default: all) keeps the memory's history window of
        that many messages (never splitting a tool call from its return), then drops messages
        from its start until a request that answers no tool call (a history starts with a
        request, and a tool return needs its call). A missing thread gives ``[]``."""
        if last_n is None:
            messages = await self.memory.get_messages(thread_id=self.thread_id, resource_id=self.resource_id)
        else:
            messages = await self.memory.get_history(
                thread_id=self.thread_id, resource_id=self.resource_id, last_n=last_n
            )
        loaded = to_pydantic_ai(messages)
        if last_n is not None:
            while loaded and not _opens(loaded[0]):
                loaded.pop(0)
        return loaded

    async def save(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """Append ``messages`` (usually ``result.new_messages()``) in one transaction, one
        memvault message each; returns the saved memvault messages. Anything but Pydantic AI
        messages raises ValidationError and writes nothing."""
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise ValidationError(
                f"messages must be a list of Pydantic AI messages, got {type(messages).__name__}"
            )
        converted = [to_memvault(message) for message in messages]
        if not converted:
            return []
        return await self.memory.save_messages(
            converted, thread_id=self.thread_id, resource_id=self.resource_id
        )

    async def clear(self) -> int:
        """Delete every message of the thread (the thread stays); returns how many there were."""
        return await self.memory.clear_thread(thread_id=self.thread_id, resource_id=self.resource_id)


def _opens(message: ModelMessage) -> bool:
    """Whether a history may start with ``message``: a request holding no tool return."""
    answers = ("tool-return", "retry-prompt")
    return message.kind == "request" and not any(p.part_kind in answers for p in message.parts)
