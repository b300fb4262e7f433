"""Transaction bodies of the SQLite store's :class:`~memvault.stores.capabilities.BatchReads`:
several reads on one connection, in one read transaction (one snapshot)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memvault.stores import rows
from memvault.stores.base import MessageQuery
from memvault.stores.capabilities import TurnRead
from memvault.stores.sqlite import messages as _messages
from memvault.stores.sqlite import records as _records
from memvault.stores.sqlite import summaries as _summaries
from memvault.stores.sqlite.retention import cutoff_us

T = TypeVar("T")


def read_turn(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, last_n: int, note_key: str
) -> TurnRead:
    return TurnRead(_messages.get_messages(conn, resource_id, thread_id, MessageQuery(last_n=last_n)),
                    _summaries.get_summary(conn, resource_id, thread_id),
                    _records.get_working_memory(conn, resource_id, note_key))


def read_rows_around(
    conn: sqlite3.Connection, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int,
    make: Callable[[Any], T],
) -> dict[str, list[T]]:
    """For each thread, the rows ``get_messages(..., MessageQuery(ids=..., message_range=...))``
    reads, each made into what ``make`` makes of it, in three statements whatever the number of
    threads and ids (:func:`rows_near`)."""
    out: dict[str, list[T]] = {thread_id: [] for thread_id in ids}
    pairs = [[thread_id, message_id]
             for thread_id, found in ids.items() for message_id in dict.fromkeys(found)]
    for row in rows_near(conn, resource_id, _BY_PAIR, pairs, message_range,
                         rows.qualified(rows.MESSAGE_COLUMNS, "m")):
        out[row[1]].append(make(row))
    return out


_BY_PAIR = ("m.resource_id = :resource AND m.thread_id = json_extract(json_each.value, '$[0]')"
            " AND m.id = json_extract(json_each.value, '$[1]')")
"""Finds the message of a ``[thread_id, id]`` pair (:func:`rows_near`'s ``match``)."""
BY_ROWID = "m.rowid = json_each.value AND m.resource_id = :resource"
"""Finds the message of a rowid (:func:`rows_near`'s ``match``)."""


def rows_near(
    conn: sqlite3.Connection, resource_id: str, match: str, keys: Sequence[Any], message_range: int,
    columns: str,
) -> list[Any]:
    """The ``columns`` (of ``messages AS m``) of the resource's messages ``keys`` (each found by
    ``match``: ``[thread_id, id]`` pairs, or rowids with :data:`BY_ROWID`) with
    ``message_range`` neighbours on each side, thread by thread (in the order threads are first
    named), each in seq order: the keys' seqs with the seq ``message_range`` messages before
    and after each (index seeks), then every run of messages between those bounds (runs that
    overlap merged). The messages between a key's bounds are exactly its neighbours: the bounds
    are its ``message_range``-th unexpired neighbours on each side, or the thread's ends."""
    if not keys:
        return []
    cutoff = cutoff_us(conn, resource_id)
    floor = -(2**63) if cutoff is None else cutoff
    # without a retention cutoff every message counts: the neighbours' seqs are then read from
    # the (resource_id, thread_id, seq) index alone, never their rows
    unexpired = "" if cutoff is None else " AND n.created_us >= :floor"
    offset = max(0, message_range - 1)
    before = after = "m.seq"
    if message_range:
        near = ("(SELECT n.seq FROM messages AS n WHERE n.resource_id = m.resource_id"
                f" AND n.thread_id = m.thread_id AND n.seq {{op}} m.seq{unexpired}"
                " ORDER BY n.seq {order} LIMIT 1 OFFSET :offset)")
        before = f"coalesce({near.format(op='<', order='DESC')}, {-(2**62)})"
        after = f"coalesce({near.format(op='>', order='ASC')}, {2**62})"
    spans: dict[str, list[tuple[int, int]]] = {}
    for thread_id, low, high in conn.execute(
        f"SELECT m.thread_id, {before}, {after} FROM json_each(:keys) CROSS JOIN messages AS m"
        f" ON {match} WHERE m.created_us >= :floor",
        {"keys": json.dumps(keys), "resource": resource_id, "floor": floor, "offset": offset},
    ):
        spans.setdefault(thread_id, []).append((int(low), int(high)))
    runs: list[tuple[str, int, int]] = []
    for thread_id, found in spans.items():
        merged: list[list[int]] = []
        for low, high in sorted(found):
            if merged and low <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        runs.extend((thread_id, low, high) for low, high in merged)
    return conn.execute(
        f"SELECT {columns} FROM json_each(:runs)"
        " CROSS JOIN messages AS m ON m.resource_id = :resource"
        " AND m.thread_id = json_extract(json_each.value, '$[0]')"
        " AND m.seq BETWEEN json_extract(json_each.value, '$[1]') AND json_extract(json_each.value, '$[2]')"
        " WHERE m.created_us >= :floor ORDER BY json_each.key, m.seq",
        {"runs": json.dumps(runs), "resource": resource_id, "floor": floor},
    ).fetchall()
