"""Bodies of the PostgreSQL store's :class:`~memvault.stores.capabilities.BatchReads`: several
reads on one pooled connection (one checkout, no explicit transaction, as every read)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memvault.model import Message
from memvault.stores.base import MessageQuery
from memvault.stores.capabilities import TurnRead
from memvault.stores.postgres import messages as _messages
from memvault.stores.postgres import records as _records
from memvault.stores.postgres import summaries as _summaries
from memvault.stores.postgres.db import Conn


async def read_turn(conn: Conn, resource_id: str, thread_id: str, last_n: int, note_key: str) -> TurnRead:
    return TurnRead(await _messages.get_messages(conn, resource_id, thread_id, MessageQuery(last_n=last_n)),
                    await _summaries.get_summary(conn, resource_id, thread_id),
                    await _records.get_working_memory(conn, resource_id, note_key))


async def read_around(
    conn: Conn, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
) -> dict[str, list[Message]]:
    return {thread_id: await _messages.get_messages(
                conn, resource_id, thread_id, MessageQuery(ids=list(found), message_range=message_range))
            for thread_id, found in ids.items()}
