"""Transaction bodies of the SQLite store's working memory and states.

Each runs in the write's one ``BEGIN IMMEDIATE`` transaction (:mod:`.worker`): no writer in any
process runs between a working-memory update's read and its write, or between a state's version
check (compare-and-set) and its upsert.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memvault.errors import NotFoundError, ThreadNotFoundError
from memvault.model import State, now
from memvault.stores import rows
from memvault.stores.base import WorkingMemoryUpdate, _Unset
from memvault.stores.common import to_micros, updated_state, upsert_sql


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
            state.version, to_micros(state.updated_at), state.workflow_id, state.thread_id,
            to_micros(state.created_at))


def check_state_thread(conn: sqlite3.Connection, state: State) -> None:
    """:class:`ThreadNotFoundError` when the state names a thread the resource does not have."""
    if state.thread_id is not None and conn.execute(
            "SELECT 1 FROM threads WHERE resource_id = ? AND id = ?", (state.resource_id, state.thread_id)
    ).fetchone() is None:
        raise ThreadNotFoundError(state.thread_id)


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
    check_state_thread(conn, state)
    current = get_state(conn, state.resource_id, state.key)
    version = current.version if current else None
    if not isinstance(expected_version, _Unset) and expected_version != version:
        return None
    state = state.model_copy(update={"version": (version or 0) + 1,
                                     "created_at": current.created_at if current else state.updated_at})
    conn.execute(UPSERT_STATE, state_values(state))
    return state


def update_state(
    conn: sqlite3.Connection, resource_id: str, key: str, merge: Any, status: Any,
    expected_version: int | None,
) -> State | None:
    """``update_state`` in the write's one transaction: read, check the version, merge, write."""
    current = get_state(conn, resource_id, key)
    if current is None:
        raise NotFoundError(f"no state {key!r} for this resource")
    if expected_version is not None and expected_version != current.version:
        return None
    state = updated_state(current, merge, status)
    conn.execute(UPSERT_STATE, state_values(state))
    return state


def list_states(conn: sqlite3.Connection, resource_id: str, filters: dict[str, str | None],
                limit: int) -> list[State]:
    """The states with each non-``None`` ``filters`` column (``status``, ``workflow_id``,
    ``thread_id``) equal, newest update first."""
    sql, args = rows.states_sql(filters, "?")
    return [rows.state(r) for r in conn.execute(sql, (resource_id, *args, limit))]


def delete_state(conn: sqlite3.Connection, resource_id: str, key: str) -> bool:
    return conn.execute(
        "DELETE FROM states WHERE resource_id = ? AND key = ?", (resource_id, key)
    ).rowcount > 0
