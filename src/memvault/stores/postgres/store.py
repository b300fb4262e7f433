"""The PostgreSQL store: many processes, one server (``pip install 'memvault[postgres]'``).

Open it with a URL (``open_store`` / ``Memory.open``)::

    postgresql://user:password@host:5432/dbname
    postgresql://postgres@127.0.0.1/memvault?schema=agents&max_size=20

- ``schema`` (default ``public``): the PostgreSQL schema holding memvault's tables, created
  when missing; each pooled connection's ``search_path`` is set to it, so several memvault
  stores can share one database.
- ``min_size`` / ``max_size`` (default 1 / 10): the connection pool's bounds.
- ``connect_timeout`` (default 10 s) and any other libpq parameter (``sslmode``, ...) go to the
  driver unchanged. ``postgres://`` works too.

Opening applies the schema's missing migrations under an advisory lock
(:mod:`~.schema`), so any number of processes may open a new schema at once. Every
write is one transaction; a deadlock, a serialization failure or a lost connection is retried
(a save, a working-memory or state write even when the connection was lost during ``COMMIT``:
they apply once, see :mod:`~.ops`), and a server that cannot be reached raises
:class:`~memvault.errors.StoreError` naming it (:mod:`~.db`).
Semantics are those of :class:`~memvault.stores.base.Store`; how each capability keeps them
with concurrent writers is in the modules of its transaction bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psycopg

from memvault.errors import ConfigurationError, StoreError, StoreOpenError
from memvault.model import Message, State, Summary, Thread, ThreadPage, now
from memvault.rules.words import query_terms
from memvault.stores import rows
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
from memvault.stores.postgres import batch as _batch
from memvault.stores.postgres import export as _export
from memvault.stores.postgres import graph as _graph
from memvault.stores.postgres import messages as _messages
from memvault.stores.postgres import pool as _pool
from memvault.stores.postgres import purge as _purge
from memvault.stores.postgres import records as _records
from memvault.stores.postgres import retention as _retention
from memvault.stores.postgres import search as _search
from memvault.stores.postgres import summaries as _summaries
from memvault.stores.postgres import threads as _threads
from memvault.stores.postgres import vectors as _vectors
from memvault.stores.postgres.db import Database, reason, set_search_path
from memvault.stores.postgres.graph_store import PostgresGraph
from memvault.stores.postgres.ops import Pruning
from memvault.stores.postgres.schema import migrate
from memvault.stores.row_reads import RowReads
from memvault.stores.thread_queries import check_thread_query, decode_page_cursor

_T = TypeVar("_T")

_OPTIONS = ("schema", "min_size", "max_size")
DEFAULT_CONNECT_TIMEOUT = 10


@refuses_when_closed()
class PostgresStore(RowReads, PostgresGraph):
    """A :class:`~memvault.stores.base.Store` in a PostgreSQL schema. Use :meth:`open`.

    Once closed, every call raises :class:`~memvault.errors.StoreClosedError` at once
    (:mod:`memvault.stores.closing`)."""

    def __init__(self, database: Database) -> None:
        self.closed = False
        self._db = database
        self.schema = database.schema
        self._pruning = Pruning()

    @classmethod
    async def open(cls, url: str) -> PostgresStore:
        """Connect, create the schema if missing, migrate it, and open the connection pool."""
        conninfo, schema, min_size, max_size, where = postgres_options(url)
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise StoreOpenError(f"could not connect to PostgreSQL at {where}: {reason(exc)}",
                                 location=where) from exc
        try:
            async with conn:
                await set_search_path(conn, schema)
                await migrate(conn, schema)
        except psycopg.Error as exc:
            raise StoreOpenError(f"could not prepare the schema {schema!r} at {where}: {reason(exc)}"
                                 f"{_hint(exc)}", location=where) from exc
        database = Database(conninfo, schema, where=where, min_size=min_size, max_size=max_size)
        try:
            await database.open(wait_seconds=DEFAULT_CONNECT_TIMEOUT * 3)
        except StoreError as exc:
            raise StoreOpenError(str(exc), location=where) from exc
        return cls(database)

    async def close(self) -> None:
        """Close the pool's connections; closing twice is harmless."""
        self.closed = True
        await self._db.close()

    # threads

    async def create_thread(self, thread: Thread, *, exist_ok: bool = False) -> Thread:
        return await self._db.write(_threads.create_thread, thread, exist_ok)

    async def get_thread(self, resource_id: str, thread_id: str) -> Thread | None:
        return await self._db.read(_threads.get_thread, resource_id, thread_id)

    async def list_threads(
        self, resource_id: str, *, limit: int = 20, cursor: str | None = None,
        query: ThreadQuery = ALL_THREADS,
    ) -> ThreadPage:
        check_limit(limit)
        query = check_thread_query(query, cursor)
        after = decode_page_cursor(cursor, query) if cursor is not None else None
        return await self._db.read(_threads.list_threads, resource_id, limit, after, query)

    async def count_threads(self, resource_id: str, query: ThreadQuery = ALL_THREADS) -> int:
        return await self._db.read(_threads.count_threads, resource_id, check_thread_query(query))

    async def update_thread(
        self, resource_id: str, thread_id: str, *, title: Any = UNSET, metadata: Any = UNSET
    ) -> Thread:
        return await self._db.write(_threads.update_thread, resource_id, thread_id, title, metadata)

    async def delete_thread(self, resource_id: str, thread_id: str) -> bool:
        return await self._db.write(_threads.delete_thread, resource_id, thread_id)

    # messages

    async def save_messages(
        self, resource_id: str, thread_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        if not messages:
            return []
        prepared = [(m, m.parts_json(), rows.dumps(m.metadata), _search.document(m)) for m in messages]
        seqs = await self._db.write_pipelined(_messages.save_messages, resource_id, thread_id, prepared)
        return saved_messages(messages, resource_id, thread_id, seqs)

    async def get_messages(
        self, resource_id: str, thread_id: str, query: MessageQuery = ALL_MESSAGES
    ) -> list[Message]:
        check_query(query)
        return await self._db.read(_messages.get_messages, resource_id, thread_id, query)

    async def delete_messages(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> int:
        unique = list(dict.fromkeys(ids))
        return await self._db.write(_messages.delete_messages, resource_id, thread_id, unique)

    async def clear_thread(self, resource_id: str, thread_id: str) -> int:
        return await self._db.write(_messages.clear_thread, resource_id, thread_id)

    async def delete_resource(self, resource_id: str) -> Deleted:
        return await self._db.write(_graph.delete_resource, resource_id)

    async def purge(self) -> dict[str, Any]:
        """Make deleted rows unrecoverable from the table files: ``VACUUM FULL`` of every table
        of the schema (:mod:`~.purge`; locks each table while it rewrites it). A deletion only
        marks rows dead: run this after deletions that must be erased (right to erasure)."""
        return await self._db.read(_purge.purge)

    # retention (memvault.stores.capabilities.Retention; :mod:`.retention`)

    async def set_retention(self, resource_id: str, max_age: timedelta | None) -> None:
        await self._db.write_idempotent(_retention.set_retention, resource_id, max_age)

    async def retention_policies(self) -> dict[str, timedelta]:
        return await self._db.read(_retention.retention_policies)

    async def expire_messages(self, now: datetime, resource_id: str | None = None) -> list[Expired]:
        return await self._db.write(_retention.expire_messages, now, resource_id)

    # search

    # search_messages and search_passages: RowReads; search_pool: PoolSearch

    async def _search(
        self, resource_id: str, query: str, thread_id: str | None, limit: int, make: Callable[[Any], _T]
    ) -> list[tuple[_T, float]]:
        check_limit(limit)
        match = _search.tsquery(query)
        if match is None:
            return []
        return await self._db.read(_search.search, resource_id, match, thread_id, limit, make)

    async def search_pool(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10,
        message_range: int = 0,
    ) -> SearchPool:
        check_pool_search(limit, message_range)
        terms = query_terms(query)
        if not terms:
            return SearchPool([], [], message_range=message_range)
        return await self._db.read(_pool.search_pool, resource_id, terms, thread_id, limit, message_range)

    async def rebuild_search_index(self) -> int:
        return await self._db.read(_search.rebuild)

    # working memory

    async def get_working_memory(self, resource_id: str, key: str) -> str | None:
        return await self._db.read(_records.get_working_memory, resource_id, key)

    async def update_working_memory(
        self, resource_id: str, key: str, update: WorkingMemoryUpdate
    ) -> str | None:
        return await self._db.write_idempotent(
            _records.update_working_memory, resource_id, key, update, self._pruning.op())

    # states

    async def get_state(self, resource_id: str, key: str) -> State | None:
        return await self._db.read(_records.get_state, resource_id, key)

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
        return await self._db.write_idempotent(
            _records.set_state, state, expected_version, self._pruning.op())

    async def update_state(
        self,
        resource_id: str,
        key: str,
        *,
        merge: Any = UNSET,
        status: str | _Unset | None = UNSET,
        expected_version: int | None = None,
    ) -> State | None:
        return await self._db.write_idempotent(
            _records.update_state, resource_id, key, merge, status, expected_version, self._pruning.op())

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
        return await self._db.read(_records.list_states, resource_id, filters, limit)

    async def delete_state(self, resource_id: str, key: str) -> bool:
        return await self._db.write(_records.delete_state, resource_id, key)

    # summaries

    async def get_summary(self, resource_id: str, thread_id: str) -> Summary | None:
        return await self._db.read(_summaries.get_summary, resource_id, thread_id)

    async def save_summary(self, summary: Summary, *, expected_version: int | None) -> Summary | None:
        return await self._db.write(_summaries.save_summary, summary, expected_version)

    async def delete_summary(self, resource_id: str, thread_id: str) -> bool:
        return await self._db.write(_summaries.delete_summary, resource_id, thread_id)

    # batch reads (memvault.stores.capabilities.BatchReads)

    async def read_turn(self, resource_id: str, thread_id: str, *, last_n: int, note_key: str) -> TurnRead:
        check_query(MessageQuery(last_n=last_n))
        return await self._db.read(_batch.read_turn, resource_id, thread_id, last_n, note_key)

    # read_around and read_passages: RowReads

    async def _read_around(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int,
        make: Callable[[Any], _T],
    ) -> dict[str, list[_T]]:
        for found in ids.values():
            check_query(MessageQuery(ids=found, message_range=message_range))
        return await self._db.read(_batch.read_rows_around, resource_id, ids, message_range, make)

    # embeddings

    async def embedding_model(self) -> tuple[str, int] | None:
        return await self._db.read(_vectors.embedding_model)

    async def save_embeddings(self, model: str, dimensions: int, rows: Sequence[VectorRow]) -> int:
        return await self._db.write(_vectors.save_embeddings, model, dimensions, list(rows))

    async def load_embeddings(
        self, *, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, str, str, str, bytes]]:
        return await self._db.read(_vectors.load_embeddings, after, limit)

    async def unembedded_messages(
        self, *, after: int = 0, limit: int = 500
    ) -> list[tuple[int, Message]]:
        return await self._db.read(_vectors.unembedded_messages, after, limit)

    async def clear_embeddings(self) -> int:
        return await self._db.write(_vectors.clear_embeddings)

    # per-resource vector reads (memvault.vectors.stored.VectorSource, for lazy loading)

    async def embedding_cursor(self) -> int:
        return await self._db.read(_vectors.embedding_cursor)

    async def resource_embeddings(
        self, resource_id: str, *, after: tuple[str, str] | None = None, limit: int = 10_000
    ) -> list[tuple[str, str, bytes]]:
        return await self._db.read(_vectors.resource_embeddings, resource_id, after, limit)

    async def embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        if not keys:
            return []
        return await self._db.read(_vectors.embeddings_of, resource_id, list(keys))

    async def sentence_embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        if not keys:
            return []
        return await self._db.read(_vectors.embeddings_of, resource_id, list(keys), "sentences")

    # export (memvault.stores.capabilities.ExportStore, for memvault.transfer.copier)

    async def resource_ids(self) -> list[str]:
        return await self._db.read(_export.resource_ids)

    async def record_counts(self, resource_id: str) -> dict[str, int]:
        return await self._db.read(_export.record_counts, resource_id)

    async def working_memory_keys(self, resource_id: str) -> list[str]:
        return await self._db.read(_export.working_memory_keys, resource_id)

    async def state_keys(self, resource_id: str) -> list[str]:
        return await self._db.read(_export.state_keys, resource_id)

    async def restore_thread(self, thread: Thread) -> None:
        await self._db.write_idempotent(_export.restore_thread, thread)

    async def restore_state(self, state: State) -> None:
        await self._db.write_idempotent(_export.restore_state, state)

    async def restore_summary(self, summary: Summary) -> None:
        await self._db.write_idempotent(_export.restore_summary, summary)


def postgres_options(url: str) -> tuple[str, str, int, int, str]:
    """``(conninfo, schema, min_size, max_size, where)`` for a ``postgresql:`` URL: the URL
    without memvault's own parameters (with a default ``connect_timeout``), and a description
    of the server without credentials, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # not echoed: the URL may hold a password
        raise ConfigurationError(f"the PostgreSQL URL cannot be parsed ({exc})") from None
    params = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in params if k in _OPTIONS}
    theirs = [(k, v) for k, v in params if k not in _OPTIONS]
    if not any(k == "connect_timeout" for k, _ in theirs):
        theirs.append(("connect_timeout", str(DEFAULT_CONNECT_TIMEOUT)))
    schema = ours.get("schema", "public")
    if not schema or len(schema.encode()) > 63 or "\x00" in schema:
        raise ConfigurationError(f"schema must be a PostgreSQL name of 1 to 63 bytes in {_redact(url)!r}")
    sizes = []
    for name, default in (("min_size", 1), ("max_size", 10)):
        raw = ours.get(name, str(default))
        if not raw.isdigit() or int(raw) < (0 if name == "min_size" else 1):
            raise ConfigurationError(f"{name} must be a whole number in {_redact(url)!r}")
        sizes.append(int(raw))
    if sizes[0] > sizes[1]:
        raise ConfigurationError(f"min_size must not exceed max_size in {_redact(url)!r}")
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(theirs), parts.fragment))
    try:
        port = parts.port or 5432
    except ValueError:
        raise ConfigurationError(f"invalid port in {_redact(url)!r}") from None
    host = parts.hostname or "the local socket"
    where = f"{host}:{port}/{unquote(parts.path.lstrip('/')) or '(default database)'}"
    return conninfo, schema, sizes[0], sizes[1], where


def _hint(exc: Exception) -> str:
    """What to do about a refusal while preparing the schema."""
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return (": the role needs the CREATE right on the database (to create the schema) or on "
                "the schema (to create memvault's tables), or use a schema it owns (?schema=...)")
    return ""


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))

