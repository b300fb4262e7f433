"""Bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.BatchReads`: several
reads on one pooled connection (one checkout, no explicit transaction, as every read)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memvault.stores.capabilities import TurnRead
from memvault.stores.postgres import messages as _messages
from memvault.stores.postgres import records as _records
from memvault.stores.postgres import summaries as _summaries
from memvault.stores.postgres.db import Conn
from memvault.stores.postgres.retention import visible_args

T = TypeVar("T")


async def read_turn(conn: Conn, resource_id: str, thread_id: str, last_n: int, note_key: str) -> TurnRead:
    """The thread's newest ``last_n`` messages, its summary and the note, as ``get_messages``,
    ``get_summary`` and ``get_working_memory`` read them: the three statements sent in one
    network round trip (psycopg's pipeline mode)."""
    async with conn.pipeline():
        window = await conn.execute(_messages.newest(), {**visible_args(resource_id), "thread": thread_id,
                                                         "n": last_n})
        summary = await conn.execute(_summaries.GET_SUMMARY, (resource_id, thread_id))
        note = await conn.execute(_records.GET_NOTE, (resource_id, note_key))
    return TurnRead(await _messages.newest_of(window), await _summaries.summary_of(summary),
                    await _records.note_of(note))


async def read_rows_around(
    conn: Conn, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int,
    make: Callable[[Any], T],
) -> dict[str, list[T]]:
    """For each thread, what ``get_messages(..., MessageQuery(ids=..., message_range=...))``
    reads, each row made into what ``make`` makes of it, in one network round trip."""
    found = await _messages.rows_around(conn, resource_id, ids, message_range)
    return {thread_id: [make(row) for row in found.get(thread_id, ())] for thread_id in ids}
