""":class:`MemvaultChatStore`: LlamaIndex's ``BaseChatStore`` over the threads of one resource.

This module imports LlamaIndex; import the class from :mod:`memvault.integrations.llama_index`,
which loads it on first use (MissingExtraError without the ``llama-index`` extra)."""

from __future__ import annotations

import inspect
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.storage.chat_store import BaseChatStore
from pydantic import ConfigDict

from memvault.errors import ValidationError
from memvault.integrations.llama_index.messages import to_llama_index, to_memvault
from memvault.model import Message, valid_id

__all__ = ["MemvaultChatStore"]


class MemvaultChatStore(BaseChatStore):
    """A LlamaIndex chat store (``BaseChatStore``) whose keys are the memvault threads of
    ``resource_id``; ``memory`` is a synchronous :class:`memvault.sync.Memory` (LlamaIndex calls
    the store without ``await``; the ``a*`` twins run those calls in a worker thread)::

        from memvault.sync import Memory

        memory = Memory.open("sqlite:///app.db")
        store = MemvaultChatStore(memory=memory, resource_id="ada")
        chat_memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="chat-1")

    Each ``ChatMessage`` is one memvault message (:mod:`.messages`: kept exactly, with a
    readable and searchable view). A key is a thread id (a non-empty string of at most 256
    characters); a key of another resource reads as missing, and writing to it makes this
    resource's own thread of that name. Semantics follow LlamaIndex's ``SimpleChatStore``:
    a missing key has no messages, ``delete_*`` return ``None`` for a missing key or index.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    memory: Any
    resource_id: str

    def __init__(self, *, memory: Any, resource_id: str, **fields: Any) -> None:
        """Checks the arguments with memvault's errors: ``resource_id`` must be an id and
        ``memory`` a synchronous memvault Memory (an async one is refused: LlamaIndex would
        get coroutines back)."""
        resource_id = valid_id(resource_id, "resource_id")
        reader = getattr(memory, "get_messages", None)
        if reader is None or inspect.iscoroutinefunction(reader):
            raise ValidationError(
                "memory must be a synchronous memvault Memory (memvault.sync.Memory.open(url)); "
                f"got {type(memory).__module__}.{type(memory).__name__}"
            )
        super().__init__(memory=memory, resource_id=resource_id, **fields)

    @classmethod
    def class_name(cls) -> str:
        return "MemvaultChatStore"

    def __repr__(self) -> str:
        return f"MemvaultChatStore(resource_id={self.resource_id!r})"

    def _thread(self, key: Any) -> str:
        return valid_id(key, "key")

    def _read(self, key: str) -> list[Message]:
        return self.memory.get_messages(  # type: ignore[no-any-return]
            thread_id=self._thread(key), resource_id=self.resource_id
        )

    def _exists(self, key: str) -> bool:
        return self.memory.get_thread(thread_id=self._thread(key), resource_id=self.resource_id) is not None

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the key's messages. The new ones are saved (in one transaction) before
        the old ones are deleted, so a failure in between leaves both, never neither."""
        thread = self._thread(key)
        converted = _convert(messages)
        old = [m.id for m in self._read(thread)]
        self.memory.create_thread(thread_id=thread, resource_id=self.resource_id, exist_ok=True)
        self.memory.save_messages(converted, thread_id=thread, resource_id=self.resource_id)
        if old:
            self.memory.delete_messages(old, thread_id=thread, resource_id=self.resource_id)

    def get_messages(self, key: str) -> list[ChatMessage]:
        """The key's messages, oldest first (``[]`` for a missing key)."""
        return [to_llama_index(m) for m in self._read(key)]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` (or insert it at ``idx``, as ``list.insert`` does, which
        rewrites the key's messages)."""
        if idx is None:
            self.memory.save_messages(
                _convert([message]), thread_id=self._thread(key), resource_id=self.resource_id
            )
            return
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise ValidationError(f"idx must be an integer or None, got {type(idx).__name__}")
        current = self.get_messages(key)
        current.insert(idx, message)
        self.set_messages(key, current)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete the key (its thread and messages); its messages, or ``None`` if missing."""
        if not self._exists(key):
            return None
        messages = self.get_messages(key)
        self.memory.delete_thread(thread_id=self._thread(key), resource_id=self.resource_id)
        return messages

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at ``idx`` (negative counts from the end, as ``list.pop``);
        ``None`` when the key or index is missing."""
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise ValidationError(f"idx must be an integer, got {type(idx).__name__}")
        messages = self._read(key)
        if not -len(messages) <= idx < len(messages):
            return None
        target = messages[idx]
        self.memory.delete_messages([target.id], thread_id=self._thread(key), resource_id=self.resource_id)
        return to_llama_index(target)

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message; ``None`` when the key is missing or empty."""
        newest = self.memory.get_messages(thread_id=self._thread(key), resource_id=self.resource_id, last_n=1)
        if not newest:
            return None
        self.memory.delete_messages([newest[0].id], thread_id=self._thread(key), resource_id=self.resource_id)
        return to_llama_index(newest[0])

    def get_keys(self) -> list[str]:
        """The resource's keys (thread ids), oldest thread first."""
        threads, cursor = [], None
        while True:
            page = self.memory.list_threads(resource_id=self.resource_id, limit=100, cursor=cursor)
            threads += page.threads
            cursor = page.next_cursor
            if cursor is None:
                break
        return [t.id for t in sorted(threads, key=lambda t: (t.created_at, t.id))]


def _convert(messages: Any) -> list[Message]:
    if isinstance(messages, str | bytes) or not isinstance(messages, list | tuple):
        raise ValidationError(f"messages must be a list of ChatMessages, got {type(messages).__name__}")
    return [to_memvault(m) for m in messages]
