"""SQLite search scores matches class by class (the set of query groups a message contains),
reads only each class's best rows, stops at the first class that cannot enter the top
``limit``, and matches without the scope token when the file holds one resource. Whatever the
corpus, the hits and their scores are exactly those of scoring every match of the resource
(the formula of :mod:`memvault.stores.sqlite.search`), with or without other resources in the
file, for a whole resource or one thread."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.rules.words import fts5_match, query_groups
from memvault.stores.sqlite.schema import BODY_CHARS_SQL
from memvault.stores.sqlite.search import K1, B, idf

WORDS = ["tea", "green", "teas", "cake", "lemon", "run", "running", "blue", "sky"]
QUERY_WORDS = WORDS[:4]
"""Few query words, so that a class (messages with the same query words) often holds more
messages than the limit, and its shortest must be told from the rest."""
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
corpus = st.lists(st.tuples(st.sampled_from(["t1", "t2"]), text), min_size=1, max_size=60)


def _every_match(
    path: Path, resource: str, query: str, thread: str | None, limit: int
) -> list[tuple[str, float]]:
    """Every message of the resource scored by the formula, no pruning, no classes."""
    conn = sqlite3.connect(path)
    try:
        groups = query_groups(query)
        docs, chars = conn.execute(
            "SELECT docs, chars FROM search_stats WHERE resource_id = ?", (resource,)).fetchone()
        rows = {rowid: (message_id, message_thread, length, created)
                for rowid, message_id, message_thread, length, created in conn.execute(
                    f"SELECT rowid, id, thread_id, {BODY_CHARS_SQL.format(row='messages')}, created_us"
                    " FROM messages WHERE resource_id = ?", (resource,))}
        weights: dict[int, float] = {}
        for group in dict.fromkeys(tuple(g) for g in groups):
            having = [r for (r,) in conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?",
                ("body : " + (fts5_match([list(group)]) or ""),)) if r in rows]
            for rowid in having:
                weights[rowid] = weights.get(rowid, 0.0) + idf(docs, len(having))
        scale = K1 * B / (chars / docs)
        scored = sorted(
            (-(weight * (K1 + 1) / (1 + K1 * (1 - B) + scale * rows[rowid][2])), rows[rowid][3], rowid)
            for rowid, weight in weights.items() if thread is None or rows[rowid][1] == thread)
        return [(rows[rowid][0], -negative) for negative, _, rowid in scored[:limit]]
    finally:
        conn.close()


async def _fill(path: Path, own: list[tuple[str, str]], others: list[tuple[str, str]]) -> None:
    async with await Memory.open(f"sqlite:///{path}") as memory:
        for resource, said in (("ada", own), ("bob", others)):
            for i, (thread, words) in enumerate(said):
                await memory.save_messages([Message.user(words, id=f"{resource}{i}")],
                                           thread_id=thread, resource_id=resource)


async def _searched(path: Path, query: str, thread: str | None, limit: int) -> list[tuple[str, float]]:
    async with await Memory.open(f"sqlite:///{path}") as memory:
        hits = await memory.search_messages(resource_id="ada", query=query, thread_id=thread, limit=limit)
        return [(h.message.id, h.score) for h in hits]


@settings(max_examples=60, deadline=None)
@given(own=corpus, others=st.lists(st.tuples(st.just("t1"), text), max_size=30),
       query=st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=3).map(" ".join),
       thread=st.sampled_from([None, "t1"]), limit=st.integers(1, 8))
def test_search_is_scoring_every_match(
    own: list[tuple[str, str]], others: list[tuple[str, str]], query: str, thread: str | None, limit: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "search.db"
        asyncio.run(_fill(path, own, others))
        found = asyncio.run(_searched(path, query, thread, limit))
        assert found == _every_match(path, "ada", query, thread, limit)
