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
- Calls run on one worker thread per store, so the event loop never blocks on the disk, and
  concurrent writes share commits (group commit, :mod:`memvault.stores.sqlite.worker`). The
  one exception is the hot, small read of a history window (at most ``SMALL_READ`` newest or
  oldest messages): it runs on the caller's thread, since a WAL read never waits for writers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from memvault.errors import (
    ConfigurationError,
    NotFoundError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from memvault.lexical import fts5_match, index_text, query_groups, stem
from memvault.model import Message, SearchHit, State, Summary, Thread, ThreadPage, note_key, now
from memvault.stores import rows
from memvault.stores.base import ALL_MESSAGES, UNSET, Deleted, MessageQuery, WorkingMemoryUpdate, _Unset
from memvault.stores.common import check_limit, check_query, decode_cursor, encode_cursor, to_micros
from memvault.stores.sqlite import export as export
from memvault.stores.sqlite import summaries as summaries
from memvault.stores.sqlite import vectors as vectors
from memvault.stores.sqlite.schema import (
    index_pending,
    migrate,
    rebuild_search_index,
    scope_token,
    unindexed,
)
from memvault.stores.sqlite.worker import SqliteWorker

Durability = Literal["normal", "full"]
_CHUNK = 500
SMALL_READ = 200
"""A read of at most this many newest or oldest messages (a history window) runs on the caller's
thread (:meth:`SqliteWorker.read_small`)."""
INDEX_BATCH = 512
"""New messages are full-text indexed in batches of about this many (and before any search)."""
_MESSAGE_COLUMNS = "id, thread_id, resource_id, seq, role, parts, metadata, created_us"


class SqliteStore:
    """A :class:`~memvault.stores.base.Store` in one SQLite file. Use :meth:`open`."""

    def __init__(
        self, path: str | Path, *, durability: Durability = "normal", busy_timeout: float = 60.0
    ) -> None:
        if durability not in ("normal", "full"):
            raise ConfigurationError(f"durability must be 'normal' or 'full', got {durability!r}")
        self.path = Path(path)
        self.durability = durability
        self._worker = SqliteWorker(
            self.path, synchronous=durability.upper(), busy_timeout=busy_timeout
        )
        self._write = self._worker.write
        self._read = self._worker.read
        self._unindexed = 0  # messages this store saved since it last asked for indexing

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SqliteStore:
        """Open (creating the file and its missing parent folders) and migrate the schema."""
        store = cls(path, **options)
        try:
            await store._worker.start(migrate)
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        """Index what is pending, then close the connection; closing twice is harmless."""
        if self._unindexed and not self._worker.closed:
            await self.index_pending()
        await self._worker.close()

    async def index_pending(self) -> int:
        """Index the messages that full-text search has not indexed yet (from any process);
        returns how many. Search does this by itself; it is public for tools and tests."""
        self._unindexed = 0
        return await self._write(index_pending)

    # threads

    async def create_thread(self, thread: Thread, *, exist_ok: bool = False) -> Thread:
        return await self._write(_create_thread, thread, exist_ok)

    async def get_thread(self, resource_id: str, thread_id: str) -> Thread | None:
        return await self._read(_get_thread, resource_id, thread_id)

    async def list_threads(
        self, resource_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> ThreadPage:
        check_limit(limit)
        after = decode_cursor(cursor) if cursor is not None else None
        return await self._read(_list_threads, resource_id, limit, after)

    async def update_thread(
        self, resource_id: str, thread_id: str, *, title: Any = UNSET, metadata: Any = UNSET
    ) -> Thread:
        return await self._write(_update_thread, resource_id, thread_id, title, metadata)

    async def delete_thread(self, resource_id: str, thread_id: str) -> bool:
        return await self._write(_delete_thread, resource_id, thread_id)

    # messages

    async def save_messages(
        self, resource_id: str, thread_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        prepared = [(m, m.parts_json(), rows.dumps(m.metadata), index_text(m)) for m in messages]
        seqs = await self._write(_save_messages, resource_id, thread_id, prepared)
        self._unindexed += len(prepared)
        if self._unindexed >= INDEX_BATCH:
            self._unindexed = 0
            self._worker.write_later(index_pending)
        return [
            m.model_copy(update={"thread_id": thread_id, "resource_id": resource_id, "seq": seq})
            for m, seq in zip(messages, seqs, strict=True)
        ]

    async def get_messages(
        self, resource_id: str, thread_id: str, query: MessageQuery = ALL_MESSAGES
    ) -> list[Message]:
        check_query(query)
        if query.ids is not None and len(query.ids) * (2 * query.message_range + 1) <= SMALL_READ:
            return await self._worker.read_small(_get_messages, resource_id, thread_id, query, snapshot=True)
        if query.ids is not None or query.before is not None or query.after is not None:
            return await self._read(_get_messages, resource_id, thread_id, query)
        small = min(n for n in (query.last_n, query.first_n, SMALL_READ + 1) if n is not None)
        read = self._worker.read_small if small <= SMALL_READ else self._worker.read_one
        return await read(_get_messages, resource_id, thread_id, query)

    async def delete_messages(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> int:
        return await self._write(_delete_messages, resource_id, thread_id, list(ids))

    async def clear_thread(self, resource_id: str, thread_id: str) -> int:
        return await self._write(_clear_thread, resource_id, thread_id)

    async def delete_resource(self, resource_id: str) -> Deleted:
        return await self._write(_delete_resource, resource_id)

    async def search_messages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        check_limit(limit)
        groups = query_groups(query)
        if not groups:
            return []
        if await self._worker.read_one(unindexed):
            await self.index_pending()
        return await self._read(_search, resource_id, groups, thread_id, limit)

    async def rebuild_search_index(self) -> int:
        self._unindexed = 0
        return await self._write(rebuild_search_index)

    # working memory

    async def get_working_memory(self, resource_id: str, key: str) -> str | None:
        return await self._read(_get_working_memory, resource_id, key)

    async def update_working_memory(
        self, resource_id: str, key: str, update: WorkingMemoryUpdate
    ) -> str | None:
        return await self._write(_update_working_memory, resource_id, key, update)

    # states

    async def get_state(self, resource_id: str, key: str) -> State | None:
        return await self._read(_get_state, resource_id, key)

    async def set_state(
        self,
        resource_id: str,
        key: str,
        value: Any,
        *,
        status: str | None = None,
        expected_version: int | _Unset | None = UNSET,
    ) -> State | None:
        state = State(resource_id=resource_id, key=key, value=value, status=status)
        return await self._write(_set_state, state, expected_version)

    async def list_states(
        self, resource_id: str, *, status: str | None = None, limit: int = 100
    ) -> list[State]:
        check_limit(limit)
        return await self._read(_list_states, resource_id, status, limit)

    async def delete_state(self, resource_id: str, key: str) -> bool:
        return await self._write(_delete_state, resource_id, key)

    # summaries

    async def get_summary(self, resource_id: str, thread_id: str) -> Summary | None:
        return await self._read(summaries.get_summary, resource_id, thread_id)

    async def save_summary(self, summary: Summary, *, expected_version: int | None) -> Summary | None:
        return await self._write(summaries.save_summary, summary, expected_version)

    async def delete_summary(self, resource_id: str, thread_id: str) -> bool:
        return await self._write(summaries.delete_summary, resource_id, thread_id)

    # embeddings

    async def embedding_model(self) -> tuple[str, int] | None:
        return await self._worker.read_one(vectors.embedding_model)

    async def save_embeddings(
        self, model: str, dimensions: int, rows: Sequence[tuple[str, str, str, bytes]]
    ) -> int:
        return await self._write(vectors.save_embeddings, model, dimensions, list(rows))

    async def load_embeddings(
        self, *, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, str, str, str, bytes]]:
        return await self._read(vectors.load_embeddings, after, limit)

    async def unembedded_messages(
        self, *, after: int = 0, limit: int = 500
    ) -> list[tuple[int, Message]]:
        return await self._read(vectors.unembedded_messages, after, limit)

    async def clear_embeddings(self) -> int:
        return await self._write(vectors.clear_embeddings)

    # export (memvault.stores.capabilities.ExportStore, for memvault.copy)

    async def resource_ids(self) -> list[str]:
        return await self._read(export.resource_ids)

    async def record_counts(self, resource_id: str) -> dict[str, int]:
        return await self._read(export.record_counts, resource_id)

    async def working_memory_keys(self, resource_id: str) -> list[str]:
        return await self._read(export.working_memory_keys, resource_id)

    async def state_keys(self, resource_id: str) -> list[str]:
        return await self._read(export.state_keys, resource_id)

    async def restore_thread(self, thread: Thread) -> None:
        await self._write(export.restore_thread, thread)

    async def restore_state(self, state: State) -> None:
        await self._write(export.restore_state, state)

    async def restore_summary(self, summary: Summary) -> None:
        await self._write(export.restore_summary, summary)


# The transaction bodies: plain functions of a connection, run on the store's worker thread.

_THREAD_COLUMNS = "resource_id, id, title, metadata, created_us, updated_us"


def _create_thread(conn: sqlite3.Connection, thread: Thread, exist_ok: bool) -> Thread:
    inserted = conn.execute(
        f"INSERT INTO threads ({_THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (thread.resource_id, thread.id, thread.title, rows.dumps(thread.metadata),
         to_micros(thread.created_at), to_micros(thread.updated_at)),
    ).rowcount
    if not inserted and not exist_ok:
        raise ThreadExistsError(thread.id)
    found = _get_thread(conn, thread.resource_id, thread.id)
    assert found is not None
    return found


def _get_thread(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> Thread | None:
    row = conn.execute(
        f"SELECT {_THREAD_COLUMNS} FROM threads WHERE resource_id = ? AND id = ?",
        (resource_id, thread_id),
    ).fetchone()
    return rows.thread(row) if row else None


def _list_threads(
    conn: sqlite3.Connection, resource_id: str, limit: int, after: tuple[int, str] | None
) -> ThreadPage:
    sql = f"SELECT {_THREAD_COLUMNS} FROM threads WHERE resource_id = ?"
    args: list[Any] = [resource_id]
    if after is not None:
        sql += " AND (updated_us, id) < (?, ?)"
        args += list(after)
    sql += " ORDER BY updated_us DESC, id DESC LIMIT ?"
    found = conn.execute(sql, (*args, limit + 1)).fetchall()
    threads = [rows.thread(r) for r in found[:limit]]
    cursor = encode_cursor(found[limit - 1][5], found[limit - 1][1]) if len(found) > limit else None
    return ThreadPage(threads=threads, next_cursor=cursor)


def _update_thread(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, title: Any, metadata: Any
) -> Thread:
    thread = _get_thread(conn, resource_id, thread_id)
    if thread is None:
        raise ThreadNotFoundError(thread_id)
    changes: dict[str, Any] = {"updated_at": now()}
    if not isinstance(title, _Unset):
        changes["title"] = title
    if not isinstance(metadata, _Unset):
        changes["metadata"] = metadata
    thread = Thread.parse({**thread.model_dump(), **changes})
    conn.execute(
        "UPDATE threads SET title = ?, metadata = ?, updated_us = ? WHERE resource_id = ? AND id = ?",
        (thread.title, rows.dumps(thread.metadata), to_micros(thread.updated_at),
         resource_id, thread_id),
    )
    return thread


def _delete_thread(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> bool:
    key = (resource_id, thread_id)
    conn.execute("DELETE FROM messages WHERE resource_id = ? AND thread_id = ?", key)
    conn.execute(
        "DELETE FROM working_memory WHERE resource_id = ? AND key = ?",
        (resource_id, note_key(thread_id)),
    )
    return conn.execute("DELETE FROM threads WHERE resource_id = ? AND id = ?", key).rowcount > 0


def _save_messages(
    conn: sqlite3.Connection,
    resource_id: str,
    thread_id: str,
    prepared: list[tuple[Message, str, str, str]],
) -> list[int]:
    """Insert or update the messages; returns their seqs. New ids take the thread's next seqs,
    reserved with the thread's upsert in one statement."""
    seqs = _existing_seqs(conn, resource_id, thread_id, [p[0].id for p in prepared])
    new = len({p[0].id for p in prepared} - seqs.keys())
    stamp = to_micros(now())
    (next_seq,) = conn.execute(
        "INSERT INTO threads (resource_id, id, created_us, updated_us, next_seq)"
        " VALUES (?, ?, ?, ?, 1 + ?) ON CONFLICT DO UPDATE SET updated_us = excluded.updated_us,"
        " next_seq = next_seq + ? RETURNING next_seq - ?",
        (resource_id, thread_id, stamp, stamp, new, new, new),
    ).fetchone()
    values, saved = [], []
    for message, parts, metadata, body in prepared:
        seq = seqs.get(message.id)
        if seq is None:
            seq = seqs[message.id] = next_seq
            next_seq += 1
        values.append((resource_id, thread_id, message.id, seq, message.role, parts, metadata,
                       to_micros(message.created_at), body))
        saved.append(seq)
    conn.executemany(
        "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata, created_us,"
        " body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (resource_id, thread_id, id) DO"
        " UPDATE SET role = excluded.role, parts = excluded.parts, metadata = excluded.metadata,"
        " created_us = excluded.created_us, body = excluded.body",
        values,
    )
    return saved


def _existing_seqs(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, ids: list[str]
) -> dict[str, int]:
    found: dict[str, int] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        found.update(conn.execute(
            f"SELECT id, seq FROM messages WHERE resource_id = ? AND thread_id = ? AND id IN ({marks})",
            (resource_id, thread_id, *chunk),
        ).fetchall())
    return found


def _get_messages(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, query: MessageQuery
) -> list[Message]:
    where = "resource_id = ? AND thread_id = ?"
    key = (resource_id, thread_id)
    if query.ids is not None:
        seqs = sorted(_existing_seqs(conn, resource_id, thread_id, list(query.ids)).values())
        wanted: set[int] = set(seqs)
        for seq in seqs if query.message_range else []:
            for op, order in (("<", "DESC"), (">", "ASC")):
                wanted.update(s for (s,) in conn.execute(
                    f"SELECT seq FROM messages WHERE {where} AND seq {op} ? ORDER BY seq {order}"
                    " LIMIT ?", (*key, seq, query.message_range),
                ))
        selected = sorted(wanted)
        if query.last_n is not None:
            selected = selected[-query.last_n :] if query.last_n else []
        if query.first_n is not None:
            selected = selected[: query.first_n]
        found = []
        for start in range(0, len(selected), _CHUNK):
            chunk = selected[start : start + _CHUNK]
            found += conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE {where} AND seq IN "
                f"({','.join('?' * len(chunk))}) ORDER BY seq", (*key, *chunk),
            ).fetchall()
        return [rows.message(r) for r in found]
    sql = f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE {where}"
    args: list[Any] = list(key)
    has_cursor = query.after is not None or query.before is not None
    if has_cursor and _get_thread(conn, resource_id, thread_id) is None:
        return []  # a missing thread has no messages, whatever the cursor
    for cursor, op in ((query.after, ">"), (query.before, "<")):
        if cursor is not None:
            sql += f" AND seq {op} ?"
            args.append(_seq_of(conn, resource_id, thread_id, cursor))
    if query.last_n is not None:
        found = conn.execute(f"{sql} ORDER BY seq DESC LIMIT ?", (*args, query.last_n)).fetchall()
        found.reverse()
    elif query.first_n is not None:
        found = conn.execute(f"{sql} ORDER BY seq LIMIT ?", (*args, query.first_n)).fetchall()
    else:
        found = conn.execute(f"{sql} ORDER BY seq", args).fetchall()
    return [rows.message(r) for r in found]


def _seq_of(conn: sqlite3.Connection, resource_id: str, thread_id: str, message_id: str) -> int:
    row = conn.execute(
        "SELECT seq FROM messages WHERE resource_id = ? AND thread_id = ? AND id = ?",
        (resource_id, thread_id, message_id),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"message {message_id!r} is not in this thread")
    return int(row[0])


def _delete_messages(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, ids: list[str]
) -> int:
    deleted = 0
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        deleted += conn.execute(
            "DELETE FROM messages WHERE resource_id = ? AND thread_id = ? AND id IN "
            f"({','.join('?' * len(chunk))})", (resource_id, thread_id, *chunk),
        ).rowcount
    return deleted


def _clear_thread(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> int:
    return int(conn.execute(
        "DELETE FROM messages WHERE resource_id = ? AND thread_id = ?", (resource_id, thread_id)
    ).rowcount)


def _delete_resource(conn: sqlite3.Connection, resource_id: str) -> Deleted:
    def delete(table: str) -> int:
        return int(conn.execute(f"DELETE FROM {table} WHERE resource_id = ?", (resource_id,)).rowcount)

    return Deleted(
        messages=delete("messages"),
        threads=delete("threads"),
        working_memories=delete("working_memory"),
        states=delete("states"),
    )


COMMON_SHARE = 0.05
COMMON_MIN_MESSAGES = 1_000


def _uncommon(conn: sqlite3.Connection, groups: list[list[str]]) -> list[list[str]]:
    """The query's groups without its very common words, when it has rarer ones.

    A word held by more than ``COMMON_SHARE`` of the store's messages (and by more than
    ``COMMON_MIN_MESSAGES``) adds little to a BM25 score and makes FTS5 score most of the store
    (measured: 140 ms for one search over 100,000 messages of a small vocabulary). Small stores
    are never pruned; phrases (CJK runs) are always kept."""
    words = {stem(g[0]): g for g in groups if len(g) == 1}
    if len(groups) < 2 or not words:
        return groups
    (size,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM messages").fetchone()
    bound = max(COMMON_MIN_MESSAGES, COMMON_SHARE * size)
    marks = ", ".join("?" * len(words))
    common = {term for term, docs in conn.execute(
        f"SELECT term, doc FROM messages_fts_vocab WHERE term IN ({marks})", list(words)) if docs > bound}
    kept = [g for g in groups if len(g) > 1 or stem(g[0]) not in common]
    return kept or groups


def _search(
    conn: sqlite3.Connection, resource_id: str, groups: list[list[str]], thread_id: str | None, limit: int
) -> list[SearchHit]:
    words = fts5_match(_uncommon(conn, groups))
    match = f'scope : "{scope_token(resource_id)}" AND ({words})'
    columns = ", ".join(f"m.{c.strip()}" for c in _MESSAGE_COLUMNS.split(","))
    sql = (
        f"SELECT {columns}, -bm25(messages_fts, 1.0, 0.0) FROM messages_fts"
        " JOIN messages AS m ON m.rowid = messages_fts.rowid"
        " WHERE messages_fts MATCH ? AND m.resource_id = ?"
    )
    args: list[Any] = [match, resource_id]
    if thread_id is not None:
        sql += " AND m.thread_id = ?"
        args.append(thread_id)
    sql += " ORDER BY bm25(messages_fts, 1.0, 0.0), m.created_us LIMIT ?"
    found = conn.execute(sql, (*args, limit)).fetchall()
    return [SearchHit.model_construct(message=rows.message(r[:-1]), score=float(r[-1]))
            for r in found]


def _get_working_memory(conn: sqlite3.Connection, resource_id: str, key: str) -> str | None:
    row = conn.execute(
        "SELECT content FROM working_memory WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).fetchone()
    return str(row[0]) if row else None


def _update_working_memory(
    conn: sqlite3.Connection, resource_id: str, key: str, update: WorkingMemoryUpdate
) -> str | None:
    content = update(_get_working_memory(conn, resource_id, key))
    if content is None:
        conn.execute(
            "DELETE FROM working_memory WHERE resource_id = ? AND key = ?", (resource_id, key)
        )
    else:
        conn.execute(
            "INSERT INTO working_memory (resource_id, key, content, updated_us) VALUES (?, ?, ?, ?)"
            " ON CONFLICT DO UPDATE SET content = excluded.content, updated_us = excluded.updated_us",
            (resource_id, key, content, to_micros(now())),
        )
    return content


_STATE_COLUMNS = "resource_id, key, value, status, version, updated_us"


def _get_state(conn: sqlite3.Connection, resource_id: str, key: str) -> State | None:
    row = conn.execute(
        f"SELECT {_STATE_COLUMNS} FROM states WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).fetchone()
    return rows.state(row) if row else None


def _set_state(
    conn: sqlite3.Connection, state: State, expected_version: int | _Unset | None
) -> State | None:
    current = _get_state(conn, state.resource_id, state.key)
    version = current.version if current else None
    if not isinstance(expected_version, _Unset) and expected_version != version:
        return None
    state = state.model_copy(update={"version": (version or 0) + 1})
    conn.execute(
        f"INSERT INTO states ({_STATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
        " SET value = excluded.value, status = excluded.status, version = excluded.version,"
        " updated_us = excluded.updated_us",
        (state.resource_id, state.key, json.dumps(state.value, ensure_ascii=False), state.status,
         state.version, to_micros(state.updated_at)),
    )
    return state


def _list_states(
    conn: sqlite3.Connection, resource_id: str, status: str | None, limit: int
) -> list[State]:
    sql = f"SELECT {_STATE_COLUMNS} FROM states WHERE resource_id = ?"
    args: list[Any] = [resource_id]
    if status is not None:
        sql += " AND status = ?"
        args.append(status)
    sql += " ORDER BY updated_us DESC, key DESC LIMIT ?"
    return [rows.state(r) for r in conn.execute(sql, (*args, limit))]


def _delete_state(conn: sqlite3.Connection, resource_id: str, key: str) -> bool:
    return conn.execute(
        "DELETE FROM states WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).rowcount > 0
