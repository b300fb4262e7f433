"""Copying every record of one store into another, e.g. from SQLite to PostgreSQL
(``memvault copy --from URL --to URL``, or :func:`copy_store` from Python).

What is copied, per resource (in resource id order):

- every thread with its title, metadata, ``created_at`` and ``updated_at``;
- its messages in thread order, with their ids, roles, parts, metadata and ``created_at``.
  The target numbers them ``seq`` 1..n without gaps: the gaps that deletions left in the
  source's seq numbers are **not** kept (the order is). Each thread is saved in batches of
  :data:`BATCH` messages, each batch one transaction;
- the thread's summary, with its text, version and time; its ``through_seq`` is renumbered to
  the target seq of its ``through_message_id``;
- every working memory (resource- and thread-scoped keys alike) and every state, with its value,
  status, version, workflow id, thread, ``created_at`` and ``updated_at``;

but not the API key records (:data:`~memvault.transfer.reserved.KEYS_RESOURCE`) unless
``include_keys``; then the stored embeddings (model, dimensions and every message's vector),
after all messages; and, when both stores keep them, the retention policies (the store's and
those of the copied resources; :mod:`memvault.retention`). Messages already expired in the
source are not copied (every read leaves them out), nor their vectors. Parts a newer memvault
wrote (:class:`~memvault.model.UnknownPart`) are copied byte-identical. A placeholder for a row
the source cannot decode (:class:`~memvault.model.UnreadablePart`, see
:mod:`memvault.stores.decode`) is not copied: a warning names it, the target's thread lacks it,
and the verification reports ``messages`` as a mismatch; repair or delete the row and copy again.
Derived search indexes are rebuilt by the target as it saves.

The target must be empty (no resource, no embedding model): :func:`copy_store` raises
:class:`~memvault.errors.ConfigurationError` otherwise, since merging into existing data would
make the copy neither the source nor the target. There is no force option; copy into a fresh
file or schema. Both stores must implement :class:`~memvault.stores.capabilities.ExportStore` (the
built-in ones do). The source should not be written to during the copy; it is not locked.

When the copy is done, :func:`digest` is computed on both sides and compared: a count and a
sha256 per kind over a canonical JSON of the records (messages by position, not by seq). The
:class:`CopyReport` says whether they match; a mismatch is reported, not raised.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memvault.errors import ConfigurationError
from memvault.model import Message, Thread
from memvault.stores.base import MessageQuery, Store, WorkingMemoryUpdate
from memvault.stores.capabilities import (
    STORE_DEFAULT,
    CompleteStore,
    VectorRow,
    require_complete,
    supports_retention,
    supports_sentence_vectors,
)
from memvault.stores.common import to_micros
from memvault.transfer.reserved import KEYS_RESOURCE

log = logging.getLogger("memvault.transfer")

BATCH = 500
"""Messages saved per ``save_messages`` call (one transaction) and vectors per ``save_embeddings``."""
_PAGE = 1000
KINDS = ("resources", "threads", "messages", "working_memories", "states", "summaries", "embeddings")


@dataclass(frozen=True)
class CopyProgress:
    """Where a copy is: ``resource`` (1-based) of ``resources``, ``thread`` of ``threads`` in it,
    and the messages copied so far in all. ``phase`` is ``"threads"``, ``"records"`` (working
    memories and states), ``"embeddings"`` or ``"verify"``."""

    phase: str
    resource_id: str | None = None
    resource: int = 0
    resources: int = 0
    thread: int = 0
    threads: int = 0
    messages: int = 0


@dataclass(frozen=True)
class Digest:
    """Per kind (:data:`KINDS`): how many records, and a sha256 of their canonical JSON."""

    counts: dict[str, int]
    checksums: dict[str, str]

    def mismatches(self, other: Digest) -> list[str]:
        """The kinds whose count or checksum differ."""
        return [
            k for k in KINDS
            if (self.counts[k], self.checksums[k]) != (other.counts[k], other.checksums[k])
        ]


@dataclass(frozen=True)
class CopyReport:
    """What was copied (``copied``: count per kind) and the verification: both digests, and the
    kinds that differ (``mismatches``; empty when the copy is verified)."""

    copied: dict[str, int]
    source: Digest
    target: Digest
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


ProgressCallback = Callable[[CopyProgress], None]


@runtime_checkable
class HoldsStore(Protocol):
    """Anything with a ``store`` (a :class:`memvault.Memory`): its store is copied."""

    @property
    def store(self) -> Store: ...


def _store(value: HoldsStore | Store, side: str) -> CompleteStore:
    return require_complete(value.store if isinstance(value, HoldsStore) else value, f"the {side} store")


async def threads_of(store: Store, resource_id: str) -> list[Thread]:
    """Every thread of the resource (all pages), in id order."""
    threads: list[Thread] = []
    cursor: str | None = None
    while True:
        page = await store.list_threads(resource_id, limit=_PAGE, cursor=cursor)
        threads.extend(page.threads)
        cursor = page.next_cursor
        if cursor is None:
            return sorted(threads, key=lambda t: t.id)


async def messages_of(store: Store, resource_id: str, thread_id: str) -> AsyncIterator[list[Message]]:
    """The thread's messages in thread order, :data:`BATCH` at a time."""
    after: str | None = None
    while True:
        page = await store.get_messages(resource_id, thread_id, MessageQuery(after=after, first_n=BATCH))
        if page:
            yield page
        if len(page) < BATCH:
            return
        after = page[-1].id


async def _embeddings(store: CompleteStore, sentences: bool) -> list[VectorRow]:
    """Every stored vector as a ``save_embeddings`` row; with ``sentences``, each with its
    message's sentences' vectors (:class:`~memvault.stores.capabilities.SentenceVectors`)."""
    rows: list[VectorRow] = []
    after = 0
    while True:
        page = await store.load_embeddings(after=after, limit=10_000)
        if not page:
            return rows
        if not sentences:
            rows.extend((r, t, m, v) for _, r, t, m, v in page)
        else:
            assert supports_sentence_vectors(store)
            wanted: dict[str, list[tuple[str, str]]] = {}
            for _, r, t, m, _ in page:
                wanted.setdefault(r, []).append((t, m))
            found = {(r, t, m): blob for r, keys in wanted.items()
                     for t, m, blob in await store.sentence_embeddings_of(r, keys)}
            rows.extend((r, t, m, v, found.get((r, t, m))) for _, r, t, m, v in page)
        after = page[-1][0]


async def copy_store(
    source: HoldsStore | Store, target: HoldsStore | Store, *, progress: ProgressCallback | None = None,
    include_keys: bool = False,
) -> CopyReport:
    """Copy everything in ``source`` into the empty ``target`` (see the module docstring), then
    verify both sides' :func:`digest`. The API key records
    (:data:`~memvault.transfer.reserved.KEYS_RESOURCE`, not users' data) are copied only with
    ``include_keys``. Raises :class:`ConfigurationError` when the target is not
    empty or a store cannot be enumerated; a store failure propagates (the target then holds a
    partial copy: drop it and copy again)."""
    src, dst = _store(source, "source"), _store(target, "target")
    if await dst.resource_ids() or await dst.embedding_model() is not None:
        raise ConfigurationError(
            "the target store is not empty; copy into a new file or an unused PostgreSQL schema"
        )
    report = progress or (lambda _: None)
    copied = dict.fromkeys(KINDS, 0)
    resources = await _resources(src, include_keys)
    for number, resource_id in enumerate(resources, 1):
        copied["resources"] += 1
        threads = await threads_of(src, resource_id)
        report(CopyProgress("threads", resource_id, number, len(resources), 0, len(threads),
                            copied["messages"]))
        for index, thread in enumerate(threads, 1):
            new_seq: dict[str, int] = {}
            async for page in messages_of(src, resource_id, thread.id):
                batch = [m.model_copy(update={"seq": None}) for m in readable(page)]
                for saved in await dst.save_messages(resource_id, thread.id, batch) if batch else []:
                    assert saved.seq is not None
                    new_seq[saved.id] = saved.seq
            await dst.restore_thread(thread)  # after the messages: saving bumps updated_at
            summary = await src.get_summary(resource_id, thread.id)
            if summary is not None and summary.through_message_id in new_seq:
                await dst.restore_summary(
                    summary.model_copy(update={"through_seq": new_seq[summary.through_message_id]})
                )
                copied["summaries"] += 1
            copied["threads"] += 1
            copied["messages"] += len(new_seq)
            report(CopyProgress("threads", resource_id, number, len(resources), index, len(threads),
                                copied["messages"]))
        report(CopyProgress("records", resource_id, number, len(resources), len(threads), len(threads),
                            copied["messages"]))
        for key in await src.working_memory_keys(resource_id):
            content = await src.get_working_memory(resource_id, key)
            if content is not None:
                await dst.update_working_memory(resource_id, key, _replace_with(content))
                copied["working_memories"] += 1
        for key in await src.state_keys(resource_id):
            state = await src.get_state(resource_id, key)
            if state is not None:
                await dst.restore_state(state)
                copied["states"] += 1
    if supports_retention(src) and supports_retention(dst):
        for key, max_age in (await src.retention_policies()).items():
            if key == STORE_DEFAULT or key in resources:
                await dst.set_retention(key, max_age)
    model = await src.embedding_model()
    if model is not None:
        report(CopyProgress("embeddings", None, len(resources), len(resources), 0, 0, copied["messages"]))
        rows = await _embeddings(src, supports_sentence_vectors(src) and supports_sentence_vectors(dst))
        for start in range(0, max(len(rows), 1), BATCH):
            copied["embeddings"] += await dst.save_embeddings(model[0], model[1], rows[start : start + BATCH])
    report(CopyProgress("verify", None, len(resources), len(resources), 0, 0, copied["messages"]))
    before, after = await digest(src, include_keys=include_keys), await digest(dst, include_keys=include_keys)
    return CopyReport(copied, before, after, before.mismatches(after))


def readable(page: list[Message]) -> list[Message]:
    """The messages of ``page`` that are not placeholders for unreadable rows; each one left out
    is logged as a warning naming it (never its text)."""
    kept = []
    for m in page:
        part = m.unreadable
        if part is None:
            kept.append(m)
        else:
            log.warning("memvault: message %r of thread %r (resource %r) is unreadable and is not "
                        "copied: %s", m.id, m.thread_id, m.resource_id, part.reason)
    return kept


def _replace_with(content: str) -> WorkingMemoryUpdate:
    return lambda _current: content


def _canonical(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def _message(position: int, m: Message) -> list[Any]:
    return [position, m.id, m.role, json.loads(m.parts_json()), m.metadata, to_micros(m.created_at)]


async def _resources(store: CompleteStore, include_keys: bool) -> list[str]:
    return [r for r in await store.resource_ids() if include_keys or r != KEYS_RESOURCE]


async def digest(store: HoldsStore | Store, *, include_keys: bool = True) -> Digest:
    """Counts and sha256 checksums per kind (:data:`KINDS`) of everything in ``store``, over a
    canonical JSON (sorted keys, compact, UTF-8) of each record, in resource, thread, key order.
    Messages are identified by their position in the thread (1..n), not their seq, and a
    summary by its ``through_message_id``, so a copy with renumbered seqs digests the same.
    Embeddings are digested with the model and dimensions, in (resource, thread, message) order."""
    st = _store(store, "digested")
    hashes = {k: hashlib.sha256() for k in KINDS}
    counts = dict.fromkeys(KINDS, 0)

    def add(kind: str, value: Any) -> None:
        counts[kind] += 1
        hashes[kind].update(_canonical(value) + b"\n")

    for resource_id in await _resources(st, include_keys):
        add("resources", resource_id)
        for t in await threads_of(st, resource_id):
            add("threads", [resource_id, t.id, t.title, t.metadata, to_micros(t.created_at),
                            to_micros(t.updated_at)])
            position = 0
            async for page in messages_of(st, resource_id, t.id):
                for m in page:
                    position += 1
                    add("messages", [resource_id, t.id, *_message(position, m)])
            s = await st.get_summary(resource_id, t.id)
            if s is not None:
                add("summaries", [resource_id, t.id, s.text, s.through_message_id, s.version,
                                  to_micros(s.updated_at)])
        for key in await st.working_memory_keys(resource_id):
            add("working_memories", [resource_id, key, await st.get_working_memory(resource_id, key)])
        for key in await st.state_keys(resource_id):
            state = await st.get_state(resource_id, key)
            if state is not None:
                add("states", [resource_id, key, state.value, state.status, state.version,
                               to_micros(state.updated_at), state.workflow_id, state.thread_id,
                               to_micros(state.created_at)])
    model = await st.embedding_model()
    # the messages' own vectors (their sentences' are derived from the same text, and a store
    # without SentenceVectors holds none)
    vectors = sorted(row[:4] for row in await _embeddings(st, False)) if model else []
    for r, t_id, m_id, vector in vectors:
        add("embeddings", [model, r, t_id, m_id, hashlib.sha256(vector).hexdigest()])
    return Digest(counts, {k: h.hexdigest() for k, h in hashes.items()})
