"""Transaction bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.EmbeddingStore`
capability: message vectors as float32 ``bytea`` keyed by the message's ``pk`` (the cursor: an
identity column, so it grows with each message first stored and is never reused). A vector
goes with its message (``ON DELETE CASCADE``) and when its parts change (a trigger)."""

from __future__ import annotations

from collections.abc import Sequence

from memvault.errors import ConfigurationError
from memvault.model import Message
from memvault.stores import rows
from memvault.stores.capabilities import VectorRow, sentences_of
from memvault.stores.common import embedding_mismatch
from memvault.stores.postgres.db import Conn
from memvault.stores.postgres.search import COLUMNS


async def embedding_model(conn: Conn) -> tuple[str, int] | None:
    cursor = await conn.execute("SELECT model, dimensions FROM embedding_model")
    row = await cursor.fetchone()
    return (str(row[0]), int(row[1])) if row else None


async def save_embeddings(conn: Conn, model: str, dimensions: int, items: Sequence[VectorRow]) -> int:
    """Record ``model`` on first use (one row, whoever comes first), refuse another model's
    vectors, and upsert the vectors of the messages that exist; returns how many rows were
    stored (a message given twice keeps the later vector and counts twice)."""
    await conn.execute(
        "INSERT INTO embedding_model (model, dimensions) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (model, dimensions),
    )
    recorded = await embedding_model(conn)
    if recorded != (model, dimensions):
        assert recorded is not None
        raise ConfigurationError(embedding_mismatch(recorded, (model, dimensions)))
    latest = {item[:3]: (bytes(item[3]), sentences_of(item)) for item in items}
    keys = list(latest)
    threads = sorted({key[:2] for key in keys})
    # the store's lock order: the threads' rows first (sorted, shared), so whoever deletes or
    # clears one of them waits for this write, or this write for it, instead of both meeting
    # on message rows taken in different orders
    await conn.execute(
        "SELECT 1 FROM threads WHERE (resource_id, id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
        " ORDER BY resource_id, id FOR SHARE",
        ([t[0] for t in threads], [t[1] for t in threads]),
    )
    cursor = await conn.execute(
        "WITH found AS (SELECT m.pk, m.resource_id, m.thread_id, m.id, u.vector, u.sentences"
        " FROM unnest(%s::text[], %s::text[], %s::text[], %s::bytea[], %s::bytea[])"
        " AS u(resource_id, thread_id, id, vector, sentences)"
        " JOIN messages AS m ON m.resource_id = u.resource_id AND m.thread_id = u.thread_id AND m.id = u.id"
        # a message deleted meanwhile is skipped, not a foreign key error
        " ORDER BY m.pk FOR KEY SHARE OF m),"
        " stored AS (INSERT INTO message_vectors (message_pk, vector, sentences)"
        # in cursor order, so two writers of the same vectors take their rows in one order
        " SELECT pk, vector, sentences FROM found ORDER BY pk ON CONFLICT (message_pk) DO UPDATE"
        " SET vector = excluded.vector, sentences = excluded.sentences)"
        " SELECT resource_id, thread_id, id FROM found",
        ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], [latest[k][0] for k in keys],
         [latest[k][1] for k in keys]),
    )
    stored = {tuple(row) for row in await cursor.fetchall()}
    return sum(1 for item in items if item[:3] in stored)


async def load_embeddings(conn: Conn, after: int, limit: int) -> list[tuple[int, str, str, str, bytes]]:
    cursor = await conn.execute(
        "SELECT v.message_pk, m.resource_id, m.thread_id, m.id, v.vector"
        " FROM message_vectors AS v JOIN messages AS m ON m.pk = v.message_pk"
        " WHERE v.message_pk > %s ORDER BY v.message_pk LIMIT %s",
        (after, limit),
    )
    return [(int(r[0]), r[1], r[2], r[3], bytes(r[4])) for r in await cursor.fetchall()]


async def unembedded_messages(conn: Conn, after: int, limit: int) -> list[tuple[int, Message]]:
    cursor = await conn.execute(
        f"SELECT m.pk, {COLUMNS} FROM messages AS m WHERE m.pk > %s AND NOT EXISTS"
        " (SELECT 1 FROM message_vectors AS v WHERE v.message_pk = m.pk) ORDER BY m.pk LIMIT %s",
        (after, limit),
    )
    return [(int(r[0]), rows.message(r[1:])) for r in await cursor.fetchall()]


async def clear_embeddings(conn: Conn) -> int:
    await conn.execute("DELETE FROM embedding_model")
    cursor = await conn.execute("DELETE FROM message_vectors")
    return cursor.rowcount


async def embedding_cursor(conn: Conn) -> int:
    """The highest cursor of a stored vector (0 with none): one probe of the primary key."""
    cursor = await conn.execute("SELECT coalesce(max(message_pk), 0) FROM message_vectors")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def resource_embeddings(
    conn: Conn, resource_id: str, after: tuple[str, str] | None, limit: int
) -> list[tuple[str, str, bytes]]:
    """One page of the resource's vectors as ``(thread_id, message_id, vector)``, ordered by
    ``(thread_id, message_id)`` past ``after`` (keyset paging along the
    ``(resource_id, thread_id, id)`` unique index, whose "C" collation is this order)."""
    thread_id, message_id = after if after is not None else ("", "")
    cursor = await conn.execute(
        "SELECT m.thread_id, m.id, v.vector FROM messages AS m"
        " JOIN message_vectors AS v ON v.message_pk = m.pk"
        " WHERE m.resource_id = %s AND (m.thread_id, m.id) > (%s, %s)"
        " ORDER BY m.thread_id, m.id LIMIT %s",
        (resource_id, thread_id, message_id, limit),
    )
    return [(r[0], r[1], bytes(r[2])) for r in await cursor.fetchall()]


async def embeddings_of(
    conn: Conn, resource_id: str, keys: Sequence[tuple[str, str]], column: str = "vector"
) -> list[tuple[str, str, bytes]]:
    """The stored vectors of these ``(thread_id, message_id)`` messages of ``resource_id``;
    messages without one, or of another resource, are left out. ``column="sentences"``: their
    sentences' vectors instead (:class:`~memvault.stores.capabilities.SentenceVectors`)."""
    if column not in ("vector", "sentences"):
        raise ValueError(f"no vector column {column!r}")
    cursor = await conn.execute(
        f"SELECT m.thread_id, m.id, v.{column} FROM unnest(%s::text[], %s::text[]) AS k(t, i)"
        " JOIN messages AS m ON m.resource_id = %s AND m.thread_id = k.t AND m.id = k.i"
        f" JOIN message_vectors AS v ON v.message_pk = m.pk AND v.{column} IS NOT NULL",
        ([k[0] for k in keys], [k[1] for k in keys], resource_id),
    )
    return [(r[0], r[1], bytes(r[2])) for r in await cursor.fetchall()]
