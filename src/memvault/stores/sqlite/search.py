"""Full-text search in SQLite: an FTS5 query over the ``messages_fts`` index.

The index holds each message's body (:func:`memvault.rules.words.index_text`, stemmed by FTS5's
porter tokenizer) and its resource's scope token (:func:`~.schema.scope_token`); it is filled in
batches off the write path, and always before a search runs (:func:`~.schema.index_pending`).
A query's words are matched as :func:`memvault.rules.words.query_groups` makes them, so matching
agrees with every other store; ranking is FTS5's BM25, best first, ties to the older message.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memvault.model import SearchHit
from memvault.rules.words import fts5_match, stem
from memvault.stores import rows
from memvault.stores.sqlite.schema import scope_token

COLUMNS = rows.qualified(rows.MESSAGE_COLUMNS, "m")
"""The message columns :func:`memvault.stores.rows.message` reads, from ``messages AS m``."""
COMMON_SHARE = 0.05
COMMON_MIN_MESSAGES = 1_000


def _uncommon(conn: sqlite3.Connection, groups: list[list[str]]) -> list[list[str]]:
    """The query's groups without its very common words, when it has rarer ones.

    A word held by more than ``COMMON_SHARE`` of the store's messages (and by more than
    ``COMMON_MIN_MESSAGES``) adds little to a BM25 score and makes FTS5 score most of the store
    (measured: 140 ms for one search over 100,000 messages of a small vocabulary). Small stores
    are never pruned; phrases (CJK runs) are always kept."""
    words = {stem(g[0]): g for g in groups if len(g) == 1}
    if len(groups) < 2 or not words:
        return groups
    (size,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM messages").fetchone()
    bound = max(COMMON_MIN_MESSAGES, COMMON_SHARE * size)
    marks = ", ".join("?" * len(words))
    common = {term for term, docs in conn.execute(
        f"SELECT term, doc FROM messages_fts_vocab WHERE term IN ({marks})", list(words)) if docs > bound}
    kept = [g for g in groups if len(g) > 1 or stem(g[0]) not in common]
    return kept or groups


def search(
    conn: sqlite3.Connection, resource_id: str, groups: list[list[str]], thread_id: str | None, limit: int
) -> list[SearchHit]:
    """The resource's (or the thread's) messages matching the query ``groups``, best first."""
    words = fts5_match(_uncommon(conn, groups))
    match = f'scope : "{scope_token(resource_id)}" AND ({words})'
    sql = (
        f"SELECT {COLUMNS}, -bm25(messages_fts, 1.0, 0.0) FROM messages_fts"
        " JOIN messages AS m ON m.rowid = messages_fts.rowid"
        " WHERE messages_fts MATCH ? AND m.resource_id = ?"
    )
    args: list[Any] = [match, resource_id]
    if thread_id is not None:
        sql += " AND m.thread_id = ?"
        args.append(thread_id)
    sql += " ORDER BY bm25(messages_fts, 1.0, 0.0), m.created_us LIMIT ?"
    found = conn.execute(sql, (*args, limit)).fetchall()
    return [SearchHit.model_construct(message=rows.message(r[:-1]), score=float(r[-1]))
            for r in found]
