"""Transaction bodies of the PostgreSQL store's messages.

Saving first upserts the thread's row, which bumps ``updated_us`` and holds the row's lock
until commit: concurrent writers of one thread, in any process, queue there. Holding it, a
save reads which ids the thread already has, reserves seqs for the new ones by advancing
``threads.next_seq``, and upserts the messages, so seqs are total, gap-free and never reused.
"""

from __future__ import annotations

from typing import Any

from memvault.errors import NotFoundError
from memvault.model import Message, now
from memvault.stores import rows
from memvault.stores.base import MessageQuery
from memvault.stores.common import to_micros
from memvault.stores.postgres.db import Conn
from memvault.stores.postgres.retention import VISIBLE, visible_args
from memvault.stores.postgres.search import COLUMNS
from memvault.stores.postgres.threads import lock_thread

Prepared = tuple[Message, str, str, str]
"""A message to save with its parts JSON, metadata JSON and search document."""
_THREAD = f"m.resource_id = %(resource)s AND m.thread_id = %(thread)s AND {VISIBLE}"
"""A thread's messages that are not expired (:mod:`.retention`)."""


async def save_messages(conn: Conn, resource_id: str, thread_id: str, prepared: list[Prepared]) -> list[int]:
    """Insert or update the messages (creating the thread); returns their seqs, in order."""
    stamp = to_micros(now())
    cursor = await conn.execute(
        "INSERT INTO threads (resource_id, id, created_us, updated_us) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (resource_id, id) DO UPDATE SET updated_us = excluded.updated_us"
        " RETURNING next_seq",
        (resource_id, thread_id, stamp, stamp),
    )
    row = await cursor.fetchone()
    assert row is not None
    next_seq: int = row[0]
    latest = {p[0].id: p for p in prepared}  # an id given twice is stored once, as given last
    seqs = await _seqs(conn, resource_id, thread_id, list(latest))
    first_new = next_seq
    for message_id in latest:
        if message_id not in seqs:
            seqs[message_id] = next_seq
            next_seq += 1
    if next_seq > first_new:
        await conn.execute(
            "UPDATE threads SET next_seq = %s WHERE resource_id = %s AND id = %s",
            (next_seq, resource_id, thread_id),
        )
    batch = list(latest.values())
    await conn.execute(
        "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata, created_us, search)"
        " SELECT %s, %s, u.id, u.seq, u.role, u.parts, u.metadata, u.created_us,"
        " to_tsvector('simple', u.document) FROM unnest(%s::text[], %s::bigint[], %s::text[],"
        " %s::text[], %s::text[], %s::bigint[], %s::text[])"
        " AS u(id, seq, role, parts, metadata, created_us, document)"
        " ON CONFLICT (resource_id, thread_id, id) DO UPDATE SET role = excluded.role,"
        " parts = excluded.parts, metadata = excluded.metadata, created_us = excluded.created_us,"
        " search = excluded.search",
        (resource_id, thread_id, [m.id for m, *_ in batch], [seqs[m.id] for m, *_ in batch],
         [m.role for m, *_ in batch], [p[1] for p in batch], [p[2] for p in batch],
         [to_micros(m.created_at) for m, *_ in batch], [p[3] for p in batch]),
    )
    return [seqs[p[0].id] for p in prepared]


async def _seqs(conn: Conn, resource_id: str, thread_id: str, ids: list[str]) -> dict[str, int]:
    cursor = await conn.execute(
        "SELECT id, seq FROM messages WHERE resource_id = %s AND thread_id = %s AND id = ANY(%s::text[])",
        (resource_id, thread_id, ids),
    )
    return {message_id: seq for message_id, seq in await cursor.fetchall()}


async def get_messages(conn: Conn, resource_id: str, thread_id: str, query: MessageQuery) -> list[Message]:
    """The messages ``query`` selects (see :class:`MessageQuery`), in seq order; expired messages
    (the resource's retention policy) are left out."""
    args: dict[str, Any] = {**visible_args(resource_id), "thread": thread_id}
    if query.ids is not None:
        found = await _around(conn, args, list(query.ids), query.message_range)
        if query.last_n is not None:
            found = found[-query.last_n :] if query.last_n else []
        if query.first_n is not None:
            found = found[: query.first_n]
        return found
    where = _THREAD
    if query.after is not None or query.before is not None:
        if not await _thread_exists(conn, resource_id, thread_id):
            return []  # a missing thread has no messages, whatever the cursor
        for name, message_id, op in (("after", query.after, ">"), ("before", query.before, "<")):
            if message_id is not None:
                args[name] = await _seq_of(conn, resource_id, thread_id, message_id)
                where += f" AND m.seq {op} %({name})s"
    select = f"SELECT {COLUMNS} FROM messages AS m WHERE {where}"
    if query.last_n is not None:
        args["n"] = query.last_n
        cursor = await conn.execute(f"{select} ORDER BY m.seq DESC LIMIT %(n)s", args)
        return [rows.message(r) for r in reversed(await cursor.fetchall())]
    elif query.first_n is not None:
        args["n"] = query.first_n
        cursor = await conn.execute(f"{select} ORDER BY m.seq LIMIT %(n)s", args)
    else:
        cursor = await conn.execute(f"{select} ORDER BY m.seq", args)
    return [rows.message(r) for r in await cursor.fetchall()]


async def _around(conn: Conn, args: dict[str, Any], ids: list[str], message_range: int) -> list[Message]:
    """The messages with these ids and ``message_range`` neighbours on each side (by position,
    not seq: deleted messages leave no hole), in seq order."""
    if not ids:
        return []
    neighbours = ""
    if message_range:
        neighbours = (
            f" UNION SELECT b.seq FROM hit, LATERAL (SELECT m.seq FROM messages AS m WHERE {_THREAD}"
            "  AND m.seq < hit.seq ORDER BY m.seq DESC LIMIT %(range)s) AS b"
            f" UNION SELECT a.seq FROM hit, LATERAL (SELECT m.seq FROM messages AS m WHERE {_THREAD}"
            "  AND m.seq > hit.seq ORDER BY m.seq LIMIT %(range)s) AS a"
        )
    cursor = await conn.execute(
        f"WITH hit AS (SELECT m.seq FROM messages AS m WHERE {_THREAD} AND m.id = ANY(%(ids)s::text[])),"
        f" wanted AS (SELECT seq FROM hit{neighbours})"
        f" SELECT {COLUMNS} FROM messages AS m WHERE {_THREAD} AND m.seq IN (SELECT seq FROM wanted)"
        " ORDER BY m.seq",
        {**args, "ids": ids, "range": message_range},
    )
    return [rows.message(r) for r in await cursor.fetchall()]


async def _thread_exists(conn: Conn, resource_id: str, thread_id: str) -> bool:
    cursor = await conn.execute(
        "SELECT 1 FROM threads WHERE resource_id = %s AND id = %s", (resource_id, thread_id)
    )
    return await cursor.fetchone() is not None


async def _seq_of(conn: Conn, resource_id: str, thread_id: str, message_id: str) -> int:
    cursor = await conn.execute(
        "SELECT seq FROM messages WHERE resource_id = %s AND thread_id = %s AND id = %s",
        (resource_id, thread_id, message_id),
    )
    row = await cursor.fetchone()
    if row is None:
        raise NotFoundError(f"message {message_id!r} is not in this thread")
    return int(row[0])


async def delete_messages(conn: Conn, resource_id: str, thread_id: str, ids: list[str]) -> int:
    """Delete these messages (vectors and a summary that covers them go too); returns how many
    existed."""
    if not ids or not await lock_thread(conn, resource_id, thread_id):
        return 0
    cursor = await conn.execute(
        "DELETE FROM messages WHERE resource_id = %s AND thread_id = %s AND id = ANY(%s::text[])",
        (resource_id, thread_id, ids),
    )
    return cursor.rowcount


async def clear_thread(conn: Conn, resource_id: str, thread_id: str) -> int:
    if not await lock_thread(conn, resource_id, thread_id):
        return 0
    cursor = await conn.execute(
        "DELETE FROM messages WHERE resource_id = %s AND thread_id = %s", (resource_id, thread_id)
    )
    return cursor.rowcount
