"""Transaction bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.ExportStore`
capability. Every listing reads a primary key (``(resource_id, ...)``) in index order."""

from __future__ import annotations

from memvault.model import State, Summary, Thread
from memvault.stores import rows
from memvault.stores.common import RECORD_TABLES, record_counts_sql, to_micros
from memvault.stores.postgres.db import Conn


async def resource_ids(conn: Conn) -> list[str]:
    cursor = await conn.execute(
        "SELECT resource_id FROM threads UNION SELECT resource_id FROM working_memory"
        " UNION SELECT resource_id FROM states ORDER BY 1"
    )
    return [str(r[0]) for r in await cursor.fetchall()]


_COUNTS = record_counts_sql("%s")


async def record_counts(conn: Conn, resource_id: str) -> dict[str, int]:
    cursor = await conn.execute(_COUNTS, (resource_id,) * len(RECORD_TABLES))
    row = await cursor.fetchone()
    assert row is not None
    return {kind: int(count) for (kind, _), count in zip(RECORD_TABLES, row, strict=True)}


async def working_memory_keys(conn: Conn, resource_id: str) -> list[str]:
    cursor = await conn.execute(
        "SELECT key FROM working_memory WHERE resource_id = %s ORDER BY key", (resource_id,)
    )
    return [str(r[0]) for r in await cursor.fetchall()]


async def state_keys(conn: Conn, resource_id: str) -> list[str]:
    cursor = await conn.execute("SELECT key FROM states WHERE resource_id = %s ORDER BY key", (resource_id,))
    return [str(r[0]) for r in await cursor.fetchall()]


async def restore_thread(conn: Conn, thread: Thread) -> None:
    await conn.execute(
        "INSERT INTO threads (resource_id, id, title, metadata, created_us, updated_us)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (resource_id, id) DO UPDATE SET title = excluded.title,"
        " metadata = excluded.metadata, created_us = excluded.created_us, updated_us = excluded.updated_us",
        (thread.resource_id, thread.id, thread.title, rows.dumps(thread.metadata),
         to_micros(thread.created_at), to_micros(thread.updated_at)),
    )


async def restore_state(conn: Conn, state: State) -> None:
    await conn.execute(
        "INSERT INTO states (resource_id, key, value, status, version, updated_us)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (resource_id, key) DO UPDATE"
        " SET value = excluded.value, status = excluded.status, version = excluded.version,"
        " updated_us = excluded.updated_us",
        (state.resource_id, state.key, rows.dumps(state.value), state.status, state.version,
         to_micros(state.updated_at)),
    )


async def restore_summary(conn: Conn, summary: Summary) -> None:
    await conn.execute(
        "INSERT INTO summaries (resource_id, thread_id, text, through_seq, through_message_id, version,"
        " updated_us) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (resource_id, thread_id) DO UPDATE"
        " SET text = excluded.text, through_seq = excluded.through_seq,"
        " through_message_id = excluded.through_message_id, version = excluded.version,"
        " updated_us = excluded.updated_us",
        (summary.resource_id, summary.thread_id, summary.text, summary.through_seq,
         summary.through_message_id, summary.version, to_micros(summary.updated_at)),
    )
