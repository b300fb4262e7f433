"""Transaction bodies of the SQLite store's messages.

Saving upserts the thread's row and reserves seqs for the new ids by advancing
``threads.next_seq`` in the same statement, then upserts the messages, all in the write's one
transaction: seqs are total, gap-free and never reused. Lists of ids are bound in chunks of
``_CHUNK`` (SQLite's limit on bound parameters).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memvault.errors import NotFoundError
from memvault.model import Message, TextPart, now
from memvault.rules.words import index_text
from memvault.stores import rows
from memvault.stores.base import MessageQuery
from memvault.stores.common import to_micros
from memvault.stores.sqlite.retention import cutoff_us
from memvault.stores.sqlite.schema import same_as_text
from memvault.stores.sqlite.threads import get_thread

_CHUNK = 500
Prepared = tuple[Message, str, str, str | bytes]
"""A message to save with its parts JSON, metadata JSON and ``body`` (:func:`stored_body`)."""
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def prepare(message: Message) -> Prepared:
    """``message`` with the columns it is saved as (built on the caller's thread)."""
    text = message.parts[0].text if len(message.parts) == 1 and isinstance(
        message.parts[0], TextPart) else None
    return (message, stored_parts(message, text), rows.dumps(message.metadata),
            stored_body(text, index_text(message)))


def stored_parts(message: Message, text: str | None) -> str:
    """The ``parts`` column of ``message``, ``text`` being the text of its single text part
    (``None`` otherwise): that text as a JSON string (28 bytes fewer than a list of one part
    object; :func:`memvault.stores.decode.decode_parts` reads both), else
    :meth:`~memvault.model.Message.parts_json`."""
    return message.parts_json() if text is None else _json_text(text)


_json_text = json.JSONEncoder(ensure_ascii=False).encode


def stored_body(text: str | None, index: str) -> str | bytes:
    """The ``body`` column of a message whose folded index text is ``index``, ``text`` being
    the text of its single text part (``None`` when it has other parts, or several):
    the marker :func:`~.schema.same_as_text` when ``index`` differs from ``text`` by ASCII case
    alone (the index then reads the text from ``parts``, :data:`~.schema.BODY_SQL`: FTS5 folds
    case, and the lengths are equal), else ``index``."""
    if text is None or len(text) != len(index):
        return index
    same = text.lower() == index if text.isascii() else text.translate(_ASCII_LOWER) == index
    return same_as_text(text) if same else index


def save_messages(
    conn: sqlite3.Connection,
    resource_id: str,
    thread_id: str,
    prepared: list[Prepared],
) -> list[int]:
    """Insert or update the messages; returns their seqs. New ids take the thread's next seqs,
    reserved with the thread's upsert in one statement."""
    seqs = _existing_seqs(conn, resource_id, thread_id, [p[0].id for p in prepared])
    new = len({p[0].id for p in prepared} - seqs.keys())
    stamp = to_micros(now())
    (next_seq,) = conn.execute(
        "INSERT INTO threads (resource_id, id, created_us, updated_us, next_seq)"
        " VALUES (?, ?, ?, ?, 1 + ?) ON CONFLICT DO UPDATE SET updated_us = excluded.updated_us,"
        " next_seq = next_seq + ? RETURNING next_seq - ?",
        (resource_id, thread_id, stamp, stamp, new, new, new),
    ).fetchone()
    values, saved = [], []
    for message, parts, metadata, body in prepared:
        seq = seqs.get(message.id)
        if seq is None:
            seq = seqs[message.id] = next_seq
            next_seq += 1
        values.append((resource_id, thread_id, message.id, seq, message.role, parts, metadata,
                       to_micros(message.created_at), body))
        saved.append(seq)
    conn.executemany(
        "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata, created_us,"
        " body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (resource_id, thread_id, id) DO"
        " UPDATE SET role = excluded.role, parts = excluded.parts, metadata = excluded.metadata,"
        " created_us = excluded.created_us, body = excluded.body",
        values,
    )
    return saved


def _existing_seqs(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, ids: list[str], cutoff: int | None = None
) -> dict[str, int]:
    """The seqs of those of ``ids`` the thread has (created at ``cutoff`` or later, if given)."""
    found: dict[str, int] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        found.update(conn.execute(
            f"SELECT id, seq FROM messages WHERE resource_id = ? AND thread_id = ? AND id IN ({marks})"
            " AND created_us >= ?", (resource_id, thread_id, *chunk, -(2**63) if cutoff is None else cutoff),
        ).fetchall())
    return found


def get_messages(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, query: MessageQuery
) -> list[Message]:
    """The messages ``query`` selects (see :class:`MessageQuery`), in seq order; expired
    messages (the resource's retention policy, :mod:`.retention`) are left out."""
    where = "resource_id = ? AND thread_id = ?"
    key: tuple[Any, ...] = (resource_id, thread_id)
    cutoff = cutoff_us(conn, resource_id)
    if cutoff is not None:
        where, key = f"{where} AND created_us >= ?", (*key, cutoff)
    if query.ids is not None:
        seqs = sorted(_existing_seqs(conn, resource_id, thread_id, list(query.ids), cutoff).values())
        wanted: set[int] = set(seqs)
        for seq in seqs if query.message_range else []:
            for op, order in (("<", "DESC"), (">", "ASC")):
                wanted.update(s for (s,) in conn.execute(
                    f"SELECT seq FROM messages WHERE {where} AND seq {op} ? ORDER BY seq {order}"
                    " LIMIT ?", (*key, seq, query.message_range),
                ))
        selected = sorted(wanted)
        if query.last_n is not None:
            selected = selected[-query.last_n :] if query.last_n else []
        if query.first_n is not None:
            selected = selected[: query.first_n]
        found = []
        for start in range(0, len(selected), _CHUNK):
            chunk = selected[start : start + _CHUNK]
            found += conn.execute(
                f"SELECT {rows.MESSAGE_COLUMNS} FROM messages WHERE {where} AND seq IN "
                f"({','.join('?' * len(chunk))}) ORDER BY seq", (*key, *chunk),
            ).fetchall()
        return [rows.message(r) for r in found]
    sql = f"SELECT {rows.MESSAGE_COLUMNS} FROM messages WHERE {where}"
    args: list[Any] = list(key)
    has_cursor = query.after is not None or query.before is not None
    if has_cursor and get_thread(conn, resource_id, thread_id) is None:
        return []  # a missing thread has no messages, whatever the cursor
    for cursor, op in ((query.after, ">"), (query.before, "<")):
        if cursor is not None:
            sql += f" AND seq {op} ?"
            args.append(_seq_of(conn, resource_id, thread_id, cursor))
    if query.last_n is not None:
        found = conn.execute(f"{sql} ORDER BY seq DESC LIMIT ?", (*args, query.last_n)).fetchall()
        found.reverse()
    elif query.first_n is not None:
        found = conn.execute(f"{sql} ORDER BY seq LIMIT ?", (*args, query.first_n)).fetchall()
    else:
        found = conn.execute(f"{sql} ORDER BY seq", args).fetchall()
    return [rows.message(r) for r in found]


def _seq_of(conn: sqlite3.Connection, resource_id: str, thread_id: str, message_id: str) -> int:
    row = conn.execute(
        "SELECT seq FROM messages WHERE resource_id = ? AND thread_id = ? AND id = ?",
        (resource_id, thread_id, message_id),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"message {message_id!r} is not in this thread")
    return int(row[0])


def delete_messages(
    conn: sqlite3.Connection, resource_id: str, thread_id: str, ids: list[str]
) -> int:
    deleted = 0
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        deleted += conn.execute(
            "DELETE FROM messages WHERE resource_id = ? AND thread_id = ? AND id IN "
            f"({','.join('?' * len(chunk))})", (resource_id, thread_id, *chunk),
        ).rowcount
    return deleted


def clear_thread(conn: sqlite3.Connection, resource_id: str, thread_id: str) -> int:
    return int(conn.execute(
        "DELETE FROM messages WHERE resource_id = ? AND thread_id = ?", (resource_id, thread_id)
    ).rowcount)
