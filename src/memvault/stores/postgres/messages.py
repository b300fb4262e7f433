"""Transaction bodies of the PostgreSQL store's messages.

Saving first upserts the thread's row, which bumps ``updated_us`` and holds the row's lock
until commit: concurrent writers of one thread, in any process, queue there. Holding it, a
save finds which ids the thread already has, reserves seqs for the new ones by advancing
``threads.next_seq``, and upserts the messages, so seqs are total, gap-free and never reused.
That is two statements, sent with ``BEGIN`` and ``COMMIT`` in one round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memvault.errors import NotFoundError
from memvault.model import Message, now
from memvault.stores import rows
from memvault.stores.base import MessageQuery
from memvault.stores.common import to_micros
from memvault.stores.postgres.db import Conn, Cursor, Fetch
from memvault.stores.postgres.retention import VISIBLE, visible_args
from memvault.stores.postgres.search import COLUMNS
from memvault.stores.postgres.threads import lock_thread

Prepared = tuple[Message, str, str, str]
"""A message to save with its parts JSON, metadata JSON and search document."""
_THREAD = f"m.resource_id = %(resource)s AND m.thread_id = %(thread)s AND {VISIBLE}"
"""A thread's messages that are not expired (:mod:`.retention`)."""


async def save_messages(
    conn: Conn, resource_id: str, thread_id: str, prepared: list[Prepared]
) -> Fetch[list[int]]:
    """Insert or update the messages (creating the thread), in two statements sent together
    (:meth:`~.db.Database.write_pipelined`); the returned function reads their seqs, in order.

    The first statement upserts the thread's row, taking its lock; the second, which starts
    after the lock is held and so sees every message committed before, reserves seqs for the
    ids the thread does not have yet (in the order given), upserts the messages and advances
    ``next_seq``."""
    stamp = to_micros(now())
    await conn.execute(
        "INSERT INTO threads (resource_id, id, created_us, updated_us) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (resource_id, id) DO UPDATE SET updated_us = excluded.updated_us",
        (resource_id, thread_id, stamp, stamp),
    )
    batch = list({p[0].id: p for p in prepared}.values())  # an id given twice is stored once, as given last
    cursor = await conn.execute(
        _SAVE,
        {"resource": resource_id, "thread": thread_id, "ids": [m.id for m, *_ in batch],
         "roles": [m.role for m, *_ in batch], "parts": [p[1] for p in batch],
         "metadata": [p[2] for p in batch], "created": [to_micros(m.created_at) for m, *_ in batch],
         "documents": [p[3] for p in batch]},
    )

    async def seqs() -> list[int]:
        found = {message_id: int(seq) for message_id, seq in await cursor.fetchall()}
        return [found[p[0].id] for p in prepared]

    return seqs


_SAVE = (
    "WITH given AS (SELECT * FROM unnest(%(ids)s::text[], %(roles)s::text[], %(parts)s::text[],"
    "  %(metadata)s::text[], %(created)s::bigint[], %(documents)s::text[]) WITH ORDINALITY"
    "  AS u(id, role, parts, metadata, created_us, document, ord)),"
    " known AS (SELECT m.id, m.seq FROM messages AS m WHERE m.resource_id = %(resource)s"
    "  AND m.thread_id = %(thread)s AND m.id = ANY(%(ids)s::text[])),"
    " fresh AS (SELECT g.id, t.next_seq - 1 + row_number() OVER (ORDER BY g.ord) AS seq"
    "  FROM given AS g CROSS JOIN threads AS t WHERE t.resource_id = %(resource)s AND t.id = %(thread)s"
    "  AND NOT EXISTS (SELECT 1 FROM known AS k WHERE k.id = g.id)),"
    " bumped AS (UPDATE threads SET next_seq = next_seq + (SELECT count(*) FROM fresh)"
    "  WHERE resource_id = %(resource)s AND id = %(thread)s AND EXISTS (SELECT 1 FROM fresh)),"
    " saved AS (INSERT INTO messages"
    "  (resource_id, thread_id, id, seq, role, parts, metadata, created_us, search)"
    "  SELECT %(resource)s, %(thread)s, g.id, COALESCE(k.seq, f.seq), g.role, g.parts, g.metadata,"
    "  g.created_us, to_tsvector('simple', g.document)"
    "  FROM given AS g LEFT JOIN known AS k ON k.id = g.id LEFT JOIN fresh AS f ON f.id = g.id"
    "  ORDER BY g.ord"
    "  ON CONFLICT (resource_id, thread_id, id) DO UPDATE SET role = excluded.role,"
    "  parts = excluded.parts, metadata = excluded.metadata, created_us = excluded.created_us,"
    "  search = excluded.search"
    "  RETURNING id, seq)"
    " SELECT id, seq FROM saved"
)
"""The second statement of :func:`save_messages`. ``known``: the given ids the thread has (they
keep their seq); ``fresh``: the others, numbered from ``next_seq`` in the order given."""


async def get_messages(conn: Conn, resource_id: str, thread_id: str, query: MessageQuery) -> list[Message]:
    """The messages ``query`` selects (see :class:`MessageQuery`), in seq order; expired messages
    (the resource's retention policy) are left out."""
    if query.ids is not None:
        around = await rows_around(conn, resource_id, {thread_id: query.ids}, query.message_range)
        found = [rows.message(r) for r in around.get(thread_id, [])]
        if query.last_n is not None:
            found = found[-query.last_n :] if query.last_n else []
        if query.first_n is not None:
            found = found[: query.first_n]
        return found
    args: dict[str, Any] = {**visible_args(resource_id), "thread": thread_id}
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
        return await newest_of(await conn.execute(newest(where), args))
    elif query.first_n is not None:
        args["n"] = query.first_n
        cursor = await conn.execute(f"{select} ORDER BY m.seq LIMIT %(n)s", args)
    else:
        cursor = await conn.execute(f"{select} ORDER BY m.seq", args)
    return [rows.message(r) for r in await cursor.fetchall()]


async def newest_of(cursor: Cursor) -> list[Message]:
    """The messages of an executed :func:`newest` statement, in seq order."""
    return [rows.message(r) for r in reversed(await cursor.fetchall())]


def newest(where: str = _THREAD) -> str:
    """The statement reading the newest ``%(n)s`` messages ``where`` selects (:data:`_THREAD`:
    the thread's, with the arguments of :func:`~.retention.visible_args` and ``thread``),
    newest first."""
    return f"SELECT {COLUMNS} FROM messages AS m WHERE {where} ORDER BY m.seq DESC LIMIT %(n)s"


async def rows_around(
    conn: Conn, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
) -> dict[str, list[tuple[Any, ...]]]:
    """For each thread of ``ids`` that has any, the rows (:data:`~.search.COLUMNS`) of the
    messages with those ids and ``message_range`` unexpired neighbours on each side (by
    position, not seq: deleted messages leave no hole), in seq order. One statement per
    thread, all sent in one network round trip (psycopg's pipeline mode)."""
    wanted = {thread_id: list(dict.fromkeys(found)) for thread_id, found in ids.items() if found}
    if not wanted:
        return {}
    args = visible_args(resource_id)
    sql = _AROUND_NEIGHBOURS if message_range else _AROUND
    async with conn.pipeline():
        cursors = {thread_id: await conn.execute(sql, {**args, "thread": thread_id, "ids": found,
                                                       "range": message_range})
                   for thread_id, found in wanted.items()}
    return {thread_id: await cursor.fetchall() for thread_id, cursor in cursors.items()}


_HIT = f"WITH hit AS (SELECT m.seq FROM messages AS m WHERE {_THREAD} AND m.id = ANY(%(ids)s::text[])),"
_WANTED = (f" SELECT {COLUMNS} FROM messages AS m WHERE {_THREAD} AND m.seq IN (SELECT seq FROM wanted)"
           " ORDER BY m.seq")
_AROUND = _HIT + " wanted AS (SELECT seq FROM hit)" + _WANTED
""":func:`rows_around`'s statement for one thread, with no neighbours."""
_AROUND_NEIGHBOURS = (
    _HIT + " wanted AS (SELECT seq FROM hit"
    f" UNION SELECT b.seq FROM hit, LATERAL (SELECT m.seq FROM messages AS m WHERE {_THREAD}"
    "  AND m.seq < hit.seq ORDER BY m.seq DESC LIMIT %(range)s) AS b"
    f" UNION SELECT a.seq FROM hit, LATERAL (SELECT m.seq FROM messages AS m WHERE {_THREAD}"
    "  AND m.seq > hit.seq ORDER BY m.seq LIMIT %(range)s) AS a)" + _WANTED
)
""":func:`rows_around`'s statement for one thread, with ``%(range)s`` neighbours each side of each hit."""


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
