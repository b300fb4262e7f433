"""Transaction bodies of the PostgreSQL store's working memory and states.

- A working-memory update locks the row (``SELECT ... FOR UPDATE``) and applies the update
  function in Python before writing, all in one transaction: no writer in any process runs
  between the read and the write. When there is no row to lock yet and another writer creates
  it first, the insert finds it, and the update function runs again on that content.
- A state write is one statement: the version check (compare-and-set) and the increment happen
  in the row's upsert or update, so concurrent writers have exactly one winner.
- Both carry an operation id (:mod:`~.ops`), claimed first: a run after one that committed
  applies nothing. It returns the state with the version the first run wrote (or ``None`` if that
  run's compare-and-set failed), and the note's current content (a later writer's if one wrote
  since: a read after the update).
"""

from __future__ import annotations

from typing import Any

from memvault.errors import NotFoundError, ThreadNotFoundError
from memvault.model import State, now
from memvault.stores import rows
from memvault.stores.base import WorkingMemoryUpdate, _Unset
from memvault.stores.common import from_micros, to_micros, updated_state
from memvault.stores.postgres.db import Conn, Cursor
from memvault.stores.postgres.ops import Op, claim, record

_KEY = "resource_id = %s AND key = %s"


GET_NOTE = f"SELECT content FROM working_memory WHERE {_KEY}"
"""A working memory's content (arguments: the resource and the note's key)."""


async def get_working_memory(conn: Conn, resource_id: str, key: str, *, lock: bool = False) -> str | None:
    return await note_of(await conn.execute(GET_NOTE + (" FOR UPDATE" if lock else ""), (resource_id, key)))


async def note_of(cursor: Cursor) -> str | None:
    """The content of an executed :data:`GET_NOTE` statement (``None``: never written)."""
    row = await cursor.fetchone()
    return str(row[0]) if row else None


async def update_working_memory(
    conn: Conn, resource_id: str, key: str, update: WorkingMemoryUpdate, op: Op
) -> str | None:
    first, _ = await claim(conn, op)
    if not first:  # an earlier run of this call committed
        return await get_working_memory(conn, resource_id, key)
    while True:
        current = await get_working_memory(conn, resource_id, key, lock=True)
        content = update(current)
        if current is not None:
            if content is None:
                await conn.execute(f"DELETE FROM working_memory WHERE {_KEY}", (resource_id, key))
            else:
                await conn.execute(
                    f"UPDATE working_memory SET content = %s, updated_us = %s WHERE {_KEY}",
                    (content, to_micros(now()), resource_id, key),
                )
            return content
        if content is None:
            return None
        cursor = await conn.execute(
            "INSERT INTO working_memory (resource_id, key, content, updated_us) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING",
            (resource_id, key, content, to_micros(now())),
        )
        if cursor.rowcount:
            return content
        # another writer created it since our read: lock it and apply the update to its content


async def get_state(conn: Conn, resource_id: str, key: str) -> State | None:
    cursor = await conn.execute(f"SELECT {rows.STATE_COLUMNS} FROM states WHERE {_KEY}", (resource_id, key))
    row = await cursor.fetchone()
    return rows.state(row) if row else None


async def set_state(
    conn: Conn, state: State, expected_version: int | _Unset | None, op: Op
) -> State | None:
    """Write ``state`` with the next version; with ``expected_version``, only if the current
    version is that (``None``: no state yet), else nothing and ``None``."""
    first, version = await claim(conn, op)
    if not first:  # an earlier run of this call committed: what it wrote
        return None if version is None else await _as_written(conn, state, version)
    await check_state_thread(conn, state)
    values = (state.resource_id, state.key, rows.dumps(state.value), state.status,
              to_micros(state.updated_at), state.workflow_id, state.thread_id, to_micros(state.created_at))
    insert = f"INSERT INTO states ({rows.STATE_COLUMNS}) VALUES (%s, %s, %s, %s, 1, %s, %s, %s, %s)"
    if isinstance(expected_version, _Unset):
        cursor = await conn.execute(
            f"{insert} ON CONFLICT (resource_id, key) DO UPDATE SET value = excluded.value,"
            " status = excluded.status, version = states.version + 1, updated_us = excluded.updated_us,"
            " workflow_id = excluded.workflow_id, thread_id = excluded.thread_id"
            " RETURNING version, created_us",
            values,
        )
    elif expected_version is None:
        cursor = await conn.execute(f"{insert} ON CONFLICT DO NOTHING RETURNING version, created_us", values)
    else:
        cursor = await conn.execute(
            "UPDATE states SET value = %s, status = %s, version = version + 1, updated_us = %s,"
            f" workflow_id = %s, thread_id = %s WHERE {_KEY} AND version = %s RETURNING version, created_us",
            (*values[2:7], *values[:2], expected_version),
        )
    row = await cursor.fetchone()
    await record(conn, op, None if row is None else int(row[0]))
    if row is None:
        return None
    return state.model_copy(update={"version": int(row[0]), "created_at": from_micros(int(row[1]))})


async def _as_written(conn: Conn, state: State, version: int) -> State:
    """What an earlier, committed run of a state write returned: the stored state when no later
    writer changed it, else ``state`` at the version that run wrote."""
    stored = await get_state(conn, state.resource_id, state.key)
    return stored if stored is not None and stored.version == version else state.model_copy(
        update={"version": version})


async def check_state_thread(conn: Conn, state: State) -> None:
    """:class:`ThreadNotFoundError` when the state names a thread the resource does not have;
    else the thread's row is locked against deletion (``FOR KEY SHARE``) until the commit."""
    if state.thread_id is None:
        return
    cursor = await conn.execute("SELECT 1 FROM threads WHERE resource_id = %s AND id = %s FOR KEY SHARE",
                                (state.resource_id, state.thread_id))
    if await cursor.fetchone() is None:
        raise ThreadNotFoundError(state.thread_id)


async def update_state(conn: Conn, resource_id: str, key: str, merge: Any, status: Any,
                       expected_version: int | None, op: Op) -> State | None:
    """``update_state``: the row locked (``SELECT ... FOR UPDATE``) from the read to the write,
    the merge applied in Python, in one transaction. A run after one that committed returns the
    state as stored now (``None`` if that run's version check failed)."""
    first, version = await claim(conn, op)
    if not first:
        return None if version is None else await get_state(conn, resource_id, key)
    cursor = await conn.execute(f"SELECT {rows.STATE_COLUMNS} FROM states WHERE {_KEY} FOR UPDATE",
                                (resource_id, key))
    row = await cursor.fetchone()
    if row is None:
        raise NotFoundError(f"no state {key!r} for this resource")
    current = rows.state(row)
    if expected_version is not None and expected_version != current.version:
        return None
    state = updated_state(current, merge, status)
    await conn.execute(
        f"UPDATE states SET value = %s, status = %s, version = %s, updated_us = %s WHERE {_KEY}",
        (rows.dumps(state.value), state.status, state.version, to_micros(state.updated_at), resource_id, key))
    await record(conn, op, state.version)
    return state


async def list_states(
    conn: Conn, resource_id: str, filters: dict[str, str | None], limit: int
) -> list[State]:
    """The states with each non-``None`` ``filters`` column equal, newest update first."""
    query, args = rows.states_sql(filters, "%s")
    cursor = await conn.execute(query, (resource_id, *args, limit))
    return [rows.state(r) for r in await cursor.fetchall()]


async def delete_state(conn: Conn, resource_id: str, key: str) -> bool:
    cursor = await conn.execute(f"DELETE FROM states WHERE {_KEY}", (resource_id, key))
    return cursor.rowcount > 0
