"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.Retention`.

Policies live in ``retention`` (one row per resource, ``''`` for the store-wide one), as
maximum ages in microseconds. :func:`cutoff_us` is read by every message read: a primary-key
lookup, so a store without policies pays one probe of an empty table.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from memvault.model import now
from memvault.stores.capabilities import STORE_DEFAULT
from memvault.stores.common import MICROSECOND, to_micros


def cutoff_us(conn: sqlite3.Connection, resource_id: str, at: datetime | None = None) -> int | None:
    """The oldest ``created_us`` the resource's reads return at ``at`` (default now), or
    ``None`` when neither the resource nor the store has a policy."""
    row = conn.execute(
        "SELECT max_age_us FROM retention WHERE resource_id IN (?, ?) ORDER BY resource_id DESC LIMIT 1",
        (resource_id, STORE_DEFAULT),
    ).fetchone()
    return None if row is None else to_micros(at or now()) - int(row[0])


def set_retention(conn: sqlite3.Connection, resource_id: str, max_age: timedelta | None) -> None:
    if max_age is None:
        conn.execute("DELETE FROM retention WHERE resource_id = ?", (resource_id,))
        return
    conn.execute(
        "INSERT INTO retention (resource_id, max_age_us) VALUES (?, ?)"
        " ON CONFLICT (resource_id) DO UPDATE SET max_age_us = excluded.max_age_us",
        (resource_id, max_age // MICROSECOND),
    )


def retention_policies(conn: sqlite3.Connection) -> dict[str, timedelta]:
    return {str(resource_id): int(age) * MICROSECOND for resource_id, age in conn.execute(
        "SELECT resource_id, max_age_us FROM retention ORDER BY resource_id")}


def expire_messages(
    conn: sqlite3.Connection, at: datetime, resource_id: str | None
) -> list[tuple[str, str, str]]:
    """Delete the expired messages of ``resource_id`` (or of every resource with an effective
    policy; a store-wide policy makes that a scan of every message). Their full-text entries,
    vectors and covering summaries go with them, by the schema's triggers. Returns their
    (resource id, thread id, id)."""
    if resource_id is not None:
        cutoff = cutoff_us(conn, resource_id, at)
        if cutoff is None:
            return []
        found = conn.execute("DELETE FROM messages WHERE resource_id = ? AND created_us < ?"
                             " RETURNING resource_id, thread_id, id", (resource_id, cutoff))
    else:
        found = conn.execute(
            "DELETE FROM messages WHERE (resource_id IN (SELECT resource_id FROM retention)"
            "  OR EXISTS (SELECT 1 FROM retention WHERE resource_id = ?))"
            " AND created_us < ? - COALESCE((SELECT max_age_us FROM retention AS r"
            "  WHERE r.resource_id = messages.resource_id), (SELECT max_age_us FROM retention AS r"
            "  WHERE r.resource_id = ?)) RETURNING resource_id, thread_id, id",
            (STORE_DEFAULT, to_micros(at), STORE_DEFAULT))
    return [(str(r), str(t), str(i)) for r, t, i in found]
