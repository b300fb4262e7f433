"""Recall's vocabulary: the vector-search seam, the memory it reads, hits and results."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, runtime_checkable

from memvault.model import Message
from memvault.stores.passages import Passage

Key: TypeAlias = tuple[str, str]
"""A message's ``(thread_id, id)``."""

Source: TypeAlias = Literal["lexical", "vector", "both"]
"""Which search found a hit: the words, the vector search, or both."""


class MessageRef(NamedTuple):
    """Names one message of the resource being recalled: its thread and its id."""

    thread_id: str
    message_id: str


VectorMatch: TypeAlias = tuple["MessageRef | tuple[str, str] | Message", float]
"""One vector-search result: the message (a :class:`MessageRef`, a ``(thread_id, message_id)``
pair, or a saved :class:`Message`) and its similarity, higher is closer (e.g. a cosine)."""


@runtime_checkable
class VectorSearch(Protocol):
    """The semantic-search seam: any callable (a function, an async function, an object) with
    this signature. memvault calls it with the query text and the scope, and takes back at
    most ``top_k`` matches, best first::

        async def vector_search(query, resource_id, thread_id, top_k):
            vector = await embedder.embed(query)
            return [(MessageRef(row.thread_id, row.id), row.cosine)
                    for row in index.nearest(vector, resource_id, thread_id, top_k)]

    Semantics:

    - ``thread_id`` is ``None`` for the whole resource, else only that thread is searched.
    - It must only return messages of ``resource_id``; memvault reads every match back from the
      store under ``resource_id`` and silently drops one it cannot find there (a deleted
      message, a stale index row), so nothing of another resource can leak.
    - It may be synchronous or return an awaitable. If it raises (or its awaitable does),
      recall logs a warning and carries on with the lexical search: a failing embedder never
      fails a turn.
    """

    def __call__(
        self, query: str, resource_id: str, thread_id: str | None, top_k: int, /
    ) -> Sequence[VectorMatch] | Awaitable[Sequence[VectorMatch]]: ...


@runtime_checkable
class VectorScorer(Protocol):
    """The optional second half of the semantic seam: the similarity of the query to *given*
    messages, so that recall can score every candidate (the lexical ones too) and smooth a
    message's similarity with its neighbours'. :class:`memvault.recall.semantic.SemanticIndex` is one.

    Returns a similarity on the vector search's scale for each ref that has a vector; refs
    without one (never embedded, deleted, another resource's) are left out. A failure is
    treated like a failing vector search: logged, and recall goes on without it.
    """

    async def similarities(
        self, query: str, resource_id: str, refs: Sequence[MessageRef], /
    ) -> dict[MessageRef, float]: ...


@runtime_checkable
class SentenceScorer(Protocol):
    """A :class:`VectorScorer` that also knows each message's sentences
    (:mod:`memvault.recall.sentences`): the best similarity of the query to a sentence of each
    given message that has sentences' vectors (the others are left out). Recall blends it with
    the message's own (:attr:`memvault.recall.RecallOptions.sentence_weight`).
    :class:`memvault.recall.semantic.SemanticIndex` is one."""

    async def sentence_similarities(
        self, query: str, resource_id: str, refs: Sequence[MessageRef], /
    ) -> dict[MessageRef, float]: ...


@dataclass
class Candidates:
    """The messages one recall weighs, with each source's scores, by :data:`Key`. The engine
    builds it in steps (the lexical candidates, the vector search's matches, the scores by
    meaning); the steps return what they found and never change it themselves."""

    passages: dict[Key, Passage] = field(default_factory=dict)
    lexical: dict[Key, float] = field(default_factory=dict)
    vector: dict[Key, float] = field(default_factory=dict)

    def source(self, key: Key) -> Source:
        """Which search found ``key``."""
        if key in self.lexical and key in self.vector:
            return "both"
        return "lexical" if key in self.lexical else "vector"


@dataclass(frozen=True)
class RecallHit:
    """One recalled message.

    - ``score``: the fused score (higher is better; comparable within one result only).
    - ``source``: ``"lexical"``, ``"vector"`` or ``"both"``.
    - ``lexical_score`` / ``vector_score``: the raw scores from each source, ``None`` where that
      source did not find the message.
    - ``thread_id`` and ``created_at``: where and when it was said; ``other_thread`` is ``True``
      when that is not the current thread (so a prompt can say "in an earlier conversation,
      on 8 May 2023").
    - ``context``: the hit with its ``message_range`` neighbours, in thread order, without
      messages of the recent window.
    """

    message: Message
    score: float
    source: Source
    thread_id: str
    created_at: datetime
    other_thread: bool
    lexical_score: float | None = None
    vector_score: float | None = None
    context: tuple[Message, ...] = ()

    @property
    def id(self) -> str:
        return self.message.id


@dataclass(frozen=True)
class RecallResult:
    """What to feed the model this turn.

    - ``messages``: the recent window and the recalled messages, merged by the options'
      ``merge`` strategy, each message once.
    - ``hits``: the recalled messages that matched, best first.
    - ``recalled``: the hits with their neighbours, oldest first, none of them in ``history``;
      a tool call or result whose other half is not among them is left out of its message's
      copy (as in the history window), so the feed never has half a tool exchange.
    - ``history``: the recent window.
    - ``working_memory``: the working memory's content (``None`` when never written or not asked).
    - ``warnings``: what degraded (e.g. the vector search failed and recall fell back to words).
    """

    messages: list[Message]
    hits: list[RecallHit]
    recalled: list[Message] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    working_memory: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: messages as dicts, hits with their thread, date, score and source."""
        return {
            "messages": [m.model_dump(mode="json") for m in self.messages],
            "hits": [
                {"id": h.message.id, "thread_id": h.thread_id, "created_at": h.created_at.isoformat(),
                 "other_thread": h.other_thread, "score": h.score, "source": h.source,
                 "lexical_score": h.lexical_score, "vector_score": h.vector_score}
                for h in self.hits
            ],
            "working_memory": self.working_memory,
            "warnings": list(self.warnings),
        }
