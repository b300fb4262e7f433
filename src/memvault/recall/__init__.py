"""Recall: finding the older messages that matter now, by words and (optionally) by meaning.

No model is called at recall time. Lexical candidates come from the store's full-text search
and are scored with their conversational context; a vector search, when given, is fused in;
the best hits come with their neighbours and are merged with the recent window.

Most callers use :meth:`memvault.Memory.recall`; the pipeline itself reads through a
:class:`RecallReader` over a store::

    from memvault.recall import RecallOptions, RecallReader, recall

    result = await recall(RecallReader(store, "ada"), thread_id="t1",
                          query="Which tea did I say I liked?", options=RecallOptions(top_k=5))
    for hit in result.hits:
        print(hit.score, hit.source, hit.thread_id, hit.created_at, hit.message.text)
    prompt_messages = result.messages   # recalled messages, then the recent window
"""

from memvault.recall.engine import recall
from memvault.recall.options import MergeStrategy, RecallOptions, Scope
from memvault.recall.reader import RecallReader
from memvault.recall.types import (
    MessageRef,
    RecallHit,
    RecallResult,
    Source,
    VectorMatch,
    VectorSearch,
)

__all__ = [
    "MergeStrategy",
    "MessageRef",
    "RecallHit",
    "RecallOptions",
    "RecallReader",
    "RecallResult",
    "Scope",
    "Source",
    "VectorMatch",
    "VectorSearch",
    "recall",
]
