"""Memory: the public API over a store.

Every call names its resource (``resource_id``) and, where it concerns one conversation, its
thread (``thread_id``). A thread of another resource behaves exactly like a missing thread.
Input is validated before anything is written: bad input raises
:class:`memvault.errors.ValidationError` and writes nothing.

Example::

    async with await Memory.open("sqlite:///app.db") as memory:
        await memory.save_messages([Message.user("I'm Ada")], thread_id="t1", resource_id="ada")
        history = await memory.get_history(thread_id="t1", resource_id="ada")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from memvault.errors import (
    ConfigurationError,
    MessageTooLargeError,
    NotFoundError,
    ThreadExistsError,
    ThreadNotFoundError,
    ValidationError,
    shown,
)
from memvault.extras import import_optional
from memvault.model import (
    Message,
    SearchHit,
    State,
    Summary,
    TextPart,
    Thread,
    ThreadPage,
    check_json,
)
from memvault.model import (
    valid_id as _id,
)
from memvault.options import MemoryOptions
from memvault.recall import RecallOptions, RecallReader, RecallResult
from memvault.recall import recall as recall_messages
from memvault.retention import Sweeper, check_max_age
from memvault.retention import sweep as sweep_expired
from memvault.rules import arguments
from memvault.rules import history as history_window
from memvault.rules import working_memory as wm
from memvault.rules.words import searchable_query
from memvault.stores import Store, open_store
from memvault.stores.base import (
    ALL_THREADS,
    UNSET,
    Deleted,
    Direction,
    MessageQuery,
    ThreadOrder,
    ThreadQuery,
    _Unset,
)
from memvault.stores.capabilities import (
    STORE_DEFAULT,
    TurnRead,
    require_complete,
    require_embeddings,
    require_export,
    require_full_text,
    require_retention,
    require_states,
    require_summaries,
    supports_batch_reads,
    supports_purge,
    supports_retention,
    supports_states,
    supports_summaries,
)
from memvault.stores.checkpoints import CheckpointStore, require_checkpoints
from memvault.stores.closing import refuses_when_closed
from memvault.stores.items import ItemStore, require_items
from memvault.stores.thread_queries import check_thread_query
from memvault.telemetry import traced
from memvault.transfer import importer, jsonl, seeds
from memvault.transfer.copier import messages_of
from memvault.transfer.reserved import KEY_OWNER, KEYS_RESOURCE, MAX_KEYS, RESERVED_RESOURCES
from memvault.transfer.stats import resource_stats
from memvault.vectors.base import VectorIndex

if TYPE_CHECKING:
    from memvault.recall.semantic import SemanticIndex


@refuses_when_closed("flush", "stop_sweeping")
class Memory:
    """Conversations, working memory and search for many resources, over one store.

    After :meth:`close`, every call (but ``close``, ``flush`` and ``stop_sweeping``, which have
    nothing left to do) raises :class:`~memvault.errors.StoreClosedError` at once
    (:mod:`memvault.stores.closing`).

    With an ``embedder`` (any :func:`memvault.embeddings.resolve_embedder` spec, e.g.
    ``"sentence-transformers/all-MiniLM-L6-v2"``), saved messages are also embedded after their
    commit and recall searches by meaning too; ``vector_index`` defaults to an exact index.
    Without one, recall is lexical only."""

    def __init__(
        self,
        store: Store,
        options: MemoryOptions | None = None,
        *,
        embedder: Any = None,
        vector_index: VectorIndex | None = None,
    ) -> None:
        self.store = store
        self.options = options or MemoryOptions()
        self.closed = False
        self.semantic: SemanticIndex | None = None
        self._started = embedder is None
        self._sweeper: Sweeper | None = None
        if embedder is not None:
            from memvault.embeddings import resolve_embedder

            resolved = resolve_embedder(embedder)
            self.semantic = _semantic_index(require_embeddings(store), resolved, vector_index,
                                            self.options.recall.author_key,
                                            self.options.embed_context, self.options.embed_sentences)

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        *,
        options: MemoryOptions | None = None,
        embedder: Any = None,
        vector_index: VectorIndex | None = None,
    ) -> Memory:
        """Open the store a URL names: ``sqlite:///path.db`` (missing folders are created),
        ``memory://``; with no URL, ``$MEMVAULT_DB`` or the file in the user's data folder.
        With an ``embedder``, the stored vectors are loaded (and checked against its model)."""
        memory = cls(await open_store(url), options, embedder=embedder, vector_index=vector_index)
        try:
            await memory._start()
        except BaseException:
            await memory.store.close()
            raise
        memory.start_sweeping()
        return memory

    async def _start(self) -> SemanticIndex | None:
        if not self._started and self.semantic is not None:
            self._started = True
            await self.semantic.start()
        return self.semantic

    async def close(self) -> None:
        """Stop the background sweep, wait for embeddings, close the store (the sync twin also
        stops its background loop); closing twice is harmless."""
        try:
            await self.stop_sweeping()
            await self.flush()
        finally:
            self.closed = True
            await self.store.close()

    async def flush(self) -> None:
        """Wait until the messages saved so far are embedded (no-op without an embedder). The
        runtime's background work (titles, summaries) has its own owner:
        :class:`memvault.runtime.BackgroundTasks`."""
        if self.semantic is not None:
            await self.semantic.flush()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # threads

    @traced("create_thread")
    async def create_thread(
        self,
        *,
        resource_id: str,
        thread_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        exist_ok: bool = False,
    ) -> Thread:
        """Create a thread (a new random id when none is given). An id the resource already
        uses raises :class:`ThreadExistsError`, unless ``exist_ok``."""
        fields: dict[str, Any] = {"resource_id": resource_id, "title": title,
                                  "metadata": {} if metadata is None else metadata}
        if thread_id is not None:
            fields["id"] = _id(thread_id, "thread_id")
        return await self.store.create_thread(Thread(**fields), exist_ok=exist_ok)

    @traced("get_thread")
    async def get_thread(self, *, thread_id: str, resource_id: str) -> Thread | None:
        """The thread, or ``None`` if this resource has no such thread."""
        return await self.store.get_thread(_id(resource_id, "resource_id"), _id(thread_id, "thread_id"))

    @traced("list_threads")
    async def list_threads(
        self,
        *,
        resource_id: str,
        limit: int = 20,
        cursor: str | None = None,
        title_contains: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        order_by: ThreadOrder = "updated_at",
        direction: Direction = "desc",
        offset: int | None = None,
    ) -> ThreadPage:
        """The resource's threads, by default most recently active first; follow ``next_cursor``
        to page (it is set when more threads follow).

        - ``title_contains``: only threads whose title holds this text, case-insensitively
          (``%``, ``_`` and ``\\`` are plain characters);
        - ``metadata``: only threads whose metadata has each of these top-level keys with an
          equal JSON value (``{"project": "x"}``);
        - ``order_by``: ``"updated_at"`` (the default) or ``"created_at"``; ``direction``:
          ``"desc"`` (the default) or ``"asc"``; ties are broken by thread id;
        - ``offset``: skip that many threads (instead of a ``cursor``: giving both is a
          :class:`ValidationError`). A cursor is only valid for the order it was made in.
        """
        cursor = arguments.optional_str(cursor, "cursor")
        query = check_thread_query(ThreadQuery(title_contains=title_contains, metadata=metadata,
                                               order_by=order_by, direction=direction, offset=offset), cursor)
        # the default query is not passed on: a store written before thread queries still lists
        chosen = {} if query == ALL_THREADS else {"query": query}
        return await self.store.list_threads(_id(resource_id, "resource_id"), limit=limit, cursor=cursor,
                                             **chosen)

    @traced("count_threads")
    async def count_threads(
        self, *, resource_id: str, title_contains: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """How many threads the resource has (only those the filters select, as in
        :meth:`list_threads`)."""
        query = check_thread_query(ThreadQuery(title_contains=title_contains, metadata=metadata))
        return await self.store.count_threads(_id(resource_id, "resource_id"), query)

    @traced("update_thread")
    async def update_thread(
        self, *, thread_id: str, resource_id: str, title: Any = UNSET, metadata: Any = UNSET
    ) -> Thread:
        """Change the title (``None`` clears it) and/or replace the metadata."""
        if not isinstance(title, _Unset | str | None):
            raise ValidationError(f"title must be a string or None, got {type(title).__name__}")
        if not isinstance(metadata, _Unset) and not isinstance(metadata, dict):
            raise ValidationError("metadata must be a JSON object (a dict)")
        return await self.store.update_thread(
            _id(resource_id, "resource_id"), _id(thread_id, "thread_id"), title=title, metadata=metadata
        )

    @traced("delete_thread")
    async def delete_thread(self, *, thread_id: str, resource_id: str) -> bool:
        """Delete a thread with its messages and derived data; ``False`` if there was none."""
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        deleted = await self.store.delete_thread(resource_id, thread_id)
        if (semantic := await self._start()) is not None:
            await semantic.forget_thread(resource_id, thread_id)
        return deleted

    # messages

    @traced("save_messages")
    async def save_messages(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        thread_id: str,
        resource_id: str,
    ) -> list[Message]:
        """Save messages to a thread (created when new) and return once they are durable.

        Saving a message id the thread already has updates that message: never a duplicate.
        Returns the saved messages with their ``seq``. Bad input writes nothing."""
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        if isinstance(messages, str | bytes | Mapping | Message) or not isinstance(messages, Iterable):
            raise ValidationError(f"messages must be a list of messages, got {type(messages).__name__}")
        checked = [self._check_message(m, number) for number, m in enumerate(messages)]
        if not checked:
            return []
        if (semantic := await self._start()) is None:
            return await self.store.save_messages(resource_id, thread_id, checked)
        with semantic.saving(resource_id, thread_id, checked):  # the catch-up leaves them to the queue
            saved = await self.store.save_messages(resource_id, thread_id, checked)
            semantic.enqueue(saved)
        return saved

    def _check_message(self, message: Message | Mapping[str, Any], number: int = 0) -> Message:
        """``message`` as a Message within the size limit; an error names it (``messages[number]``)."""
        if not isinstance(message, Message):
            if not isinstance(message, Mapping):
                raise ValidationError(f"messages[{number}]: a message must be a Message or a dict, got "
                                      f"{type(message).__name__}")
            try:
                message = Message.parse(dict(message))
            except ValidationError as error:
                raise ValidationError(f"messages[{number}]: {error}") from None
        if message.unreadable is not None:
            raise ValidationError(
                f"messages[{number}]: message {message.id!r} is a placeholder for a stored row that could "
                f"not be read ({message.unreadable.reason}); it cannot be saved: delete it by id, or "
                "save a new message with the same id to replace it"
            )
        if _surely_within(message, self.options.max_message_bytes):
            return message
        size = len(message.parts_json().encode()) + len(json.dumps(message.metadata).encode())
        if size > self.options.max_message_bytes:
            raise MessageTooLargeError(
                f"message {message.id!r} is {size:,} bytes, over the limit of "
                f"{self.options.max_message_bytes:,} (MemoryOptions.max_message_bytes): store large "
                "content elsewhere and save a reference to it (a file part), or raise the limit"
            )
        return message

    @traced("get_messages")
    async def get_messages(
        self,
        *,
        thread_id: str,
        resource_id: str,
        last_n: int | None = None,
        first_n: int | None = None,
        before: str | None = None,
        after: str | None = None,
        ids: Sequence[str] | None = None,
        message_range: int = 0,
    ) -> list[Message]:
        """Messages of a thread in order. ``ids`` (with ``message_range`` neighbours each side)
        or a ``before``/``after`` message-id cursor; then the newest ``last_n`` or oldest
        ``first_n``. A missing thread has no messages."""
        if ids is not None:
            ids = [_id(i, "message id") for i in arguments.id_list(ids, "ids")]
        query = MessageQuery(
            ids=ids, message_range=message_range, last_n=last_n, first_n=first_n,
            before=None if before is None else _id(before, "before"),
            after=None if after is None else _id(after, "after"),
        )
        return await self.store.get_messages(
            _id(resource_id, "resource_id"), _id(thread_id, "thread_id"), query
        )

    @traced("get_history")
    async def get_history(
        self,
        *,
        thread_id: str,
        resource_id: str,
        last_n: int | None = None,
        max_tokens: int | None = None,
    ) -> list[Message]:
        """The history window (defaults from ``options.history``): the newest messages within
        the count and token budget, never splitting a tool call from its result."""
        last_n = self.options.history.last_n if last_n is None else last_n
        max_tokens = self.options.history.max_tokens if max_tokens is None else max_tokens
        tail = await self.get_messages(thread_id=thread_id, resource_id=resource_id, last_n=last_n)
        return history_window.window(
            tail, last_n=last_n, max_tokens=max_tokens, count=self.options.token_counter
        )

    @traced("delete_messages")
    async def delete_messages(
        self, ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> int:
        """Delete messages by id with their derived data; returns how many existed. With
        ``MemoryOptions.embed_context``, the messages after a deleted one whose vectors had its
        text as context are embedded again, in the background."""
        checked = [_id(i, "message id") for i in arguments.id_list(ids, "ids")]
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        semantic = await self._start()
        followers: list[Message] = []
        if semantic is not None and semantic.embed_context and checked:
            followers = await semantic.followers(resource_id, thread_id, checked)
        deleted = await self.store.delete_messages(resource_id, thread_id, checked)
        if semantic is not None:
            await semantic.forget_messages(resource_id, thread_id, checked)
            if followers:
                semantic.enqueue(followers, followers=False)
        return deleted

    @traced("clear_thread")
    async def clear_thread(self, *, thread_id: str, resource_id: str) -> int:
        """Delete every message of a thread; the thread itself stays."""
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        cleared = await self.store.clear_thread(resource_id, thread_id)
        if (semantic := await self._start()) is not None:
            await semantic.forget_thread(resource_id, thread_id)
        return cleared

    @traced("delete_resource")
    async def delete_resource(self, *, resource_id: str) -> Deleted:
        """Delete everything of a resource in one transaction: threads, messages, derived data,
        working memory, states, graph checkpoints and long-term items (counted in ``extra``:
        ``checkpoints``, ``items``); and, first, the API keys bound to it (the key records of
        :data:`~memvault.transfer.reserved.KEYS_RESOURCE` naming it, counted in
        ``extra["api_keys"]``), so its keys stop working. Erasure is real: once this returns the
        deleted text cannot be read back from the store's files, except on a store that needs
        :meth:`purge` for that (PostgreSQL: see docs/security.md)."""
        resource_id = _id(resource_id, "resource_id")
        revoked = await self._revoke_keys(resource_id)
        deleted = await self.store.delete_resource(resource_id)
        if revoked:
            deleted.extra["api_keys"] = revoked
        if (semantic := await self._start()) is not None:
            await semantic.forget_resource(resource_id)
        return deleted

    async def _revoke_keys(self, resource_id: str) -> int:
        """Delete the API key records bound to ``resource_id``; returns how many."""
        if resource_id in RESERVED_RESOURCES or not supports_states(self.store):
            return 0
        records = await self.store.list_states(KEYS_RESOURCE, limit=MAX_KEYS)
        revoked = 0
        for record in records:
            if isinstance(record.value, dict) and record.value.get(KEY_OWNER) == resource_id:
                revoked += await self.store.delete_state(KEYS_RESOURCE, record.key)
        return revoked

    @traced("purge")
    async def purge(self) -> dict[str, Any]:
        """Make deleted data unrecoverable from the store's files: the step a right-to-erasure
        request needs after its deletions on PostgreSQL (``VACUUM FULL`` of the tables holding
        users' data; dead rows stay in the table files until then). On SQLite every deletion
        already overwrites the text, merges the full-text index and truncates the WAL; purge
        adds a VACUUM and retries the WAL truncation (needed if another process was reading
        at the time). Returns what was done. A store without the capability raises
        :class:`ConfigurationError`."""
        if not supports_purge(self.store):
            raise ConfigurationError(f"{type(self.store).__name__} has no purge step")
        return await self.store.purge()

    # retention (memvault.retention)

    @traced("set_retention")
    async def set_retention(self, max_age: timedelta | None, *, resource_id: str | None = None) -> None:
        """Keep messages for ``max_age`` (at least a second, at most 100 years): of the whole
        store, or of one resource (replacing the store's policy for it). ``None`` removes the
        policy (a resource then follows the store's). From now on every read leaves out messages
        older than that, and the sweep erases them (:mod:`memvault.retention`). The policy is
        kept in the store: every process sees it; deleting the resource removes its own."""
        max_age = check_max_age(max_age)
        await require_retention(self.store).set_retention(self._retention_key(resource_id), max_age)

    async def get_retention(self, *, resource_id: str | None = None) -> timedelta | None:
        """The policy in force for ``resource_id`` (its own, else the store's), or the store's
        with no resource; ``None`` when messages are kept until deleted."""
        policies = await require_retention(self.store).retention_policies()
        if resource_id is not None and (own := policies.get(self._retention_key(resource_id))):
            return own
        return policies.get(STORE_DEFAULT)

    async def retention_policies(self) -> dict[str | None, timedelta]:
        """Every policy set: ``None`` for the store's, then each resource's by id."""
        policies = await require_retention(self.store).retention_policies()
        return {(None if key == STORE_DEFAULT else key): age for key, age in policies.items()}

    @traced("sweep")
    async def sweep(self, *, resource_id: str | None = None) -> dict[str, int]:
        """Erase the expired messages now (of every resource, or of one), with their derived data,
        and the threads they leave empty and idle beyond the retention period; returns how many
        ``messages``, ``threads`` and ``resources`` (:func:`memvault.retention.sweep`)."""
        rid = None if resource_id is None else _id(resource_id, "resource_id")
        swept = await sweep_expired(require_retention(self.store), await self._start(), resource_id=rid)
        return swept.as_dict()

    def _retention_key(self, resource_id: str | None) -> str:
        if resource_id is None:
            return STORE_DEFAULT
        resource_id = _id(resource_id, "resource_id")
        if resource_id in RESERVED_RESOURCES:
            raise ValidationError(f"{resource_id!r} is reserved: it holds memvault's own records")
        return resource_id

    def start_sweeping(self) -> None:
        """Sweep in the background every ``options.sweep_interval`` seconds (the first a minute
        after this call, or sooner for a shorter interval) until :meth:`close` or
        :meth:`stop_sweeping`, if the store keeps retention policies. :meth:`open` calls it;
        a Memory built around a store you opened yourself sweeps only when this is called, or
        when :meth:`sweep` is. Needs a running event loop; calling it again does nothing."""
        interval = self.options.sweep_interval
        if self._sweeper is None and interval is not None and supports_retention(self.store):
            self._sweeper = Sweeper(self.sweep, interval)
            self._sweeper.start()

    async def stop_sweeping(self) -> None:
        """Stop the background sweep (a sweep in progress is cancelled; it erases nothing half)."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            await sweeper.stop()

    @traced("search_messages")
    async def search_messages(
        self, *, resource_id: str, query: str, thread_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Messages sharing words with ``query`` across the resource (or one thread), best first.
        Any string is safe; a query with no words finds nothing."""
        if not isinstance(query, str):
            raise ValidationError(f"query must be a string, got {type(query).__name__}")
        thread = _id(thread_id, "thread_id") if thread_id is not None else None
        return await require_full_text(self.store).search_messages(
            _id(resource_id, "resource_id"), searchable_query(query), thread_id=thread, limit=limit
        )

    # recall

    def recall_reader(self, resource_id: str) -> RecallReader:
        """A :class:`~memvault.recall.RecallReader` for ``resource_id`` over this memory's store,
        with its history window and working-memory scope: what :meth:`recall` reads through.
        Give one to several recalls of a turn so that they share what it read."""
        history = self.options.history
        return RecallReader(self.store, resource_id, last_n=history.last_n, max_tokens=history.max_tokens,
                            count=self.options.token_counter, note_scope=self.options.working_memory.scope)

    @traced("recall")
    async def recall(
        self,
        *,
        resource_id: str,
        query: str,
        thread_id: str | None = None,
        options: RecallOptions | None = None,
        reader: RecallReader | None = None,
    ) -> RecallResult:
        """The older messages that matter for ``query``, merged with the recent window of
        ``thread_id`` (see :class:`memvault.recall.RecallOptions` for top_k, scope,
        message_range, thresholds and merge; ``options`` defaults to ``MemoryOptions.recall``).
        By words, and by meaning when an embedder is configured: every candidate is then scored
        by meaning too (:mod:`memvault.recall.vectors`). An embedder or index failure degrades
        to words with a logged warning. ``reader`` (default: :meth:`recall_reader`) is for a
        caller that already read the window or the note."""
        resource_id = _id(resource_id, "resource_id")
        options = arguments.instance(options, RecallOptions, "options")
        reader = arguments.instance(reader, RecallReader, "reader")
        if reader is None:
            reader = self.recall_reader(resource_id)
        elif reader.resource_id != resource_id:
            raise ValidationError("the reader reads for another resource")
        semantic = await self._start()
        return await recall_messages(
            reader, thread_id=thread_id, query=query, options=options or self.options.recall,
            vector_search=semantic.search if semantic is not None else None,
            vector_scorer=semantic,
        )

    @traced("reindex")
    async def reindex(self) -> dict[str, int]:
        """Rebuild the derived data from the messages: the full-text index, and the vectors
        (with the current embedder, e.g. after changing models). Returns counts."""
        counts = {"search_rows": await require_full_text(self.store).rebuild_search_index()}
        if (semantic := await self._start()) is not None:
            counts["vectors"] = await semantic.reindex()
        return counts

    # administration: what the faces (CLI, HTTP API, Studio) list, count, move and clear

    @traced("resource_ids")
    async def resource_ids(self, *, include_reserved: bool = False) -> list[str]:
        """Every resource that has a thread, a working memory or a state, in id order; memvault's
        own records (:data:`memvault.transfer.reserved.RESERVED_RESOURCES`, e.g. API keys) only
        with ``include_reserved``. Needs a store that can list (:class:`ExportStore`)."""
        found = await require_export(self.store).resource_ids()
        return found if include_reserved else [r for r in found if r not in RESERVED_RESOURCES]

    @traced("stats")
    async def stats(self, *, resource_id: str) -> dict[str, int]:
        """How many threads, messages, summaries, working memories (both scopes) and states the
        resource has (:data:`memvault.transfer.stats.STAT_KINDS`; zeros for an unknown
        resource), counted by the store without reading the records."""
        return await resource_stats(self.store, _id(resource_id, "resource_id"))

    @traced("count_messages")
    async def count_messages(self, *, thread_id: str, resource_id: str) -> int:
        """How many messages the thread has (0 for a missing thread), read page by page."""
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        return sum([len(page) async for page in messages_of(self.store, resource_id, thread_id)])

    @traced("export_records")
    async def export_records(
        self, sink: IO[str], *, resource_id: str | None = None, progress: jsonl.Progress | None = None,
        include_keys: bool = False,
    ) -> dict[str, int]:
        """Write the records of ``resource_id`` (default: every resource) to ``sink`` as JSON
        Lines (:mod:`memvault.transfer.jsonl`); returns how many of each kind. ``progress`` is
        called with (threads done, threads in all). The API key records (not users' data) are
        left out of an export of every resource unless ``include_keys``."""
        only = None if resource_id is None else _id(resource_id, "resource_id")
        sink = arguments.writable(sink, "sink")
        progress = arguments.callback(progress, "progress")
        include_keys = arguments.flag(include_keys, "include_keys")
        return await jsonl.export_records(require_complete(self.store), sink, only=only, progress=progress,
                                          include_keys=include_keys)

    @traced("import_records")
    async def import_records(
        self, records: Sequence[dict[str, Any]], *, replace: bool = False,
        progress: jsonl.Progress | None = None,
    ) -> dict[str, int]:
        """Write records of :meth:`export_records` (:func:`memvault.transfer.jsonl.parse_records`)
        back, each exactly as it was; returns how many of each kind. Every record is checked
        first: a bad one is a :class:`ValidationError` and nothing is written. A thread this
        store already has is a :class:`ThreadExistsError` (nothing written) unless ``replace``,
        which deletes it first; working memories and states overwrite the store's. A state whose
        thread is neither in the records nor in the store is a :class:`ThreadNotFoundError`,
        also before anything is written."""
        store = require_complete(self.store)
        records = arguments.records(records)  # type: ignore[assignment]
        replace = arguments.flag(replace, "replace")
        progress = arguments.callback(progress, "progress")
        jsonl.check_records(records)
        existing = [t for t in jsonl.threads_of_records(records)
                    if await store.get_thread(t.resource_id, t.id) is not None]
        if existing and not replace:
            names = ", ".join(f"{t.resource_id}/{t.id}" for t in existing[:5])
            raise ThreadExistsError(existing[0].id, f"the store already has {len(existing):,} of these "
                                    f"threads ({names}); nothing was imported (replace them to import)")
        for resource_id, thread_id in jsonl.outside_threads(records):
            if await store.get_thread(resource_id, thread_id) is None:  # a state's thread: before any write
                raise ThreadNotFoundError(thread_id)
        for thread in existing:
            await self.delete_thread(thread_id=thread.id, resource_id=thread.resource_id)
        return await jsonl.import_records(store, records, progress=progress)

    @traced("import_from")
    async def import_from(self, source: str, *, progress: seeds.Progress | None = None) -> seeds.ImportReport:
        """Import another system's memory database: ``source`` is ``"voltagent:PATH"`` or
        ``"mastra:PATH"`` (``PATH`` may be a ``file:`` URL) naming a local LibSQL/SQLite file
        (:mod:`memvault.transfer.voltagent`, :mod:`memvault.transfer.mastra` give the mapping).
        The whole source is read and checked before the first write. Idempotent: records keep
        the source's ids, so importing again updates them in place and changes nothing (messages
        added here since are kept). Returns the counts carried and what was not carried, with
        reasons. ``progress`` is called with (records done, records in all). Embeddings are not
        built: run :meth:`reindex` with an embedder."""
        store = require_complete(self.store)
        progress = arguments.callback(progress, "progress")
        return await importer.import_source(store, source, progress=progress)

    @traced("clear_embeddings")
    async def clear_embeddings(self) -> int:
        """Delete every stored vector and the recorded embedding model (before embedding again
        with another model: open the memory with the new embedder, then :meth:`reindex`).
        Returns how many vectors were deleted. Needs a store that keeps vectors."""
        return await require_embeddings(self.store).clear_embeddings()

    @traced("read_turn")
    async def read_turn(self, *, thread_id: str, resource_id: str, last_n: int) -> TurnRead:
        """What a turn reads before the model runs: the thread's newest ``last_n`` messages, its
        summary and the working-memory note (of ``options.working_memory.scope``), in one store
        call when the store has :class:`~memvault.stores.capabilities.BatchReads` (else three)."""
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        arguments.count(last_n, "last_n")
        key = self._working_memory_key(thread_id, None)
        if supports_batch_reads(self.store):
            return await self.store.read_turn(resource_id, thread_id, last_n=last_n, note_key=key)
        messages = await self.store.get_messages(resource_id, thread_id, MessageQuery(last_n=last_n))
        summary = None
        if supports_summaries(self.store):
            summary = await self.store.get_summary(resource_id, thread_id)
        return TurnRead(messages, summary, await self.store.get_working_memory(resource_id, key))

    # summaries

    @traced("get_summary")
    async def get_summary(self, *, thread_id: str, resource_id: str) -> Summary | None:
        """The thread's running summary (``None`` when there is none): see
        :class:`memvault.model.Summary` for what it covers and what deletes it."""
        summaries = require_summaries(self.store)
        return await summaries.get_summary(_id(resource_id, "resource_id"), _id(thread_id, "thread_id"))

    @traced("save_summary")
    async def save_summary(
        self,
        text: str,
        *,
        thread_id: str,
        resource_id: str,
        through_message_id: str,
        expected_version: int | None,
    ) -> Summary | None:
        """Store ``text`` as the summary of the thread up to and including the message
        ``through_message_id``, if the current summary's version is ``expected_version``
        (``None``: there is none yet); else nothing is written and ``None`` is returned (another
        summariser won, or the message is gone). Raises :class:`NotFoundError` for an unknown
        message and :class:`ValidationError` for bad text."""
        resource_id, thread_id = _id(resource_id, "resource_id"), _id(thread_id, "thread_id")
        _id(through_message_id, "through_message_id")
        Summary(resource_id=resource_id, thread_id=thread_id, text=text, through_seq=1,
                through_message_id=through_message_id)  # checks the text before any read
        found = await self.store.get_messages(resource_id, thread_id, MessageQuery(ids=[through_message_id]))
        if not found or found[0].seq is None:
            raise NotFoundError(f"message {through_message_id!r} is not in thread {thread_id!r}")
        summary = Summary(resource_id=resource_id, thread_id=thread_id, text=text,
                          through_seq=found[0].seq, through_message_id=through_message_id)
        return await require_summaries(self.store).save_summary(summary, expected_version=expected_version)

    @traced("delete_summary")
    async def delete_summary(self, *, thread_id: str, resource_id: str) -> bool:
        """Delete the thread's summary (the next one is made afresh); ``False`` when none."""
        summaries = require_summaries(self.store)
        return await summaries.delete_summary(_id(resource_id, "resource_id"), _id(thread_id, "thread_id"))

    # working memory

    @traced("get_working_memory")
    async def get_working_memory(
        self, *, resource_id: str, thread_id: str | None = None, scope: wm.Scope | None = None
    ) -> str | None:
        """The working memory's content (``None`` when never written). ``scope`` picks the
        resource's note or the thread's (default: ``options.working_memory.scope``);
        ``thread_id`` is needed for the thread's."""
        key = self._working_memory_key(thread_id, scope)
        return await self.store.get_working_memory(_id(resource_id, "resource_id"), key)

    def _working_memory_key(self, thread_id: str | None, scope: wm.Scope | None) -> str:
        if scope is None:
            scope = self.options.working_memory.scope
        elif scope not in ("resource", "thread"):
            raise ValidationError(f"scope must be 'resource' or 'thread', got {shown(scope)}")
        return wm.key(scope, None if thread_id is None else _id(thread_id, "thread_id"))

    @traced("update_working_memory")
    async def update_working_memory(
        self,
        memory: Any,
        *,
        resource_id: str,
        thread_id: str | None = None,
        mode: wm.Mode = "append",
        scope: wm.Scope | None = None,
    ) -> str:
        """Merge (``append``, the default) or ``replace`` the working memory, atomically.
        JSON notes take a dict (or its JSON text) and are checked against the schema. ``scope``
        as in :meth:`get_working_memory`."""
        options = self.options.working_memory
        wm.parse_update(options, memory)  # fail before touching the store
        key = self._working_memory_key(thread_id, scope)

        def update(current: str | None) -> str:
            return wm.apply(options, current, memory, mode)

        result = await self.store.update_working_memory(_id(resource_id, "resource_id"), key, update)
        assert result is not None
        return result

    @traced("delete_working_memory")
    async def delete_working_memory(
        self, *, resource_id: str, thread_id: str | None = None, scope: wm.Scope | None = None
    ) -> bool:
        """Delete the working memory (the resource's, or a thread's: ``scope`` and ``thread_id``
        as in :meth:`get_working_memory`); ``False`` when there was none. The next read gives
        ``None`` and the next turn starts from the template again."""
        key = self._working_memory_key(thread_id, scope)
        existed = False

        def delete(current: str | None) -> None:
            nonlocal existed
            existed = current is not None
            return None

        await self.store.update_working_memory(_id(resource_id, "resource_id"), key, delete)
        return existed

    @traced("working_memory_instructions")
    async def working_memory_instructions(
        self, *, resource_id: str, thread_id: str | None = None, scope: wm.Scope | None = None
    ) -> str:
        """System-prompt text with the current working memory and how to update it."""
        content = await self.get_working_memory(resource_id=resource_id, thread_id=thread_id, scope=scope)
        return wm.instructions(self.options.working_memory, content)

    def working_memory_tool(self) -> dict[str, Any]:
        """The ``update_working_memory`` tool definition, OpenAI function format."""
        return wm.tool_definition(self.options.working_memory)

    # graph checkpoints and long-term items (memvault.integrations.langgraph)

    def checkpoint_store(self) -> CheckpointStore:
        """The store's graph checkpoints (:mod:`memvault.stores.checkpoints`), what
        :class:`~memvault.integrations.langgraph.MemvaultSaver` keeps; every call names its
        resource. :class:`ConfigurationError` for a store without them."""
        return require_checkpoints(self.store)

    def item_store(self) -> ItemStore:
        """The store's long-term items (:mod:`memvault.stores.items`), what
        :class:`~memvault.integrations.langgraph.MemvaultStore` keeps; every call names its
        resource. :class:`ConfigurationError` for a store without them."""
        return require_items(self.store)

    # agent and workflow states

    @traced("get_state")
    async def get_state(self, *, resource_id: str, key: str) -> State | None:
        """A state saved under ``key`` (e.g. a suspended run's id), or ``None``."""
        return await require_states(self.store).get_state(_id(resource_id, "resource_id"), _id(key, "key"))

    @traced("set_state")
    async def set_state(
        self,
        value: Any,
        *,
        resource_id: str,
        key: str,
        status: str | None = None,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> State:
        """Write a whole state unconditionally (value, status, workflow id, thread); its
        version grows by one. ``thread_id`` scopes it to one of the resource's threads (deleting
        the thread deletes it): a thread the resource does not have raises
        :class:`ThreadNotFoundError`, with nothing written."""
        state = await self._write_state(value, resource_id, key, status, UNSET, workflow_id, thread_id)
        assert state is not None
        return state

    @traced("compare_and_set_state")
    async def compare_and_set_state(
        self,
        value: Any,
        *,
        resource_id: str,
        key: str,
        expected_version: int | None,
        status: str | None = None,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> State | None:
        """Write only if the state is at ``expected_version`` (``None``: does not exist yet).
        Returns the new state, or ``None`` when another writer got there first."""
        expected = None if expected_version is None else arguments.count(expected_version, "expected_version")
        return await self._write_state(value, resource_id, key, status, expected, workflow_id, thread_id)

    async def _write_state(self, value: Any, resource_id: str, key: str, status: Any,
                           expected_version: int | _Unset | None, workflow_id: Any, thread_id: Any
                           ) -> State | None:
        return await require_states(self.store).set_state(
            _id(resource_id, "resource_id"), _id(key, "key"), _json(value),
            status=arguments.optional_str(status, "status"), expected_version=expected_version,
            workflow_id=_optional_id(workflow_id, "workflow_id"),
            thread_id=_optional_id(thread_id, "thread_id"))

    @traced("update_state")
    async def update_state(
        self,
        *,
        resource_id: str,
        key: str,
        merge: Any = UNSET,
        status: str | _Unset | None = UNSET,
        expected_version: int | None = None,
    ) -> State | None:
        """Change part of an existing state, atomically: ``merge`` is a JSON merge patch
        (RFC 7386) applied to its value (``{"step": 4, "tmp": None}`` sets ``step`` and removes
        ``tmp``; a patch that is not an object replaces the value); ``status`` sets the status
        (``None`` clears it); what is not given is kept. The version grows by one. With
        ``expected_version``, only if the state is at that version: returns ``None`` when
        another writer got there first. No such state raises :class:`NotFoundError`."""
        if not isinstance(status, _Unset):
            status = arguments.optional_str(status, "status")
        return await require_states(self.store).update_state(
            _id(resource_id, "resource_id"), _id(key, "key"),
            merge=merge if isinstance(merge, _Unset) else _json(merge, "merge"), status=status,
            expected_version=None if expected_version is None else arguments.count(
                expected_version, "expected_version"),
        )

    @traced("list_states")
    async def list_states(
        self,
        *,
        resource_id: str,
        status: str | None = None,
        limit: int = 100,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> list[State]:
        """The resource's states, optionally only those with ``status``, ``workflow_id`` and
        ``thread_id`` (each when given), most recently updated first (a missing thread has
        none)."""
        states = require_states(self.store)
        return await states.list_states(
            _id(resource_id, "resource_id"), status=arguments.optional_str(status, "status"), limit=limit,
            workflow_id=_optional_id(workflow_id, "workflow_id"),
            thread_id=_optional_id(thread_id, "thread_id"))

    @traced("list_suspended")
    async def list_suspended(
        self, *, resource_id: str, workflow_id: str | None = None, thread_id: str | None = None,
        limit: int = 100,
    ) -> list[State]:
        """The resource's suspended runs: its states whose status is ``"suspended"`` (of one
        workflow, of one thread, when given), most recently updated first."""
        return await self.list_states(resource_id=resource_id, status=SUSPENDED, limit=limit,
                                      workflow_id=workflow_id, thread_id=thread_id)

    @traced("delete_state")
    async def delete_state(self, *, resource_id: str, key: str) -> bool:
        return await require_states(self.store).delete_state(_id(resource_id, "resource_id"), _id(key, "key"))


def _optional_id(value: Any, name: str) -> str | None:
    return None if value is None else _id(value, name)


SUSPENDED = "suspended"
"""The status of a suspended run (:meth:`Memory.list_suspended`)."""


def _json(value: Any, name: str = "state value") -> Any:
    try:
        return check_json(value)
    except ValueError as exc:
        raise ValidationError(f"{name}: {exc}") from None



def _semantic_index(
    store: Any, embedder: Any, vector_index: VectorIndex | None, author_key: str,
    embed_context: int = 0, embed_sentences: bool = True,
) -> SemanticIndex:
    """The semantic index (loaded only with an embedder: it needs numpy, which the embedder
    extras install). Messages are embedded at save time with their author's name under
    ``author_key`` (``MemoryOptions.recall.author_key``), the key lexical recall reads too,
    ``embed_context`` earlier messages of their thread (``MemoryOptions.embed_context``), and
    their sentences (``MemoryOptions.embed_sentences``)."""
    semantic = import_optional("memvault.recall.semantic", "recall by meaning (an embedder)", "embeddings",
                               needs=("numpy",))
    index: SemanticIndex = semantic.SemanticIndex(store, embedder, vector_index, author_key=author_key,
                                                  embed_context=embed_context,
                                                  embed_sentences=embed_sentences)
    return index


_TEXT_PART_JSON = len('{"type":"text","text":""},')
"""The JSON of a text part around its text (and the comma between parts)."""


def _surely_within(message: Message, limit: int) -> bool:
    """Whether a message of text parts and no metadata serializes to at most ``limit`` bytes,
    known without serializing it: a character takes at most 6 bytes of JSON (``\\u001f``; a
    code point beyond ASCII at most 4 in UTF-8). ``False`` means: compute the size."""
    if message.metadata:
        return False
    bound = 2 + len("{}")
    for part in message.parts:
        if not isinstance(part, TextPart):
            return False
        bound += _TEXT_PART_JSON + 6 * len(part.text)
    return bound <= limit
