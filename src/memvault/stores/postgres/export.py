"""Transaction bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.ExportStore`
capability. Every listing reads a primary key (``(resource_id, ...)``) in index order."""

from __future__ import annotations

from memvault.model import State, Summary, Thread
from memvault.stores import rows
from memvault.stores.common import RECORD_TABLES, RESOURCE_IDS_SQL, record_counts_sql, to_micros, upsert_sql
from memvault.stores.postgres.db import Conn
from memvault.stores.postgres.records import check_state_thread


async def resource_ids(conn: Conn) -> list[str]:
    cursor = await conn.execute(RESOURCE_IDS_SQL)
    return [str(r[0]) for r in await cursor.fetchall()]


_COUNTS = record_counts_sql("%s")
_UPSERT_THREAD = upsert_sql("threads", rows.THREAD_WRITE_COLUMNS, "resource_id, id", "%s")
_UPSERT_STATE = upsert_sql("states", rows.STATE_COLUMNS, "resource_id, key", "%s")
_UPSERT_SUMMARY = upsert_sql("summaries", rows.SUMMARY_COLUMNS, "resource_id, thread_id", "%s")


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
    await conn.execute(_UPSERT_THREAD, rows.thread_values(thread))


async def restore_state(conn: Conn, state: State) -> None:
    await check_state_thread(conn, state)
    await conn.execute(
        _UPSERT_STATE,
        (state.resource_id, state.key, rows.dumps(state.value), state.status, state.version,
         to_micros(state.updated_at), state.workflow_id, state.thread_id, to_micros(state.created_at)),
    )


async def restore_summary(conn: Conn, summary: Summary) -> None:
    await conn.execute(_UPSERT_SUMMARY, rows.summary_values(summary))
