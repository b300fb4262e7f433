"""LlamaIndex chat memory in memvault: :func:`MemvaultChatStore` is a ``BaseChatStore`` whose
keys are the threads of one resource, for LlamaIndex's memory classes (``ChatMemoryBuffer``,
``ChatSummaryMemoryBuffer``) and chat engines::

    from memvault.sync import Memory

    memory = Memory.open("sqlite:///app.db")
    store = MemvaultChatStore(memory=memory, resource_id="ada")
    chat_memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="chat-1")

LlamaIndex is imported only when a store is made: without it,
:class:`~memvault.errors.MissingExtraError` names the ``llama-index`` extra.
"""

from typing import TYPE_CHECKING, Any

from memvault.integrations.llama_index.messages import KEY, llama_index_types, to_llama_index, to_memvault

if TYPE_CHECKING:
    from memvault.integrations.llama_index.chat_store import MemvaultChatStore

__all__ = ["KEY", "MemvaultChatStore", "to_llama_index", "to_memvault"]


def __getattr__(name: str) -> Any:
    """``MemvaultChatStore``, imported on first use (it subclasses LlamaIndex's BaseChatStore)."""
    if name == "MemvaultChatStore":
        llama_index_types()  # MissingExtraError without the extra
        from memvault.integrations.llama_index.chat_store import MemvaultChatStore

        return MemvaultChatStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
