"""The SQLite store: one file, the embedded default.

- WAL journal, so readers never wait for the writer; every write is one ``BEGIN IMMEDIATE``
  transaction, so several processes writing one file serialise cleanly instead of failing.
  A busy database is waited for (``busy_timeout``, default 60 s) and a transaction that still
  meets a lock is retried whole; "database is locked" never reaches the caller before then.
- ``durability="normal"`` (the default): a committed write survives the process being killed at
  any point; a power cut may lose the last few commits but never corrupts the file.
  ``durability="full"`` also survives a power cut (an fsync per commit, several times slower).
  In a URL: ``sqlite:///path.db?durability=full``.
- Full-text indexing is off the write path: new messages are indexed in batches, and always
  before a search runs, so search sees every saved message (:mod:`~.schema`).
- Retention policies (:mod:`~.retention`): every read leaves expired messages out; the sweep
  erases them like any deletion.
- Encryption at rest (``encryption_key``, or ``?key_env=VARIABLE`` in a URL): the file and its
  write-ahead log are encrypted by SQLCipher (``pip install 'memvault[encryption]'``), and
  opening it without the key, or with a wrong one, raises
  :class:`~memvault.errors.EncryptionKeyError` (:mod:`~.cipher`).
- Erasure is real: deleted text is overwritten (``secure_delete``), dropped from the full-text
  index and checkpointed out of the WAL before a deletion returns (:mod:`~.erase`).
- Calls run on one worker thread per store, so the event loop never blocks on the disk, and
  concurrent writes share commits (group commit, :mod:`memvault.stores.sqlite.worker`). The
  exceptions are hot, small reads: a history window (at most ``SMALL_READ`` newest or oldest
  messages) and a search's check for messages waiting to be indexed run on the caller's
  thread, since a WAL read never waits for writers. Full-text searches run on a connection of
  their own that reads the file through a memory map (``search_map_mb``).

The class is thin: its transaction bodies are plain functions of a connection, one module per
capability (:mod:`~.threads`, :mod:`~.messages`, :mod:`~.records`, :mod:`~.search`,
:mod:`~.summaries`, :mod:`~.vectors`, :mod:`~.export`), as in the PostgreSQL store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from memvault.errors import ConfigurationError, StoreError
from memvault.model import Message, State, Summary, Thread, ThreadPage, now
from memvault.rules.words import query_groups
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
from memvault.stores.capabilities import Expired, TurnRead, VectorRow
from memvault.stores.closing import refuses_when_closed
from memvault.stores.common import check_limit, check_pool_search, check_query, saved_messages
from memvault.stores.passages import SearchPool
from memvault.stores.row_reads import RowReads
from memvault.stores.sqlite import batch as _batch
from memvault.stores.sqlite import cipher as _cipher
from memvault.stores.sqlite import export as _export
from memvault.stores.sqlite import graph as _graph
from memvault.stores.sqlite import messages as _messages
from memvault.stores.sqlite import records as _records
from memvault.stores.sqlite import retention as _retention
from memvault.stores.sqlite import search as _search
from memvault.stores.sqlite import summaries as _summaries
from memvault.stores.sqlite import threads as _threads
from memvault.stores.sqlite import vectors as _vectors
from memvault.stores.sqlite.erase import erasing
from memvault.stores.sqlite.failures import index_write_failed, is_memory
from memvault.stores.sqlite.graph_store import SqliteGraph
from memvault.stores.sqlite.schema import (
    any_unindexed,
    check_version,
    index_pending,
    migrate,
    rebuild_search_index,
)
from memvault.stores.sqlite.worker import MMAP_BYTES, SqliteWorker
from memvault.stores.thread_queries import check_thread_query, decode_page_cursor

Durability = Literal["normal", "full"]
log = logging.getLogger("memvault.sqlite")
_T = TypeVar("_T")
_DELETE_THREAD = erasing(_threads.delete_thread)
_DELETE_MESSAGES = erasing(_messages.delete_messages)
_CLEAR_THREAD = erasing(_messages.clear_thread)
_DELETE_RESOURCE = erasing(_graph.delete_resource)
_EXPIRE_MESSAGES = erasing(_retention.expire_messages)
SMALL_READ = 200
"""A read of at most this many newest or oldest messages (a history window) runs on the caller's
thread (:meth:`SqliteWorker.read_small`), as do the one-row reads by key (a thread, a summary, a
working-memory note, a state: an API key's check on every HTTP request)."""
SMALL_WRITE = 256 * 1024
"""A save of at most this many characters of parts, metadata and index text (a turn's messages)
may run on the caller's thread (:meth:`SqliteWorker.write_small`)."""
INDEX_BATCH = 512
"""New messages are full-text indexed in batches of about this many (and before any search)."""


def _search_map_bytes(search_map_mb: int | None) -> int:
    """``search_map_mb`` in bytes (``None``: :data:`~.worker.MMAP_BYTES`); anything but a whole
    number of MiB >= 0 is a :class:`~memvault.errors.ConfigurationError`."""
    if search_map_mb is None:
        return MMAP_BYTES
    if isinstance(search_map_mb, bool) or not isinstance(search_map_mb, int) or search_map_mb < 0:
        raise ConfigurationError(f"search_map_mb must be a whole number of MiB >= 0, got {search_map_mb!r}")
    return min(search_map_mb * 2**20, MMAP_BYTES)


@refuses_when_closed()
class SqliteStore(RowReads, SqliteGraph):
    """A :class:`~memvault.stores.base.Store` in one SQLite file. Use :meth:`open`.

    ``path``: the file (missing folders are created), or ``":memory:"`` for an in-process
    database that lives as long as the store (one connection; other stores and processes cannot
    see it; ``memory://`` is the lighter choice for tests).

    ``read_only=True`` (``?mode=ro`` in a URL) opens an existing database without writing to it:
    no folder or file is created, nothing is migrated (a database at an older schema version is
    refused with :class:`~memvault.errors.StoreOpenError`: open it once read-write to upgrade),
    reads and search work (messages another process saved but did not index yet are searched
    directly), and every write raises :class:`~memvault.errors.ReadOnlyStoreError` with nothing
    written.

    ``encryption_key``: ``None`` (the default) for a plain file; a ``str`` passphrase, or 32
    ``bytes`` of raw key, for a file encrypted at rest with SQLCipher (needs
    ``pip install 'memvault[encryption]'``; see :mod:`memvault.stores.sqlite.cipher`). A new file
    is created encrypted; an existing one must have been created with the same key. An empty key
    or one holding a NUL character is a :class:`~memvault.errors.ConfigurationError`.

    ``search_map_mb`` (``?search_map_mb=`` in a URL; default ``None``, 2 GiB): how many MiB of
    the file the full-text searches read through a memory map (:data:`~.worker.MMAP_BYTES`),
    ``0`` for none. Mapped, a search reads its pages as memory (a turn about 7 % faster at
    100,000 messages, a search about 12 % at 1M); the pages it touched count in the process's
    resident size as shared file pages (the system's file cache), up to the file's size.
    Results are the same either way.

    For example ``await SqliteStore.open("app.db", encryption_key=os.environ["APP_DB_KEY"])``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "normal",
        busy_timeout: float = 60.0,
        encryption_key: str | bytes | None = None,
        read_only: bool = False,
        search_map_mb: int | None = None,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ConfigurationError(f"durability must be 'normal' or 'full', got {durability!r}")
        search_map = _search_map_bytes(search_map_mb)
        key = _cipher.check_key(encryption_key)
        self.path = _check_path(path)
        if read_only and is_memory(self.path):
            raise ConfigurationError("an in-process SQLite database (:memory:) starts empty: it "
                                     "cannot be opened read-only")
        driver = _cipher.STDLIB if key is None else _cipher.sqlcipher()
        self.durability = durability
        self.encrypted = key is not None
        self.read_only = read_only
        self._worker = SqliteWorker(
            self.path, synchronous=durability.upper(), busy_timeout=busy_timeout, driver=driver, key=key,
            read_only=read_only, search_map=search_map,
        )
        self._write = self._worker.write
        self._read = self._worker.read
        self._unindexed = 0  # messages this store saved since it last asked for indexing
        self._word_counts = _search.WordCounts()  # what searches learnt of words' counts

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SqliteStore:
        """Open (creating the file and its missing parent folders) and migrate the schema."""
        store = cls(path, **options)
        try:
            await store._worker.start(check_version if store.read_only else migrate)
        except BaseException:
            await store.close()
            raise
        return store

    @property
    def closed(self) -> bool:
        """Closed (or not opened): every call raises :class:`~memvault.errors.StoreClosedError`
        (:mod:`memvault.stores.closing`)."""
        return self._worker.closed

    async def close(self) -> None:
        """Index what is pending, then close the connection; closing twice is harmless."""
        if self._unindexed and not self._worker.closed:
            try:
                await self.index_pending()
            except StoreError as exc:  # e.g. a full disk: the next search indexes them
                log.warning("full-text indexing at close failed (%s); the next search does it", exc)
        await self._worker.close()

    async def index_pending(self) -> int:
        """Index the messages that full-text search has not indexed yet (from any process);
        returns how many. Search does this by itself; it is public for tools and tests."""
        self._unindexed = 0
        return await self._write(index_pending)

    # threads

    async def create_thread(self, thread: Thread, *, exist_ok: bool = False) -> Thread:
        return await self._write(_threads.create_thread, thread, exist_ok)

    async def get_thread(self, resource_id: str, thread_id: str) -> Thread | None:
        return await self._worker.read_small(_threads.get_thread, resource_id, thread_id)

    async def list_threads(
        self, resource_id: str, *, limit: int = 20, cursor: str | None = None,
        query: ThreadQuery = ALL_THREADS,
    ) -> ThreadPage:
        check_limit(limit)
        query = check_thread_query(query, cursor)
        after = decode_page_cursor(cursor, query) if cursor is not None else None
        return await self._read(_threads.list_threads, resource_id, limit, after, query)

    async def count_threads(self, resource_id: str, query: ThreadQuery = ALL_THREADS) -> int:
        return await self._read(_threads.count_threads, resource_id, check_thread_query(query))

    async def update_thread(
        self, resource_id: str, thread_id: str, *, title: Any = UNSET, metadata: Any = UNSET
    ) -> Thread:
        return await self._write(_threads.update_thread, resource_id, thread_id, title, metadata)

    async def delete_thread(self, resource_id: str, thread_id: str) -> bool:
        return await self._erased(await self._write(_DELETE_THREAD, resource_id, thread_id))

    # messages

    async def save_messages(
        self, resource_id: str, thread_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        prepared = [_messages.prepare(m) for m in messages]
        size = sum(len(p[1]) + len(p[2]) + len(p[3]) for p in prepared)
        if size <= SMALL_WRITE:  # on the caller's thread when the worker is idle, at NORMAL
            seqs = await self._worker.write_small(
                _messages.save_messages, resource_id, thread_id, prepared, size=size)
        else:
            seqs = await self._write(_messages.save_messages, resource_id, thread_id, prepared)
        self._unindexed += len(prepared)
        if self._unindexed >= INDEX_BATCH:
            self._unindexed = 0
            self._worker.write_later(index_pending)
        return saved_messages(messages, resource_id, thread_id, seqs)

    async def get_messages(
        self, resource_id: str, thread_id: str, query: MessageQuery = ALL_MESSAGES
    ) -> list[Message]:
        check_query(query)
        if query.ids is not None and len(query.ids) * (2 * query.message_range + 1) <= SMALL_READ:
            return await self._worker.read_small(
                _messages.get_messages, resource_id, thread_id, query, snapshot=True
            )
        if query.ids is not None or query.before is not None or query.after is not None:
            return await self._read(_messages.get_messages, resource_id, thread_id, query)
        small = min(n for n in (query.last_n, query.first_n, SMALL_READ + 1) if n is not None)
        read = self._worker.read_small if small <= SMALL_READ else self._worker.read_one
        return await read(_messages.get_messages, resource_id, thread_id, query)

    async def delete_messages(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> int:
        return await self._erased(
            await self._write(_DELETE_MESSAGES, resource_id, thread_id, list(ids))
        )

    async def clear_thread(self, resource_id: str, thread_id: str) -> int:
        return await self._erased(await self._write(_CLEAR_THREAD, resource_id, thread_id))

    async def delete_resource(self, resource_id: str) -> Deleted:
        self._word_counts.forget(resource_id)
        return await self._erased(await self._write(_DELETE_RESOURCE, resource_id))

    async def _erased(self, result: _T) -> _T:
        """``result`` of a deletion, once the WAL is checkpointed and truncated (:mod:`.erase`)."""
        await self._worker.checkpoint()
        return result

    async def purge(self) -> dict[str, Any]:
        """Make deleted data unrecoverable from the files: merge the full-text index, VACUUM,
        checkpoint and truncate the WAL (:func:`memvault.stores.sqlite.erase.purge`). Every
        deletion already does all but the VACUUM; run this after a deletion that another
        process's open reader kept from truncating the WAL."""
        return await self._worker.purge()

    # retention (memvault.stores.capabilities.Retention; :mod:`.retention`)

    async def set_retention(self, resource_id: str, max_age: timedelta | None) -> None:
        await self._write(_retention.set_retention, resource_id, max_age)

    async def retention_policies(self) -> dict[str, timedelta]:
        return await self._read(_retention.retention_policies)

    async def expire_messages(self, now: datetime, resource_id: str | None = None) -> list[Expired]:
        expired: list[Expired] = await self._write(_EXPIRE_MESSAGES, now, resource_id)
        return await self._erased(expired) if expired else expired

    # search_messages and search_passages: RowReads
    async def _search(
        self, resource_id: str, query: str, thread_id: str | None, limit: int, make: Callable[[Any], _T]
    ) -> list[tuple[_T, float]]:
        check_limit(limit)
        groups = query_groups(query)
        if not groups:
            return []
        await self._index_before_search()
        return await self._worker.search_read(_search.search, resource_id, groups, thread_id, limit, make,
                                              self._word_counts)

    async def search_pool(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10,
        message_range: int = 0,
    ) -> SearchPool:
        check_pool_search(limit, message_range)
        groups = query_groups(query)
        if not groups:
            return SearchPool([], [], message_range=message_range)
        await self._index_before_search()
        return await self._worker.search_read(_search.search_pool, resource_id, groups, thread_id, limit,
                                              message_range, self._word_counts)

    async def _index_before_search(self) -> None:
        """Index the messages saved since the last batch, so that a search sees every saved
        message; when that cannot write, the search reads them directly (:mod:`.search`)."""
        pending = False if self.read_only else await self._worker.read_small(any_unindexed)
        if pending:
            try:
                await self.index_pending()
            except StoreError as exc:
                if not index_write_failed(exc):
                    raise
                log.warning("full-text indexing failed (%s): this search reads the messages not "
                            "indexed yet directly", exc)

    async def rebuild_search_index(self) -> int:
        self._unindexed = 0
        return await self._write(rebuild_search_index)

    # working memory

    async def get_working_memory(self, resource_id: str, key: str) -> str | None:
        return await self._worker.read_small(_records.get_working_memory, resource_id, key)

    async def update_working_memory(
        self, resource_id: str, key: str, update: WorkingMemoryUpdate
    ) -> str | None:
        return await self._write(_records.update_working_memory, resource_id, key, update)

    # states

    async def get_state(self, resource_id: str, key: str) -> State | None:
        return await self._worker.read_small(_records.get_state, resource_id, key)

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
        at = now()
        state = State(resource_id=resource_id, key=key, value=value, status=status, workflow_id=workflow_id,
                      thread_id=thread_id, created_at=at, updated_at=at)
        return await self._write(_records.set_state, state, expected_version)

    async def update_state(
        self,
        resource_id: str,
        key: str,
        *,
        merge: Any = UNSET,
        status: str | _Unset | None = UNSET,
        expected_version: int | None = None,
    ) -> State | None:
        return await self._write(_records.update_state, resource_id, key, merge, status, expected_version)

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
        filters = {"status": status, "workflow_id": workflow_id, "thread_id": thread_id}
        return await self._read(_records.list_states, resource_id, filters, limit)

    async def delete_state(self, resource_id: str, key: str) -> bool:
        return await self._write(_records.delete_state, resource_id, key)

    # summaries

    async def get_summary(self, resource_id: str, thread_id: str) -> Summary | None:
        return await self._worker.read_small(_summaries.get_summary, resource_id, thread_id)

    async def save_summary(self, summary: Summary, *, expected_version: int | None) -> Summary | None:
        return await self._write(_summaries.save_summary, summary, expected_version)

    async def delete_summary(self, resource_id: str, thread_id: str) -> bool:
        return await self._write(_summaries.delete_summary, resource_id, thread_id)

    # batch reads (memvault.stores.capabilities.BatchReads)

    async def read_turn(self, resource_id: str, thread_id: str, *, last_n: int, note_key: str) -> TurnRead:
        check_query(MessageQuery(last_n=last_n))
        if last_n <= SMALL_READ:
            return await self._worker.read_small(_batch.read_turn, resource_id, thread_id, last_n, note_key,
                                                 snapshot=True)
        return await self._read(_batch.read_turn, resource_id, thread_id, last_n, note_key)

    # read_around and read_passages: RowReads

    async def _read_around(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int,
        make: Callable[[Any], _T],
    ) -> dict[str, list[_T]]:
        for found in ids.values():
            check_query(MessageQuery(ids=found, message_range=message_range))
        rows_read = sum(len(found) for found in ids.values()) * (2 * message_range + 1)
        if rows_read <= SMALL_READ:
            return await self._worker.read_small(_batch.read_rows_around, resource_id, ids, message_range,
                                                 make, snapshot=True)
        return await self._read(_batch.read_rows_around, resource_id, ids, message_range, make)

    # embeddings

    async def embedding_model(self) -> tuple[str, int] | None:
        return await self._worker.read_one(_vectors.embedding_model)

    async def save_embeddings(self, model: str, dimensions: int, rows: Sequence[VectorRow]) -> int:
        return await self._write(_vectors.save_embeddings, model, dimensions, list(rows))

    async def load_embeddings(
        self, *, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, str, str, str, bytes]]:
        return await self._read(_vectors.load_embeddings, after, limit)

    async def unembedded_messages(
        self, *, after: int = 0, limit: int = 500
    ) -> list[tuple[int, Message]]:
        return await self._read(_vectors.unembedded_messages, after, limit)

    async def clear_embeddings(self) -> int:
        return await self._write(_vectors.clear_embeddings)

    # per-resource vector reads (memvault.vectors.stored.VectorSource, for lazy loading)

    async def embedding_cursor(self) -> int:
        return await self._worker.read_one(_vectors.embedding_cursor)

    async def resource_embeddings(
        self, resource_id: str, *, after: tuple[str, str] | None = None, limit: int = 10_000
    ) -> list[tuple[str, str, bytes]]:
        return await self._read(_vectors.resource_embeddings, resource_id, after, limit)

    async def embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        return await self._vectors_of(resource_id, keys, "vector")

    async def sentence_embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        return await self._vectors_of(resource_id, keys, "sentences")

    async def _vectors_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]], column: str
    ) -> list[tuple[str, str, bytes]]:
        if not keys:
            return []
        return await self._worker.read_small(_vectors.embeddings_of, resource_id,
                                             json.dumps(list(keys)), column)  # pairs: JSON arrays

    # export (memvault.stores.capabilities.ExportStore, for memvault.transfer.copier)

    async def resource_ids(self) -> list[str]:
        return await self._read(_export.resource_ids)

    async def record_counts(self, resource_id: str) -> dict[str, int]:
        return await self._read(_export.record_counts, resource_id)

    async def working_memory_keys(self, resource_id: str) -> list[str]:
        return await self._read(_export.working_memory_keys, resource_id)

    async def state_keys(self, resource_id: str) -> list[str]:
        return await self._read(_export.state_keys, resource_id)

    async def restore_thread(self, thread: Thread) -> None:
        await self._write(_export.restore_thread, thread)

    async def restore_state(self, state: State) -> None:
        await self._write(_export.restore_state, state)

    async def restore_summary(self, summary: Summary) -> None:
        await self._write(_export.restore_summary, summary)


def _check_path(path: str | Path) -> Path:
    """``path`` as a :class:`Path`, or :class:`~memvault.errors.ConfigurationError` for one SQLite
    cannot take (a NUL character, text that is not valid Unicode, not a path at all)."""
    if not isinstance(path, str | Path):
        raise ConfigurationError(f"a SQLite path must be a str or a Path, got {type(path).__name__}")
    text = str(path)
    if not text:
        raise ConfigurationError("the SQLite path is empty: name a file, or use memory://")
    if "\x00" in text:
        raise ConfigurationError(f"the SQLite path {text!r} holds a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(f"the SQLite path {text!r} is not valid Unicode text") from None
    return Path(path)
