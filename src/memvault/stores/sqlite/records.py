"""Transaction bodies of the SQLite store's working memory and states.

Each runs in the write's one ``BEGIN IMMEDIATE`` transaction (:mod:`.worker`): no writer in any
process runs between a working-memory update's read and its write, or between a state's version
check (compare-and-set) and its upsert.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memvault.model import State, now
from memvault.stores import rows
from memvault.stores.base import WorkingMemoryUpdate, _Unset
from memvault.stores.common import to_micros, upsert_sql


def get_working_memory(conn: sqlite3.Connection, resource_id: str, key: str) -> str | None:
    row = conn.execute(
        "SELECT content FROM working_memory WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).fetchone()
    return str(row[0]) if row else None


def update_working_memory(
    conn: sqlite3.Connection, resource_id: str, key: str, update: WorkingMemoryUpdate
) -> str | None:
    content = update(get_working_memory(conn, resource_id, key))
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


UPSERT_STATE = upsert_sql("states", rows.STATE_COLUMNS, "resource_id, key", "?")
"""Write a whole state row (its values as :func:`state_values` gives them)."""


def state_values(state: State) -> tuple[Any, ...]:
    """The values of :data:`memvault.stores.rows.STATE_COLUMNS` for ``state``, as this store
    writes them (its value JSON with the default separators)."""
    return (state.resource_id, state.key, json.dumps(state.value, ensure_ascii=False), state.status,
            state.version, to_micros(state.updated_at))


def get_state(conn: sqlite3.Connection, resource_id: str, key: str) -> State | None:
    row = conn.execute(
        f"SELECT {rows.STATE_COLUMNS} FROM states WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).fetchone()
    return rows.state(row) if row else None


def set_state(
    conn: sqlite3.Connection, state: State, expected_version: int | _Unset | None
) -> State | None:
    """Write ``state`` with the next version; with ``expected_version``, only if the current
    version is that (``None``: no state yet), else nothing and ``None``."""
    current = get_state(conn, state.resource_id, state.key)
    version = current.version if current else None
    if not isinstance(expected_version, _Unset) and expected_version != version:
        return None
    state = state.model_copy(update={"version": (version or 0) + 1})
    conn.execute(UPSERT_STATE, state_values(state))
    return state


def list_states(
    conn: sqlite3.Connection, resource_id: str, status: str | None, limit: int
) -> list[State]:
    sql = f"SELECT {rows.STATE_COLUMNS} FROM states WHERE resource_id = ?"
    args: list[Any] = [resource_id]
    if status is not None:
        sql += " AND status = ?"
        args.append(status)
    sql += " ORDER BY updated_us DESC, key DESC LIMIT ?"
    return [rows.state(r) for r in conn.execute(sql, (*args, limit))]


def delete_state(conn: sqlite3.Connection, resource_id: str, key: str) -> bool:
    return conn.execute(
        "DELETE FROM states WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).rowcount > 0
