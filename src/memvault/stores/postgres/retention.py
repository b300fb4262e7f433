"""Transaction bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.Retention`.

Policies live in ``retention`` (one row per resource, ``''`` for the store-wide one), as
maximum ages in microseconds. Every message read filters with :data:`VISIBLE`, a subquery
PostgreSQL runs once per statement (an init plan over the primary key), so reads stay one
statement each.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memvault.model import now
from memvault.stores.common import MICROSECOND, to_micros
from memvault.stores.postgres.db import Conn


def visible(alias: str) -> str:
    """The condition on ``messages AS <alias>`` leaving out the resource's expired messages;
    its arguments (``now``, ``resource``) come from :func:`visible_args`."""
    return (f"{alias}.created_us >= COALESCE((SELECT %(now)s - r.max_age_us FROM retention AS r"
            " WHERE r.resource_id IN (%(resource)s, '') ORDER BY r.resource_id DESC LIMIT 1),"
            " '-9223372036854775808'::bigint)")


VISIBLE = visible("m")
""":func:`visible` on ``messages AS m``."""


def visible_args(resource_id: str, at: datetime | None = None) -> dict[str, Any]:
    """The arguments :data:`VISIBLE` reads: the resource, and now in microseconds."""
    return {"resource": resource_id, "now": to_micros(at or now())}


async def set_retention(conn: Conn, resource_id: str, max_age: timedelta | None) -> None:
    if max_age is None:
        await conn.execute("DELETE FROM retention WHERE resource_id = %s", (resource_id,))
        return
    await conn.execute(
        "INSERT INTO retention (resource_id, max_age_us) VALUES (%s, %s)"
        " ON CONFLICT (resource_id) DO UPDATE SET max_age_us = excluded.max_age_us",
        (resource_id, max_age // MICROSECOND),
    )


async def retention_policies(conn: Conn) -> dict[str, timedelta]:
    cursor = await conn.execute("SELECT resource_id, max_age_us FROM retention ORDER BY resource_id")
    return {str(r): int(age) * MICROSECOND for r, age in await cursor.fetchall()}


_STORE_WIDE_EXPIRED = (
    "(m.resource_id IN (SELECT resource_id FROM retention)"
    "  OR EXISTS (SELECT 1 FROM retention WHERE resource_id = ''))"
    " AND m.created_us < %(now)s - COALESCE((SELECT max_age_us FROM retention AS r"
    "  WHERE r.resource_id = m.resource_id),"
    "  (SELECT max_age_us FROM retention WHERE resource_id = ''))")
"""The condition on ``messages AS m`` that a message has expired under its resource's policy or
the store-wide one (every resource's)."""


async def expire_messages(conn: Conn, at: datetime, resource_id: str | None) -> list[tuple[str, str, str]]:
    """Delete the expired messages of ``resource_id`` (or of every resource with an effective
    policy; a store-wide policy makes finding them a scan of every message). Vectors and
    covering summaries go with them, by the schema's triggers. Returns their (resource id,
    thread id, id).

    The store's lock order: the threads holding expired messages are locked first, sorted by
    ``(resource_id, id)``, and only their messages are deleted, so expiry queues behind a save, a
    deletion or a vector write on one of those threads instead of deadlocking with it on message
    rows. A thread that gains an expired message after the lock (a save with an old date) keeps
    it until the next sweep."""
    if resource_id is not None:
        expired, args = f"m.resource_id = %(resource)s AND NOT ({VISIBLE})", visible_args(resource_id, at)
    else:
        expired, args = _STORE_WIDE_EXPIRED, {"now": to_micros(at)}
    cursor = await conn.execute(
        "SELECT t.resource_id, t.id FROM threads AS t WHERE (t.resource_id, t.id) IN"
        f" (SELECT DISTINCT m.resource_id, m.thread_id FROM messages AS m WHERE {expired})"
        " ORDER BY t.resource_id, t.id FOR NO KEY UPDATE OF t", args)
    locked = await cursor.fetchall()
    if not locked:
        return []
    cursor = await conn.execute(
        "DELETE FROM messages AS m USING unnest(%(resources)s::text[], %(threads)s::text[]) AS l(r, t)"
        f" WHERE m.resource_id = l.r AND m.thread_id = l.t AND {expired}"
        " RETURNING m.resource_id, m.thread_id, m.id",
        {**args, "resources": [r for r, _ in locked], "threads": [t for _, t in locked]})
    return [(str(r), str(t), str(i)) for r, t, i in await cursor.fetchall()]
