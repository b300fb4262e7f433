"""The in-memory store: the reference implementation of the storage contract.

Nothing survives the process. Every other store must behave exactly like this one
(``tests/conformance``). Operations run to completion without awaiting, so each is atomic
with respect to the event loop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memvault.errors import ConfigurationError, NotFoundError, ThreadExistsError, ThreadNotFoundError
from memvault.model import Message, SearchHit, State, Summary, Thread, ThreadPage, note_key, now
from memvault.rules.words import index_text, query_groups, query_terms, searchable_query, stem, tokens
from memvault.stores import rows
from memvault.stores import thread_queries as tq
from memvault.stores.base import (
    ALL_MESSAGES,
    ALL_THREADS,
    UNSET,
    Deleted,
    MessageQuery,
    ThreadQuery,
    WorkingMemoryUpdate,
    _Unset,
)
from memvault.stores.capabilities import STORE_DEFAULT, Expired, TurnRead, VectorRow, sentences_of
from memvault.stores.closing import refuses_when_closed
from memvault.stores.common import (
    changed_thread,
    check_limit,
    check_pool_search,
    check_query,
    embedding_mismatch,
    to_micros,
    updated_state,
)
from memvault.stores.graph_memory import GraphTables
from memvault.stores.passages import Passage, SearchPool, mark_of


@dataclass
class _ThreadRecord:
    thread: Thread
    messages: dict[str, Message] = field(default_factory=dict)  # in seq order
    cursors: dict[str, int] = field(default_factory=dict)  # message id -> first-stored order
    vectors: dict[str, bytes] = field(default_factory=dict)  # message id -> float32 vector
    sentences: dict[str, bytes] = field(default_factory=dict)  # message id -> its sentences' (float16)
    next_seq: int = 1
    summary: Summary | None = None

    def forget_summarised(self, seqs: Sequence[int | None]) -> None:
        """Drop the summary when one of these messages (deleted or edited) is summarised."""
        if self.summary is not None and any(s is not None and s <= self.summary.through_seq for s in seqs):
            self.summary = None


@dataclass
class _Resource:
    threads: dict[str, _ThreadRecord] = field(default_factory=dict)
    working_memory: dict[str, str] = field(default_factory=dict)
    states: dict[str, State] = field(default_factory=dict)


@refuses_when_closed()
class InMemoryStore(GraphTables):
    """A :class:`~memvault.stores.base.Store` kept in dictionaries. ``memory://`` opens one."""

    def __init__(self) -> None:
        self.closed = False
        self._resources: dict[str, _Resource] = {}
        self._next_cursor = 1
        self._model: tuple[str, int] | None = None
        self._retention: dict[str, timedelta] = {}

    def _resource(self, resource_id: str) -> _Resource:
        return self._resources.setdefault(resource_id, _Resource())

    def _record(self, resource_id: str, thread_id: str) -> _ThreadRecord | None:
        resource = self._resources.get(resource_id)
        return resource.threads.get(thread_id) if resource else None

    # threads

    async def create_thread(self, thread: Thread, *, exist_ok: bool = False) -> Thread:
        threads = self._resource(thread.resource_id).threads
        if thread.id in threads:
            if exist_ok:
                return threads[thread.id].thread.model_copy(deep=True)
            raise ThreadExistsError(thread.id)
        threads[thread.id] = _ThreadRecord(thread.model_copy(deep=True))
        return thread.model_copy(deep=True)

    async def get_thread(self, resource_id: str, thread_id: str) -> Thread | None:
        record = self._record(resource_id, thread_id)
        return record.thread.model_copy(deep=True) if record else None

    async def list_threads(
        self, resource_id: str, *, limit: int = 20, cursor: str | None = None,
        query: ThreadQuery = ALL_THREADS,
    ) -> ThreadPage:
        check_limit(limit)
        query = tq.check_thread_query(query, cursor)
        after = tq.decode_page_cursor(cursor, query) if cursor is not None else None
        descending = query.direction == "desc"
        threads = self._selected(resource_id, query)
        threads.sort(key=lambda t: tq.sort_key(t, query), reverse=descending)
        if after is not None:
            threads = [t for t in threads
                       if (tq.sort_key(t, query) < after if descending else tq.sort_key(t, query) > after)]
        start = query.offset or 0
        return tq.page([t.model_copy(deep=True) for t in threads[start:start + limit + 1]], limit, query)

    async def count_threads(self, resource_id: str, query: ThreadQuery = ALL_THREADS) -> int:
        return len(self._selected(resource_id, tq.check_thread_query(query)))

    def _selected(self, resource_id: str, query: ThreadQuery) -> list[Thread]:
        resource = self._resources.get(resource_id)
        records = resource.threads.values() if resource else []
        return [r.thread for r in records if tq.selects(r.thread, query)]

    async def update_thread(
        self, resource_id: str, thread_id: str, *, title: Any = UNSET, metadata: Any = UNSET
    ) -> Thread:
        record = self._record(resource_id, thread_id)
        if record is None:
            raise ThreadNotFoundError(thread_id)
        record.thread = changed_thread(record.thread, title, metadata)
        return record.thread.model_copy(deep=True)

    async def delete_thread(self, resource_id: str, thread_id: str) -> bool:
        resource = self._resources.get(resource_id)
        if resource is None or thread_id not in resource.threads:
            return False
        del resource.threads[thread_id]
        resource.working_memory.pop(note_key(thread_id), None)
        resource.states = {k: s for k, s in resource.states.items() if s.thread_id != thread_id}
        return True

    # messages

    async def save_messages(
        self, resource_id: str, thread_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        threads = self._resource(resource_id).threads
        record = threads.get(thread_id)
        if record is None:
            record = threads[thread_id] = _ThreadRecord(
                Thread(id=thread_id, resource_id=resource_id)
            )
        saved = []
        for message in messages:
            existing = record.messages.get(message.id)
            seq = existing.seq if existing else record.next_seq
            if existing is None:
                record.next_seq += 1
                record.cursors[message.id] = self._next_cursor
                self._next_cursor += 1
            elif existing.parts != message.parts:
                record.vectors.pop(message.id, None)
                record.sentences.pop(message.id, None)
                record.forget_summarised([seq])
            stored = message.model_copy(
                update={"thread_id": thread_id, "resource_id": resource_id, "seq": seq}, deep=True
            )
            record.messages[message.id] = stored
            saved.append(stored.model_copy(deep=True))
        record.thread = record.thread.model_copy(update={"updated_at": now()})
        return saved

    async def get_messages(
        self, resource_id: str, thread_id: str, query: MessageQuery = ALL_MESSAGES
    ) -> list[Message]:
        check_query(query)
        record = self._record(resource_id, thread_id)
        if record is None:
            return []
        ordered = self._visible(resource_id, record.messages.values())
        if query.ids is not None:
            wanted = set(query.ids)
            keep: set[int] = set()
            for i, message in enumerate(ordered):
                if message.id in wanted:
                    keep.update(range(i - query.message_range, i + query.message_range + 1))
            ordered = [m for i, m in enumerate(ordered) if i in keep]
        else:
            if query.after is not None:
                after = self._seq(record, query.after)
                ordered = [m for m in ordered if m.seq is not None and m.seq > after]
            if query.before is not None:
                before = self._seq(record, query.before)
                ordered = [m for m in ordered if m.seq is not None and m.seq < before]
        if query.last_n is not None:
            ordered = ordered[-query.last_n :] if query.last_n else []
        if query.first_n is not None:
            ordered = ordered[: query.first_n]
        return [m.model_copy(deep=True) for m in ordered]

    def _write_raw_row(
        self, resource_id: str, thread_id: str, message_id: str, columns: Mapping[str, Any]
    ) -> None:
        """A test hook: replace stored columns of a saved message (``role``, ``parts``,
        ``metadata``: text as the SQL stores keep it; ``created_us``: an integer) with raw values,
        as a newer memvault or damage on disk could leave them. The row is decoded as the SQL
        stores decode theirs (:func:`memvault.stores.rows.message`), so reads then return what
        they would: an :class:`~memvault.model.UnknownPart`, or a placeholder."""
        record = self._record(resource_id, thread_id)
        stored = record.messages.get(message_id) if record else None
        if record is None or stored is None:
            raise NotFoundError(f"message {message_id!r} is not in this thread")
        row = {"role": stored.role, "parts": stored.parts_json(), "metadata": rows.dumps(stored.metadata),
               "created_us": to_micros(stored.created_at), **columns}
        record.messages[message_id] = rows.message((
            message_id, thread_id, resource_id, stored.seq, row["role"], row["parts"], row["metadata"],
            row["created_us"]))

    @staticmethod
    def _seq(record: _ThreadRecord, message_id: str) -> int:
        """The seq of a page cursor's message (an expired one included)."""
        cursor = record.messages.get(message_id)
        if cursor is None or cursor.seq is None:
            raise NotFoundError(f"message {message_id!r} is not in this thread")
        return cursor.seq

    async def delete_messages(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> int:
        record = self._record(resource_id, thread_id)
        if record is None:
            return 0
        for message_id in ids:
            record.vectors.pop(message_id, None)
            record.sentences.pop(message_id, None)
            record.cursors.pop(message_id, None)
        removed = [m for i in set(ids) if (m := record.messages.pop(i, None)) is not None]
        record.forget_summarised([m.seq for m in removed])
        return len(removed)

    async def clear_thread(self, resource_id: str, thread_id: str) -> int:
        record = self._record(resource_id, thread_id)
        if record is None:
            return 0
        count = len(record.messages)
        record.messages.clear()
        record.vectors.clear()
        record.sentences.clear()
        record.cursors.clear()
        record.summary = None
        return count

    async def delete_resource(self, resource_id: str) -> Deleted:
        self._retention.pop(resource_id, None)
        graph = self._forget_graph(resource_id)
        resource = self._resources.pop(resource_id, None)
        if resource is None:
            return Deleted(extra=graph)
        return Deleted(
            threads=len(resource.threads),
            messages=sum(len(r.messages) for r in resource.threads.values()),
            working_memories=len(resource.working_memory),
            states=len(resource.states),
            extra=graph,
        )

    # retention (memvault.stores.capabilities.Retention)

    async def set_retention(self, resource_id: str, max_age: timedelta | None) -> None:
        if max_age is None:
            self._retention.pop(resource_id, None)
        else:
            self._retention[resource_id] = max_age

    async def retention_policies(self) -> dict[str, timedelta]:
        return dict(sorted(self._retention.items()))

    async def expire_messages(self, now: datetime, resource_id: str | None = None) -> list[Expired]:
        expired: list[Expired] = []
        for rid in [resource_id] if resource_id is not None else list(self._resources):
            cutoff, resource = self._cutoff(rid, now), self._resources.get(rid)
            if cutoff is None or resource is None:
                continue
            for thread_id, record in resource.threads.items():
                ids = [m.id for m in record.messages.values() if m.created_at < cutoff]
                await self.delete_messages(rid, thread_id, ids)
                expired += [(rid, thread_id, i) for i in ids]
        return expired

    def _cutoff(self, resource_id: str, at: datetime | None = None) -> datetime | None:
        """The oldest ``created_at`` the resource's reads return, or ``None`` (no policy)."""
        max_age = self._retention.get(resource_id) or self._retention.get(STORE_DEFAULT)
        return None if max_age is None else (at or now()) - max_age

    def _visible(self, resource_id: str, messages: Iterable[Message]) -> list[Message]:
        cutoff = self._cutoff(resource_id)
        return [m for m in messages if cutoff is None or m.created_at >= cutoff]

    # summaries

    async def get_summary(self, resource_id: str, thread_id: str) -> Summary | None:
        record = self._record(resource_id, thread_id)
        return None if record is None or record.summary is None else record.summary.model_copy()

    async def save_summary(self, summary: Summary, *, expected_version: int | None) -> Summary | None:
        record = self._record(summary.resource_id, summary.thread_id)
        if record is None:
            return None
        current = record.summary.version if record.summary is not None else None
        through = record.messages.get(summary.through_message_id)
        if current != expected_version or through is None or through.seq != summary.through_seq:
            return None
        record.summary = summary.model_copy(update={"version": (current or 0) + 1, "updated_at": now()})
        return record.summary.model_copy()

    async def delete_summary(self, resource_id: str, thread_id: str) -> bool:
        record = self._record(resource_id, thread_id)
        if record is None or record.summary is None:
            return False
        record.summary = None
        return True

    # search

    async def search_messages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        check_limit(limit)
        resource = self._resources.get(resource_id)
        groups = [[stem(w) for w in g] for g in query_groups(query)]
        if resource is None or not groups:
            return []
        records = [r for tid, r in resource.threads.items() if thread_id in (None, tid)]
        docs = [(m, tokens(index_text(m))) for r in records for m in r.messages.values()]
        cutoff = self._cutoff(resource_id)  # scores count expired messages until they are swept
        return [h for h in _bm25(groups, docs) if cutoff is None or h.message.created_at >= cutoff][:limit]

    async def rebuild_search_index(self) -> int:
        """Nothing to rebuild: the reference store searches the messages themselves."""
        return sum(len(r.messages) for res in self._resources.values() for r in res.threads.values())

    # working memory

    async def get_working_memory(self, resource_id: str, key: str) -> str | None:
        resource = self._resources.get(resource_id)
        return resource.working_memory.get(key) if resource else None

    async def update_working_memory(
        self, resource_id: str, key: str, update: WorkingMemoryUpdate
    ) -> str | None:
        store = self._resource(resource_id).working_memory
        content = update(store.get(key))
        if content is None:
            store.pop(key, None)
        else:
            store[key] = content
        return content

    # states

    async def get_state(self, resource_id: str, key: str) -> State | None:
        resource = self._resources.get(resource_id)
        state = resource.states.get(key) if resource else None
        return state.model_copy(deep=True) if state else None

    async def set_state(
        self,
        resource_id: str,
        key: str,
        value: Any,
        *,
        status: str | None = None,
        expected_version: int | _Unset | None = UNSET,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> State | None:
        if thread_id is not None and self._record(resource_id, thread_id) is None:
            raise ThreadNotFoundError(thread_id)
        states = self._resource(resource_id).states
        current = states.get(key)
        version = current.version if current else None
        if not isinstance(expected_version, _Unset) and expected_version != version:
            return None
        at = now()
        state = State(
            resource_id=resource_id, key=key, value=value, status=status, version=(version or 0) + 1,
            workflow_id=workflow_id, thread_id=thread_id, created_at=current.created_at if current else at,
            updated_at=at,
        )
        states[key] = state
        return state.model_copy(deep=True)

    async def update_state(
        self,
        resource_id: str,
        key: str,
        *,
        merge: Any = UNSET,
        status: str | _Unset | None = UNSET,
        expected_version: int | None = None,
    ) -> State | None:
        resource = self._resources.get(resource_id)
        current = resource.states.get(key) if resource else None
        if resource is None or current is None:
            raise NotFoundError(f"no state {key!r} for this resource")
        if expected_version is not None and expected_version != current.version:
            return None
        resource.states[key] = updated_state(current, merge, status)
        return resource.states[key].model_copy(deep=True)

    async def list_states(
        self,
        resource_id: str,
        *,
        status: str | None = None,
        limit: int = 100,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> list[State]:
        check_limit(limit)
        resource = self._resources.get(resource_id)
        wanted = {"status": status, "workflow_id": workflow_id, "thread_id": thread_id}
        states = [s for s in (resource.states.values() if resource else [])
                  if all(value is None or getattr(s, name) == value for name, value in wanted.items())]
        states.sort(key=lambda s: (s.updated_at, s.key), reverse=True)
        return [s.model_copy(deep=True) for s in states[:limit]]

    async def delete_state(self, resource_id: str, key: str) -> bool:
        resource = self._resources.get(resource_id)
        return bool(resource and resource.states.pop(key, None))

    # embeddings

    async def embedding_model(self) -> tuple[str, int] | None:
        return self._model

    async def save_embeddings(self, model: str, dimensions: int, rows: Sequence[VectorRow]) -> int:
        if self._model is None:
            self._model = (model, dimensions)
        elif self._model != (model, dimensions):
            raise ConfigurationError(embedding_mismatch(self._model, (model, dimensions)))
        stored = 0
        for row in rows:
            resource_id, thread_id, message_id, vector = row[:4]
            record = self._record(resource_id, thread_id)
            if record is not None and message_id in record.messages:
                record.vectors[message_id] = bytes(vector)
                sentences = sentences_of(row)
                if sentences is None:
                    record.sentences.pop(message_id, None)
                else:
                    record.sentences[message_id] = sentences
                stored += 1
        return stored

    async def sentence_embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        found = []
        for thread_id, message_id in keys:
            record = self._record(resource_id, thread_id)
            if record is not None and message_id in record.sentences:
                found.append((thread_id, message_id, record.sentences[message_id]))
        return found

    def _by_cursor(self) -> list[tuple[int, _ThreadRecord, str]]:
        found = [
            (cursor, record, message_id)
            for resource in self._resources.values()
            for record in resource.threads.values()
            for message_id, cursor in record.cursors.items()
        ]
        found.sort(key=lambda item: item[0])
        return found

    async def load_embeddings(
        self, *, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, str, str, str, bytes]]:
        found = [
            (cursor, record.thread.resource_id, record.thread.id, message_id, record.vectors[message_id])
            for cursor, record, message_id in self._by_cursor()
            if cursor > after and message_id in record.vectors
        ]
        return found[:limit]

    async def unembedded_messages(
        self, *, after: int = 0, limit: int = 500
    ) -> list[tuple[int, Message]]:
        found = [
            (cursor, record.messages[message_id].model_copy(deep=True))
            for cursor, record, message_id in self._by_cursor()
            if cursor > after and message_id not in record.vectors
        ]
        return found[:limit]

    async def clear_embeddings(self) -> int:
        self._model = None
        count = 0
        for resource in self._resources.values():
            for record in resource.threads.values():
                count += len(record.vectors)
                record.vectors.clear()
                record.sentences.clear()
        return count

    # batch reads (memvault.stores.capabilities.BatchReads)

    async def read_turn(self, resource_id: str, thread_id: str, *, last_n: int, note_key: str) -> TurnRead:
        return TurnRead(await self.get_messages(resource_id, thread_id, MessageQuery(last_n=last_n)),
                        await self.get_summary(resource_id, thread_id),
                        await self.get_working_memory(resource_id, note_key))

    async def read_around(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Message]]:
        return {thread_id: await self.get_messages(resource_id, thread_id,
                                                   MessageQuery(ids=list(found), message_range=message_range))
                for thread_id, found in ids.items()}

    # passage reads (memvault.stores.capabilities.PassageReads): this store's messages are built
    # already, so each passage wraps one

    async def search_passages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[tuple[Passage, float]]:
        hits = await self.search_messages(resource_id, query, thread_id=thread_id, limit=limit)
        return [(Passage.of(hit.message), hit.score) for hit in hits]

    async def read_passages(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Passage]]:
        read = await self.read_around(resource_id, ids, message_range)
        return {thread_id: [Passage.of(m) for m in found] for thread_id, found in read.items()}

    async def search_pool(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10,
        message_range: int = 0,
    ) -> SearchPool:
        check_pool_search(limit, message_range)
        hits = await self.search_passages(resource_id, query, thread_id=thread_id, limit=limit)
        terms = query_terms(searchable_query(query))
        by_thread: dict[str, list[str]] = {}
        for hit, _ in hits:
            by_thread.setdefault(hit.thread_id or "", []).append(hit.id)
        threads = await self.read_passages(resource_id, by_thread, message_range)
        marks = {(name, p.id): mark_of(p.text, terms) for name, read in threads.items() for p in read}
        return SearchPool(hits, terms, threads, marks, message_range)

    # export (memvault.stores.capabilities.ExportStore, for memvault.transfer.copier)

    async def resource_ids(self) -> list[str]:
        return sorted(
            rid for rid, r in self._resources.items() if r.threads or r.working_memory or r.states
        )

    async def record_counts(self, resource_id: str) -> dict[str, int]:
        resource = self._resources.get(resource_id) or _Resource()
        records = resource.threads.values()
        return {"threads": len(records), "messages": sum(len(r.messages) for r in records),
                "summaries": sum(r.summary is not None for r in records),
                "working_memories": len(resource.working_memory), "states": len(resource.states)}

    async def working_memory_keys(self, resource_id: str) -> list[str]:
        resource = self._resources.get(resource_id)
        return sorted(resource.working_memory) if resource else []

    async def state_keys(self, resource_id: str) -> list[str]:
        resource = self._resources.get(resource_id)
        return sorted(resource.states) if resource else []

    async def restore_thread(self, thread: Thread) -> None:
        threads = self._resource(thread.resource_id).threads
        record = threads.get(thread.id)
        if record is None:
            threads[thread.id] = _ThreadRecord(thread.model_copy(deep=True))
        else:
            record.thread = thread.model_copy(deep=True)

    async def restore_state(self, state: State) -> None:
        if state.thread_id is not None and self._record(state.resource_id, state.thread_id) is None:
            raise ThreadNotFoundError(state.thread_id)
        self._resource(state.resource_id).states[state.key] = state.model_copy(deep=True)

    async def restore_summary(self, summary: Summary) -> None:
        record = self._record(summary.resource_id, summary.thread_id)
        if record is None:
            raise ThreadNotFoundError(summary.thread_id)
        record.summary = summary.model_copy(deep=True)

    async def purge(self) -> dict[str, Any]:
        """Nothing to do: a deleted record is gone once the call returns (nothing is written to
        disk; Python frees the objects)."""
        return {}

    async def close(self) -> None:
        """Drop everything; every later call raises :class:`~memvault.errors.StoreClosedError`
        (:mod:`memvault.stores.closing`); closing twice is harmless."""
        self.closed = True
        self._resources.clear()


def _bm25(
    groups: list[list[str]], docs: list[tuple[Message, list[str]]], k1: float = 1.2, b: float = 0.75
) -> list[SearchHit]:
    """Okapi BM25 over ``docs``; a group of several tokens counts as a phrase."""
    if not docs:
        return []
    counts = [{tuple(g): _occurrences(g, toks) for g in groups} for _, toks in docs]
    average = sum(len(toks) for _, toks in docs) / len(docs) or 1.0
    scored = []
    for (message, toks), freq in zip(docs, counts, strict=True):
        score = 0.0
        for group in dict.fromkeys(tuple(g) for g in groups):
            tf = freq[group]
            if tf:
                having = sum(1 for f in counts if f[group])
                idf = math.log((len(docs) - having + 0.5) / (having + 0.5) + 1)
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(toks) / average))
        if score > 0:
            scored.append(SearchHit(message=message.model_copy(deep=True), score=score))
    scored.sort(key=lambda h: (-h.score, h.message.created_at))
    return scored


def _occurrences(group: list[str], toks: list[str]) -> int:
    n = len(group)
    return sum(1 for i in range(len(toks) - n + 1) if toks[i : i + n] == group)
