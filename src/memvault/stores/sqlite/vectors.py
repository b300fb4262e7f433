"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.EmbeddingStore`
capability: message vectors as float32 BLOBs keyed by the message's rowid (the cursor)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memvault.errors import ConfigurationError
from memvault.model import Message
from memvault.stores import rows
from memvault.stores.capabilities import VectorRow, sentences_of
from memvault.stores.common import embedding_mismatch
from memvault.stores.sqlite.search import COLUMNS


def embedding_model(conn: sqlite3.Connection) -> tuple[str, int] | None:
    row = conn.execute("SELECT model, dimensions FROM embedding_model").fetchone()
    return (str(row[0]), int(row[1])) if row else None


def save_embeddings(
    conn: sqlite3.Connection, model: str, dimensions: int, items: Sequence[VectorRow]
) -> int:
    recorded = embedding_model(conn)
    if recorded is None:
        conn.execute("INSERT INTO embedding_model (model, dimensions) VALUES (?, ?)", (model, dimensions))
    elif recorded != (model, dimensions):
        raise ConfigurationError(embedding_mismatch(recorded, (model, dimensions)))
    stored = 0
    for item in items:
        resource_id, thread_id, message_id, vector = item[:4]
        stored += conn.execute(
            "INSERT INTO message_vectors (message_rowid, vector, sentences) SELECT rowid, ?, ? FROM messages"
            " WHERE resource_id = ? AND thread_id = ? AND id = ?"
            " ON CONFLICT DO UPDATE SET vector = excluded.vector, sentences = excluded.sentences",
            (vector, sentences_of(item), resource_id, thread_id, message_id),
        ).rowcount
    return stored


def load_embeddings(
    conn: sqlite3.Connection, after: int, limit: int
) -> list[tuple[int, str, str, str, bytes]]:
    return [
        (int(r[0]), r[1], r[2], r[3], bytes(r[4]))
        for r in conn.execute(
            "SELECT v.message_rowid, m.resource_id, m.thread_id, m.id, v.vector"
            " FROM message_vectors AS v JOIN messages AS m ON m.rowid = v.message_rowid"
            " WHERE v.message_rowid > ? ORDER BY v.message_rowid LIMIT ?",
            (after, limit),
        )
    ]


def unembedded_messages(
    conn: sqlite3.Connection, after: int, limit: int
) -> list[tuple[int, Message]]:
    return [
        (int(r[0]), rows.message(r[1:]))
        for r in conn.execute(
            f"SELECT m.rowid, {COLUMNS} FROM messages AS m WHERE m.rowid > ? AND NOT EXISTS"
            " (SELECT 1 FROM message_vectors AS v WHERE v.message_rowid = m.rowid)"
            " ORDER BY m.rowid LIMIT ?",
            (after, limit),
        )
    ]


def clear_embeddings(conn: sqlite3.Connection) -> int:
    conn.execute("DELETE FROM embedding_model")
    return int(conn.execute("DELETE FROM message_vectors").rowcount)


def embedding_cursor(conn: sqlite3.Connection) -> int:
    """The highest cursor of a stored vector (0 with none): one lookup at the end of the
    primary key, whatever the number of vectors."""
    row = conn.execute("SELECT max(message_rowid) FROM message_vectors").fetchone()
    return int(row[0] or 0)


def resource_embeddings(
    conn: sqlite3.Connection, resource_id: str, after: tuple[str, str] | None, limit: int
) -> list[tuple[str, str, bytes]]:
    """One page of the resource's vectors as ``(thread_id, message_id, vector)``, ordered by
    ``(thread_id, message_id)`` and past ``after`` (keyset paging along the
    ``(resource_id, thread_id, id)`` unique index: each page costs its own rows only)."""
    thread_id, message_id = after if after is not None else ("", "")
    return [
        (r[0], r[1], bytes(r[2]))
        for r in conn.execute(
            "SELECT m.thread_id, m.id, v.vector FROM messages AS m"
            " JOIN message_vectors AS v ON v.message_rowid = m.rowid"
            " WHERE m.resource_id = ? AND (m.thread_id, m.id) > (?, ?)"
            " ORDER BY m.thread_id, m.id LIMIT ?",
            (resource_id, thread_id, message_id, limit),
        )
    ]


def embeddings_of(
    conn: sqlite3.Connection, resource_id: str, keys: str, column: str = "vector"
) -> list[tuple[str, str, bytes]]:
    """The stored vectors of these messages of ``resource_id`` (``keys``: a JSON array of
    ``[thread_id, message_id]`` pairs) as ``(thread_id, message_id, vector)``; messages without
    a vector, or of another resource, are left out. ``column="sentences"``: their sentences'
    vectors instead (:class:`~memvault.stores.capabilities.SentenceVectors`)."""
    if column not in ("vector", "sentences"):
        raise ValueError(f"no vector column {column!r}")
    return [
        (r[0], r[1], bytes(r[2]))
        for r in conn.execute(
            f"SELECT m.thread_id, m.id, v.{column} FROM json_each(?) AS k"
            " CROSS JOIN messages AS m ON m.resource_id = ?"  # CROSS JOIN: the keys drive
            " AND m.thread_id = json_extract(k.value, '$[0]') AND m.id = json_extract(k.value, '$[1]')"
            f" JOIN message_vectors AS v ON v.message_rowid = m.rowid AND v.{column} IS NOT NULL",
            (keys, resource_id),
        )
    ]
