"""Semantic indexing: saved messages are embedded after their commit, off the caller's path,
and searched by meaning.

:class:`SemanticIndex` ties together an embedder, an in-memory vector index (exact by default)
and the store's persisted vectors (:class:`~memvault.stores.base.EmbeddingStore`):

- **Write path.** ``enqueue`` takes messages that are already committed; one background task
  embeds them in batches (``batch_size``, default 100), stores their vectors and adds them to the
  index. A failure (the embedder is down) is logged, never raised: the messages stay stored and
  marked as not embedded (no vector row), and the next batch or :meth:`reindex` catches up.
- **Once per message.** The catch-up (embedding stored messages that have no vector: at the
  first save after start, and after a failed batch) skips every message this process is saving
  or has queued: a save marks its messages with :meth:`saving` before its commit and keeps them
  marked until the queue has embedded them, so no catch-up in between can take them too. Each
  saved message's text is embedded once, also when saves race the catch-up; a message saved
  again is embedded again.
- **Start.** Vectors from another model or size raise
  :class:`~memvault.errors.ConfigurationError`, which says to run ``memvault reindex``. With no
  ``index`` given and a store that can read one resource's vectors
  (:class:`~memvault.vectors.stored.VectorSource`: SQLite), nothing is loaded: a
  :class:`~memvault.vectors.stored.StoredIndex` reads each resource's vectors on its first
  search, keeps them as int8 under a memory budget and rescores candidates exactly from the
  store (start costs one lookup, whatever the number of vectors). Otherwise every stored vector
  is loaded into the index (an :class:`~memvault.vectors.exact.ExactIndex` unless one is given).
- **Search.** The query is embedded (at most ``query_timeout`` seconds, default 10; the last
  32 queries' vectors are kept) and searched in the index, after adding the vectors other
  processes stored since (by cursor; a :class:`StoredIndex` adds them to loaded resources
  only). :meth:`similarities` scores given messages against the
  query, for recall's context smoothing. A failure raises; recall turns it into a warning.
- **Deletes.** The store drops vectors with their messages (same transaction); ``forget_*``
  drop them from this process's index.

Vector ids are ``msg:{resource_id}:{thread_id}:{message_id}``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from memvault.embeddings.base import probe
from memvault.errors import ConfigurationError
from memvault.model import Message, TextPart, ToolResultPart
from memvault.recall.sentences import best_similarities, pack, sentence_texts
from memvault.recall.types import MessageRef, VectorMatch
from memvault.stores.base import MessageQuery
from memvault.stores.capabilities import EmbeddingStore, VectorRow, supports_sentence_vectors
from memvault.stores.common import embedding_mismatch
from memvault.vectors.base import VectorIndex, VectorItem
from memvault.vectors.stored import StoredIndex, VectorSource

if TYPE_CHECKING:
    from memvault.embeddings import Embedder

log = logging.getLogger("memvault.recall.semantic")
_LOAD_BATCH = 10_000
_QUERY_CACHE = 32
_Key = tuple[str, str, str]


def vector_id(resource_id: str, thread_id: str, message_id: str) -> str:
    return f"msg:{resource_id}:{thread_id}:{message_id}"


def embedding_text(
    message: Message, author_key: str = "name", context: Sequence[Message] = ()
) -> str:
    """What is embedded for a message: its text parts and its tool results' text, prefixed by
    its author's name when ``metadata[author_key]`` has one ("Ana: I started cello lessons"),
    since questions name people (measured on LoCoMo: +12.6 recall@5 for vectors alone).
    ``author_key`` is :attr:`memvault.recall.RecallOptions.author_key`, the one source of the
    author's name for words and vectors.

    ``context``: the messages just before it in its thread, oldest first
    (:attr:`memvault.MemoryOptions.embed_context` of them), in the same form, one a line, after
    it and nearest first, each cut to its last :data:`CONTEXT_CHARS` characters ("Ana: Yes,
    last Sunday!" then "Ben: Did you go camping?"), so that a reply carries what it answers.
    The message comes first so that an embedder that cuts long input (all-MiniLM-L6-v2 reads
    256 word pieces) cuts the farthest context, never the message. A message with no text of
    its own embeds nothing, whatever its context."""
    own = _own_text(message, author_key)
    if not own or not context:
        return own
    nearest_first = (_own_text(m, author_key) for m in reversed(context))
    return "\n".join([own, *(text[-CONTEXT_CHARS:] for text in nearest_first if text)])


CONTEXT_CHARS = 500
"""How much of each context message is embedded with a message (its end: what was said last)."""


def _own_text(message: Message, author_key: str) -> str:
    text, name = _text_and_author(message, author_key)
    return f"{name}: {text}" if text and name else text


def _text_and_author(message: Message, author_key: str) -> tuple[str, str | None]:
    """The message's text parts and tool results' text, one a line, and its author's name."""
    chunks = [p.text for p in message.parts if isinstance(p, TextPart)]
    chunks += [p.output for p in message.parts
               if isinstance(p, ToolResultPart) and isinstance(p.output, str)]
    name = message.metadata.get(author_key)
    return "\n".join(c for c in chunks if c.strip()), name if isinstance(name, str) and name.strip() else None


def recorded_model(model: str, embed_context: int) -> str:
    """The model name recorded with the stored vectors: the embedder's, with the number of
    context messages embedded with each message when there are any
    (``"sentence-transformers/all-MiniLM-L6-v2 +context=1"``), so that changing
    :attr:`memvault.MemoryOptions.embed_context` is detected at start like a change of model
    (``memvault reindex`` embeds again). ``0`` records the bare model name, as before the
    option existed."""
    return model if embed_context == 0 else f"{model} +context={embed_context}"


def _key(message: Message) -> _Key:
    return (message.resource_id or "", message.thread_id or "", message.id)


class SemanticIndex:
    """Embeds saved messages and answers searches by meaning (see the module docstring)."""

    def __init__(
        self,
        store: EmbeddingStore,
        embedder: Embedder,
        index: VectorIndex | None = None,
        *,
        batch_size: int = 100,
        query_timeout: float | None = 10.0,
        author_key: str = "name",
        embed_context: int = 0,
        embed_sentences: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.index = index
        self._given_index = index
        self.stored: StoredIndex | None = None
        """The lazily loaded index over the store's vectors, when used (see the module docstring)."""
        self.batch_size = batch_size
        self.query_timeout = query_timeout
        self.author_key = author_key
        if not isinstance(embed_context, int) or isinstance(embed_context, bool) or embed_context < 0:
            raise ConfigurationError(f"embed_context must be an integer >= 0, got {embed_context!r}")
        if embed_context and not callable(getattr(store, "get_messages", None)):
            raise ConfigurationError("embed_context needs a store that reads messages (get_messages)")
        self.embed_context = embed_context
        """How many earlier messages of its thread are embedded with each message
        (:func:`embedding_text`; :attr:`memvault.MemoryOptions.embed_context`)."""
        self.embed_sentences = bool(embed_sentences) and supports_sentence_vectors(store)
        """Whether each message's sentences are embedded and stored beside it
        (:mod:`memvault.recall.sentences`): asked for, and the store keeps them."""
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cursor = 0  # the highest stored-vector cursor loaded into the index
        self._queue: list[tuple[Message, bool]] = []  # (message, whether its followers re-embed)
        self._queued: Counter[_Key] = Counter()  # being saved, queued or in the batch being embedded
        self._task: asyncio.Task[None] | None = None
        self._behind = False  # a batch failed: catch up from the store next time

    async def start(self) -> None:
        """Check the stored vectors' model and load them into the index."""
        recorded = await self.store.embedding_model()
        if recorded is not None:
            known = self.embedder.dimensions
            if recorded[0] != self.model or (known is not None and known != recorded[1]):
                raise ConfigurationError(embedding_mismatch(recorded, (self.model, known)))
            self._ensure_index(recorded[1])
        if self._lazy():
            self._cursor = await self.store.embedding_cursor()  # type: ignore[attr-defined]
        else:
            await self._load_new()
        self._behind = True  # messages saved while no embedder ran are caught up lazily

    @property
    def model(self) -> str:
        """The model name recorded with the vectors: the embedder's, marked with
        :attr:`embed_context` when it is not 0 (:func:`recorded_model`)."""
        return recorded_model(self.embedder.model, self.embed_context)

    def _lazy(self) -> bool:
        """Whether vectors are searched through a :class:`StoredIndex` (no index given, and the
        store can read a resource's vectors and its latest cursor)."""
        return self._given_index is None and isinstance(self.store, VectorSource)

    def _ensure_index(self, dimensions: int) -> VectorIndex | StoredIndex:
        if self.index is None and self.stored is None:
            if self._lazy():
                self.stored = StoredIndex(self.store, dimensions)  # type: ignore[arg-type]
            else:
                from memvault.vectors import ExactIndex

                self.index = ExactIndex(dimensions)
        current: VectorIndex | StoredIndex = self.stored or self.index  # type: ignore[assignment]
        if current.dimensions != dimensions:
            raise ConfigurationError(
                f"the vector index holds {current.dimensions}-dimensional vectors but "
                f"{self.embedder.model} makes {dimensions}-dimensional ones"
            )
        return current

    async def _load_new(self) -> None:
        """Add the vectors stored (by any process) past the cursor to the index."""
        while True:
            rows = await self.store.load_embeddings(after=self._cursor, limit=_LOAD_BATCH)
            if not rows:
                return
            self._cursor = max(self._cursor, rows[-1][0])
            if self._lazy():  # loaded resources take them; the others read the store when loaded
                found = [(r, t, m, blob) for _, r, t, m, blob in rows if blob]
                if found:
                    index = self._ensure_index(len(found[0][3]) // 4)  # another process's first
                    assert isinstance(index, StoredIndex)
                    await index.add(found)
                continue
            items = [
                VectorItem(vector_id(r, t, m), np.frombuffer(blob, dtype=np.float32), r, t, m)
                for _, r, t, m, blob in rows
                if blob
            ]
            if items:
                index = self._ensure_index(len(items[0].vector))
                assert not isinstance(index, StoredIndex)
                await index.upsert(items)

    # the write path

    @contextmanager
    def saving(self, resource_id: str, thread_id: str, messages: Sequence[Message]) -> Iterator[None]:
        """Mark these messages as being saved by this process for the block: commit them and
        :meth:`enqueue` them inside it. The catch-up leaves marked messages to the queue, so a
        catch-up that reads them between the commit and the enqueue does not embed them too."""
        keys = [(resource_id, thread_id, m.id) for m in messages]
        self._queued.update(keys)
        try:
            yield
        finally:
            self._forget(keys)

    def _forget(self, keys: Iterable[_Key]) -> None:
        self._queued.subtract(keys)
        self._queued = +self._queued  # drop the zero counts

    def enqueue(self, messages: Sequence[Message], *, followers: bool = True) -> None:
        """Embed these committed messages in the background (call it inside :meth:`saving`).

        With :attr:`embed_context`, the messages that follow one of them in its thread (up to
        ``embed_context`` later, already embedded with its former text as their context: the
        message was edited) are embedded again too, unless ``followers`` is false."""
        self._queue.extend((m, followers) for m in messages)
        self._queued.update(_key(m) for m in messages)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def flush(self) -> None:
        """Wait until every enqueued message has been embedded (or its batch has failed)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.batch_size], self._queue[self.batch_size :]
            try:
                await self._embed([m for m, _ in batch],
                                  followers=[m for m, again in batch if again])
                if self._behind:
                    self._behind = False
                    await self.catch_up()
            except Exception as exc:
                self._behind = True
                log.warning(
                    "embedding %d message(s) failed, they stay stored and will be embedded by "
                    "the next save or `memvault reindex`: %r", len(batch), exc,
                )
            finally:
                self._forget(_key(m) for m, _ in batch)

    async def _embed(self, messages: Sequence[Message], followers: Sequence[Message] = ()) -> int:
        if not messages:
            return 0
        if self.embed_context:
            messages, texts = await self._with_context(messages, followers)
        else:
            texts = [embedding_text(m, self.author_key) for m in messages]
        wanted = [i for i, text in enumerate(texts) if text]
        parts = [sentence_texts(*_text_and_author(m, self.author_key)) if self.embed_sentences else []
                 for m in messages]
        extra = [text for found in parts for text in found]
        everything = await self.embedder.embed([texts[i] for i in wanted] + extra) if wanted else None
        vectors = everything[:len(wanted)] if everything is not None else None
        blobs = [b""] * len(messages)
        if vectors is not None:
            for row, i in enumerate(wanted):
                blobs[i] = np.ascontiguousarray(vectors[row], dtype=np.float32).tobytes()
        dimensions = self.embedder.dimensions
        if dimensions is None:  # nothing embedded yet and the embedder has not said
            return 0
        index = self._ensure_index(dimensions)
        keys = [_key(m) for m in messages]
        rows: list[VectorRow] = [(*k, b) for k, b in zip(keys, blobs, strict=True)]
        if self.embed_sentences and everything is not None:  # the sentences follow the messages
            start = len(wanted)
            for i, found in enumerate(parts):
                rows[i] = (*keys[i], blobs[i], pack(everything[start:start + len(found)]) if found else None)
                start += len(found)
        stored = await self.store.save_embeddings(self.model, dimensions, rows)
        if isinstance(index, StoredIndex):
            await index.add([(*k, b) for k, b in zip(keys, blobs, strict=True) if b])
        elif vectors is not None:
            await index.upsert([
                VectorItem(vector_id(*keys[i]), vectors[row], keys[i][0], keys[i][1], keys[i][2])
                for row, i in enumerate(wanted)
            ])
        return stored

    async def _with_context(
        self, messages: Sequence[Message], followers: Sequence[Message]
    ) -> tuple[list[Message], list[str]]:
        """The messages to embed (these, then the later neighbours of ``followers`` that are
        not among them) and their texts with :attr:`embed_context` earlier messages each, read
        from the store: one read per thread, each message with its neighbours on both sides.
        A message no longer stored keeps no context (its vector row is skipped anyway)."""
        reach = self.embed_context
        wanted = {_key(m) for m in followers}
        by_thread: dict[tuple[str, str], list[str]] = {}
        for m in messages:
            by_thread.setdefault((m.resource_id or "", m.thread_id or ""), []).append(m.id)
        contexts: dict[_Key, list[Message]] = {}
        extra: dict[_Key, Message] = {}
        batch = {_key(m) for m in messages}
        for (resource_id, thread_id), ids in by_thread.items():
            run = await self.store.get_messages(  # type: ignore[attr-defined]
                resource_id, thread_id, MessageQuery(ids=list(dict.fromkeys(ids)),
                                                     message_range=reach))
            keys = [(resource_id, thread_id, m.id) for m in run]
            for position, key in enumerate(keys):
                contexts[key] = list(run[max(0, position - reach):position])
                if key in wanted:
                    for later, other in zip(keys[position + 1:position + 1 + reach],
                                            run[position + 1:position + 1 + reach], strict=True):
                        if later not in batch and later not in self._queued:
                            extra.setdefault(later, other)
        every = [*messages, *extra.values()]
        return every, [embedding_text(m, self.author_key, contexts.get(_key(m), ())) for m in every]

    async def followers(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> list[Message]:
        """The messages of the thread that have one of ``ids`` among their
        :attr:`embed_context` earlier messages (not those of ``ids``): what to embed again once
        those are deleted. Read before the deletion."""
        if not self.embed_context or not ids:
            return []
        run = await self.store.get_messages(  # type: ignore[attr-defined]
            resource_id, thread_id, MessageQuery(ids=list(dict.fromkeys(ids)),
                                                 message_range=self.embed_context))
        gone, out, last = set(ids), [], -1
        positions = [i for i, m in enumerate(run) if m.id in gone]
        for position in positions:
            for later in range(max(position + 1, last + 1),
                               min(len(run), position + 1 + self.embed_context)):
                if run[later].id not in gone:
                    out.append(run[later])
                last = later
        return out

    async def catch_up(self) -> int:
        """Embed every stored message that has no vector yet (from any process), except those
        queued by this process's saves (the queue embeds them); returns how many were embedded."""
        done, after = 0, 0
        while True:
            pending = await self.store.unembedded_messages(after=after, limit=self.batch_size)
            if not pending:
                return done
            after = pending[-1][0]
            done += await self._embed([m for _, m in pending if _key(m) not in self._queued])

    async def reindex(self) -> int:
        """Drop every stored vector and embed all messages again (after changing the model).

        The embedder is tried on one text first: if it fails (no key, server down), the error
        is raised and nothing is dropped. A vector index given to the constructor is kept and
        emptied of the old vectors (it must take the embedder's dimensions, else
        :class:`ConfigurationError`, nothing dropped); the default in-memory one is made anew."""
        await self.flush()
        dimensions = await probe(self.embedder)
        if self._given_index is not None and self._given_index.dimensions != dimensions:
            raise ConfigurationError(
                f"the vector index takes {self._given_index.dimensions}-dimensional vectors but "
                f"{self.embedder.model} makes {dimensions}-dimensional ones: give Memory an index "
                "made for the new model (nothing was dropped)")
        resources = await self._stored_resources() if self._given_index is not None else set()
        await self.store.clear_embeddings()
        if self._given_index is not None:
            for resource_id in resources:
                await self._given_index.delete_resource(resource_id)
        if self.stored is not None:
            await self.stored.clear()
        self.index, self.stored, self._cursor, self._behind = self._given_index, None, 0, False
        done = await self.catch_up()
        if self._lazy():  # what catch_up stored is read by each resource's first search
            self._cursor = await self.store.embedding_cursor()  # type: ignore[attr-defined]
        return done

    async def _stored_resources(self) -> set[str]:
        """The resources that may have stored vectors: the store's resources when it can list
        them (every built-in store), else read through the store's vector cursor."""
        from memvault.stores.capabilities import ExportStore

        if isinstance(self.store, ExportStore):
            return set(await self.store.resource_ids())
        resources: set[str] = set()
        after = 0
        while rows := await self.store.load_embeddings(after=after, limit=_LOAD_BATCH):
            after = rows[-1][0]
            resources.update(row[1] for row in rows)
        return resources

    # search and deletes

    async def search(
        self, query: str, resource_id: str, thread_id: str | None, top_k: int
    ) -> list[VectorMatch]:
        """The ``top_k`` messages closest in meaning to ``query`` (cosine similarity)."""
        await self._load_new()
        vector = await self.query_vector(query)
        searched: VectorIndex | StoredIndex | None = self.stored or self.index
        if searched is None:
            return []
        hits = await searched.search(vector, resource_id=resource_id, thread_id=thread_id,
                                       top_k=top_k)
        return [(MessageRef(h.thread_id, h.message_id), h.score) for h in hits if h.message_id]

    async def similarities(
        self, query: str, resource_id: str, refs: Sequence[MessageRef]
    ) -> dict[MessageRef, float]:
        """The cosine similarity of ``query`` to each of these messages of ``resource_id`` that
        has a vector (the others are left out)."""
        if self.stored is not None and refs:
            return await self._stored_similarities(query, resource_id, refs)
        if self.index is None or not refs:
            return {}
        vector = await self.query_vector(query)
        items = await self.index.get([vector_id(resource_id, *ref) for ref in refs],
                                     resource_id=resource_id)
        if not items:
            return {}
        scores = np.stack([np.asarray(item.vector, dtype=np.float32) for item in items]) @ vector
        return {MessageRef(item.thread_id, item.message_id or ""): float(score)
                for item, score in zip(items, scores, strict=True)}

    async def sentence_similarities(
        self, query: str, resource_id: str, refs: Sequence[MessageRef]
    ) -> dict[MessageRef, float]:
        """The best cosine similarity of ``query`` to the sentences of each of these messages of
        ``resource_id`` that has sentences' vectors (:mod:`memvault.recall.sentences`; the
        others are left out)."""
        if not refs or not supports_sentence_vectors(self.store):
            return {}
        current = self.stored or self.index
        dimensions = current.dimensions if current is not None else self.embedder.dimensions
        if dimensions is None:
            return {}
        vector = await self.query_vector(query)
        found = await self.store.sentence_embeddings_of(resource_id, [(ref[0], ref[1]) for ref in refs])
        best = best_similarities([blob for _, _, blob in found], vector, dimensions)
        return {MessageRef(thread_id, message_id): score
                for (thread_id, message_id, _), score in zip(found, best, strict=True)
                if score is not None}

    async def _stored_similarities(
        self, query: str, resource_id: str, refs: Sequence[MessageRef]
    ) -> dict[MessageRef, float]:
        """:meth:`similarities` from the store's float32 vectors (the lazy index's case)."""
        assert self.stored is not None
        vector = await self.query_vector(query)
        found = await self.stored.similarities(vector, resource_id, refs)
        return {MessageRef(*key): score for key, score in found.items()}

    async def query_vector(self, query: str) -> np.ndarray:
        """The query's unit-length embedding (cached for the last few queries), computed
        within ``query_timeout`` seconds (:class:`TimeoutError` past it)."""
        cached = self._queries.get(query)
        if cached is not None:
            self._queries.move_to_end(query)
            return cached
        vectors = await asyncio.wait_for(self.embedder.embed([query]), self.query_timeout)
        vector = np.asarray(vectors[0], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if not norm or not np.isfinite(norm):
            raise ValueError(f"the embedder gave the query a vector of norm {norm}")
        vector = vector / norm
        self._queries[query] = vector
        if len(self._queries) > _QUERY_CACHE:
            self._queries.popitem(last=False)
        return vector

    async def forget_messages(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> None:
        if self.stored is not None:
            await self.stored.forget_messages(resource_id, thread_id, ids)
        if self.index is not None:
            await self.index.delete([vector_id(resource_id, thread_id, i) for i in ids])

    async def forget_thread(self, resource_id: str, thread_id: str) -> None:
        if self.stored is not None:
            await self.stored.forget_thread(resource_id, thread_id)
        if self.index is not None:
            await self.index.delete_thread(resource_id, thread_id)

    async def forget_resource(self, resource_id: str) -> None:
        if self.stored is not None:
            await self.stored.forget_resource(resource_id)
        if self.index is not None:
            await self.index.delete_resource(resource_id)
