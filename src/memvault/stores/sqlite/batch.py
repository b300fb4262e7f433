"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.BatchReads`:
several reads on one connection, in one read transaction (one snapshot)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from memvault.model import Message
from memvault.stores.base import MessageQuery
from memvault.stores.capabilities import TurnRead
from memvault.stores.sqlite import messages as _messages
from memvault.stores.sqlite import records as _records
from memvault.stores.sqlite import summaries as _summaries


def read_turn(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, last_n: int, note_key: str
) -> TurnRead:
    return TurnRead(_messages.get_messages(conn, resource_id, thread_id, MessageQuery(last_n=last_n)),
                    _summaries.get_summary(conn, resource_id, thread_id),
                    _records.get_working_memory(conn, resource_id, note_key))


def read_around(
    conn: sqlite3.Connection, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
) -> dict[str, list[Message]]:
    return {thread_id: _messages.get_messages(conn, resource_id, thread_id,
                                              MessageQuery(ids=list(found), message_range=message_range))
            for thread_id, found in ids.items()}
