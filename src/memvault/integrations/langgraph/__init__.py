"""LangGraph on memvault: graph checkpoints and long-term memory in the same database as the
conversations (``pip install 'memvault[langgraph]'``)::

    from memvault import Memory
    from memvault.integrations.langgraph import MemvaultSaver, MemvaultStore

    memory = await Memory.open("sqlite:///app.db")
    graph = builder.compile(checkpointer=MemvaultSaver(memory, resource_id="ada"),
                            store=MemvaultStore(memory, resource_id="ada"))

- :class:`MemvaultSaver`: a ``BaseCheckpointSaver`` (sync and async; passes LangGraph's
  ``langgraph-checkpoint-conformance`` suite in full, extended capabilities included);
- :class:`MemvaultStore`: a ``BaseStore`` (namespaces, filters, TTL, batches) whose
  ``search(query=...)`` ranks by memvault's recall scoring (words, and meaning with an
  embedder).

Both are bound to one ``resource_id`` and never see another resource's data;
``Memory.delete_resource`` erases their rows with the rest of the resource. LangGraph is
imported when a name is first used: without it, :class:`~memvault.errors.MissingExtraError`
names the ``langgraph`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.extras import import_optional

if TYPE_CHECKING:
    from memvault.integrations.langgraph.checkpointer import MemvaultSaver
    from memvault.integrations.langgraph.store import MemvaultStore

__all__ = ["MemvaultSaver", "MemvaultStore"]

_LAZY = {
    "MemvaultSaver": (
        "memvault.integrations.langgraph.checkpointer",
        "MemvaultSaver (the LangGraph checkpointer)",
    ),
    "MemvaultStore": ("memvault.integrations.langgraph.store", "MemvaultStore (the LangGraph store)"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'memvault.integrations.langgraph' has no attribute {name!r}")
    module, feature = _LAZY[name]
    return getattr(import_optional(module, feature, "langgraph", needs=("langgraph.checkpoint.base",)), name)
