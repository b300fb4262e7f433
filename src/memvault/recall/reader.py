"""The narrow read protocol recall needs, over a store: window, full-text hits, neighbours, note.

A :class:`RecallReader` reads for one resource: its id is checked once, when the reader is made,
and every read is scoped to it. It lives for one recall (or one turn) and remembers what it read:

- the **note** (working memory) is read at most once;
- **neighbours** (:meth:`RecallReader.around`, or :meth:`RecallReader.passages` for what
  recall scores messages by, whose messages are built only when fed) already read are served
  again without a store call. A read of ``ids`` with ``message_range`` r guarantees, for each id, its r true
  neighbours on each side (fewer where the thread ends); the reader keeps, per message, how far
  that guarantee reaches, and answers a later request from memory when it is covered. What it
  answers is exactly what ``get_messages(ids=..., message_range=...)`` would return;
- the **window** can be given up front (:meth:`RecallReader.preload_tail`) by a caller that
  already read the newest messages of the thread (the turn does, to detect a retry).

Nothing here calls a model or an embedder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from memvault.errors import ValidationError
from memvault.model import Message, note_key, valid_id
from memvault.rules import history as history_window
from memvault.rules.tokens import TokenCounter, estimate_tokens
from memvault.rules.words import query_terms, searchable_query
from memvault.stores.base import MessageQuery, Store
from memvault.stores.capabilities import (
    supports_batch_reads,
    supports_full_text,
    supports_passage_reads,
    supports_pool_search,
)
from memvault.stores.passages import Passage, SearchPool

NoteScope = Literal["resource", "thread"]


@dataclass
class _Thread:
    """What was read of one thread: passages by id, and how many true neighbours each is known
    to have on each side in :attr:`passages` (``None``: up to the thread's start or end).
    Reads are merged in on first use (:meth:`ordered`, :meth:`covers`): a pool search reads
    around a hundred threads, and recall goes back to a few of them."""

    passages: dict[str, Passage] = field(default_factory=dict)
    reach: dict[str, int] = field(default_factory=dict)
    _pending: list[tuple[Sequence[Passage], set[str], int]] = field(default_factory=list)
    """The reads :meth:`add` was given since the last merge, in order."""
    _order: tuple[list[Passage], dict[str, int]] | None = None
    """:attr:`passages` in thread order with each id's position, until the next :meth:`add`."""

    def ordered(self) -> tuple[list[Passage], dict[str, int]]:
        """The passages read, in thread order, and each id's position in that list."""
        self._merge()
        if self._order is None:
            ordered = sorted(self.passages.values(), key=lambda p: (p.seq or 0, p.id))
            self._order = ordered, {p.id: i for i, p in enumerate(ordered)}
        return self._order

    def add(self, found: Sequence[Passage], ids: set[str], message_range: int) -> None:
        """Take the answer of ``get_messages(ids=ids, message_range=message_range)``, merged on
        first use."""
        self._order = None
        self._pending.append((found, ids, message_range))

    def _merge(self) -> None:
        for found, ids, message_range in self._pending:
            for passage in found:
                self.passages[passage.id] = passage
            position = {p.id: i for i, p in enumerate(found)}
            for message_id in ids:
                i = position.get(message_id)
                if i is None:
                    continue
                for j in range(max(0, i - message_range), min(len(found), i + message_range + 1)):
                    covered = message_range - abs(i - j)
                    other = found[j].id
                    if covered > self.reach.get(other, -1):
                        self.reach[other] = covered
        self._pending.clear()

    def covers(self, message_id: str, message_range: int) -> bool:
        self._merge()
        return self.reach.get(message_id, -1) >= message_range

    def around(self, ids: Sequence[str], message_range: int) -> list[Passage]:
        """The passages within ``message_range`` of ``ids`` (all covered), in thread order."""
        ordered, position = self.ordered()
        keep: set[int] = set()
        for message_id in ids:
            i = position.get(message_id)
            if i is not None:
                keep.update(range(max(0, i - message_range), min(len(ordered), i + message_range + 1)))
        return [ordered[i] for i in sorted(keep)]


class RecallReader:
    """Recall's reads for ``resource_id`` over ``store`` (see the module docstring).

    ``last_n``, ``max_tokens`` and ``count`` make the window as :meth:`memvault.Memory.get_history`
    does (defaults: the newest 10 messages, no token limit, the offline estimate);
    ``note_scope`` says which working-memory note :meth:`note` reads (``"resource"``, the
    default, or the current thread's).
    """

    def __init__(
        self,
        store: Store,
        resource_id: str,
        *,
        last_n: int = 10,
        max_tokens: int | None = None,
        count: TokenCounter = estimate_tokens,
        note_scope: NoteScope = "resource",
    ) -> None:
        self.store = store
        self.resource_id = valid_id(resource_id, "resource_id")
        self.last_n = last_n
        self.max_tokens = max_tokens
        self.count = count
        self.note_scope = note_scope
        self.calls = 0
        """How many store calls this reader made."""
        self._threads: dict[str, _Thread] = {}
        self._tails: dict[str, tuple[list[Message], bool]] = {}
        self._notes: dict[str, str | None] = {}

    def preload_tail(self, thread_id: str, newest: list[Message], *, complete: bool) -> None:
        """Give the reader the thread's newest messages, in order, read by the caller:
        ``complete`` when they are the whole thread. :meth:`window` then reads nothing when they
        are enough."""
        self._tails[thread_id] = (list(newest), complete)

    def preload_note(self, thread_id: str | None, content: str | None) -> None:
        """Give the reader the note :meth:`note` would read for ``thread_id``."""
        self._notes[self._note_key(thread_id)] = content

    async def read_turn(self, thread_id: str, last_n: int | None = None) -> None:
        """Read the thread's newest ``last_n`` messages (``None``: the reader's ``last_n``) and
        the note together, in one store call (a store with
        :class:`~memvault.stores.capabilities.BatchReads`), for a caller that will ask for both
        (:meth:`window`, :meth:`note`); nothing when either is known already, or the store
        cannot."""
        key = self._note_key(thread_id)
        if key in self._notes or thread_id in self._tails or not supports_batch_reads(self.store):
            return
        last_n = self.last_n if last_n is None else last_n
        self.calls += 1
        read = await self.store.read_turn(self.resource_id, thread_id, last_n=last_n, note_key=key)
        self.preload_tail(thread_id, read.messages, complete=len(read.messages) < last_n)
        self._notes[key] = read.note

    async def window(self, thread_id: str, last_n: int | None = None) -> list[Message]:
        """The thread's recent window: its newest ``last_n`` messages (``None``: the reader's
        ``last_n``), trimmed to the token limit, never splitting a tool call from its result."""
        last_n = self.last_n if last_n is None else last_n
        tail = self._tails.get(thread_id)
        if tail is not None and (tail[1] or len(tail[0]) >= last_n):
            newest = tail[0][max(0, len(tail[0]) - last_n):] if last_n else []
        else:
            self.calls += 1
            newest = await self.store.get_messages(self.resource_id, thread_id, MessageQuery(last_n=last_n))
        return history_window.window(newest, last_n=last_n, max_tokens=self.max_tokens, count=self.count)

    async def full_text(
        self, query: str, *, thread_id: str | None, limit: int
    ) -> list[tuple[Passage, float]]:
        """The store's full-text hits for ``query`` in the resource (or one thread), best first,
        as passages with their scores; none when the store has no full-text search."""
        if not supports_full_text(self.store):
            return []
        self.calls += 1
        query = searchable_query(query)
        if supports_passage_reads(self.store):
            return await self.store.search_passages(self.resource_id, query, thread_id=thread_id, limit=limit)
        hits = await self.store.search_messages(self.resource_id, query, thread_id=thread_id, limit=limit)
        return [(Passage.of(hit.message), hit.score) for hit in hits]

    async def search_pool(
        self, query: str, *, thread_id: str | None, limit: int, message_range: int
    ) -> SearchPool:
        """The store's full-text hits for ``query`` (:meth:`full_text`) with their
        ``message_range`` neighbours (:meth:`passages`, remembered like any read), as a
        :class:`~memvault.stores.passages.SearchPool`: in one store call with marks from the
        full-text index (a store with :class:`~memvault.stores.capabilities.PoolSearch`), else
        by those two reads, with no marks and the query's :func:`~memvault.rules.words.query_terms`."""
        if not supports_pool_search(self.store):
            hits = await self.full_text(query, thread_id=thread_id, limit=limit)
            by_thread: dict[str, list[str]] = {}
            for hit, _ in hits:
                if hit.thread_id is not None:
                    by_thread.setdefault(hit.thread_id, []).append(hit.id)
            threads = await self.passages(by_thread, message_range) if by_thread else {}
            return SearchPool(hits, query_terms(searchable_query(query)), threads, {}, message_range)
        self.calls += 1
        pool = await self.store.search_pool(self.resource_id, searchable_query(query), thread_id=thread_id,
                                            limit=limit, message_range=message_range)
        hit_ids: dict[str, set[str]] = {}
        for hit, _ in pool.hits:
            if hit.thread_id is not None:
                hit_ids.setdefault(hit.thread_id, set()).add(hit.id)
        for name, read in pool.threads.items():
            self._thread(name).add(read, hit_ids.get(name, set()), message_range)
        return pool

    async def around(self, ids: Mapping[str, Sequence[str]], message_range: int) -> dict[str, list[Message]]:
        """For each thread, the messages ``ids[thread]`` with ``message_range`` neighbours on each
        side, in thread order (runs with gaps between them), as ``get_messages`` gives them
        (:meth:`passages`, each passage's message)."""
        found = await self.passages(ids, message_range)
        return {name: [p.message() for p in read] for name, read in found.items()}

    async def passages(
        self, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Passage]]:
        """What :meth:`around` reads, as passages: messages are built only when a caller asks a
        passage for its message (with a store that has
        :class:`~memvault.stores.capabilities.PassageReads`). The threads whose ids were not
        all read before are read in one store call (a store with
        :class:`~memvault.stores.capabilities.BatchReads`), else one call per thread,
        concurrently."""
        wanted = {name: list(dict.fromkeys(found)) for name, found in ids.items() if found}
        missing = {name: found for name, found in wanted.items()
                   if not all(self._thread(name).covers(i, message_range) for i in found)}
        reads: Sequence[Sequence[Passage]]
        if missing and supports_passage_reads(self.store):
            self.calls += 1
            read = await self.store.read_passages(self.resource_id, missing, message_range)
            reads = [read.get(name, []) for name in missing]
        elif len(missing) > 1 and supports_batch_reads(self.store):
            self.calls += 1
            around = await self.store.read_around(self.resource_id, missing, message_range)
            reads = [[Passage.of(m) for m in around.get(name, [])] for name in missing]
        else:
            self.calls += len(missing)
            reads = [[Passage.of(m) for m in found_read] for found_read in await asyncio.gather(*(
                self.store.get_messages(self.resource_id, name,
                                        MessageQuery(ids=found, message_range=message_range))
                for name, found in missing.items()
            ))]
        for (name, found), found_read in zip(missing.items(), reads, strict=True):
            self._thread(name).add(found_read, set(found), message_range)
        return {name: self._thread(name).around(found, message_range) for name, found in wanted.items()}

    async def note(self, thread_id: str | None) -> str | None:
        """The working-memory note (``None`` when never written), read once. With a
        thread-scoped note and no ``thread_id`` there is none: ``None``."""
        try:
            key = self._note_key(thread_id)
        except ValidationError:
            return None
        if key not in self._notes:
            self.calls += 1
            self._notes[key] = await self.store.get_working_memory(self.resource_id, key)
        return self._notes[key]

    def _note_key(self, thread_id: str | None) -> str:
        if self.note_scope == "resource":
            return note_key(None)
        if thread_id is None:
            raise ValidationError("thread-scoped working memory needs a thread_id")
        return note_key(thread_id)

    def _thread(self, thread_id: str) -> _Thread:
        return self._threads.setdefault(thread_id, _Thread())
