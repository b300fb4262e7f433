"""PostgreSQL full-text search under what only PostgreSQL has: ``tsquery`` syntax, its parser's
stack, and the statement timeout that bounds a search's server time.

The store-agnostic cases (everyday phrasing, 40,000 words, 5,000 CJK characters, any string
agreeing with the reference store) are in the conformance suite (``test_search``,
``test_search_query_properties``). These tests need ``MEMVAULT_TEST_POSTGRES_URL``; each uses
a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from memvault import Memory, Message
from memvault.errors import StoreError
from memvault.rules.words import MAX_QUERY_TERMS
from memvault.stores.postgres import search
from memvault.stores.postgres.db import Conn
from memvault.stores.postgres.store import PostgresStore
from postgres_server import conninfo, drop_schema, postgres_url, with_params

R = "res"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What's it?", "'what' | 's' | 'it'"),
        ("it's", "'it' | 's'"),
        ("s", "'s'"),
        ("Is it running?", "'run'"),
        ("中文", "'xe4b8ad' <-> 'xe69687'"),  # each character as its lexeme: UTF-8 in hex
        ("Xbox 42", "'x78626f78' | '42'"),
        ("'", None), ("\\", None), ("&|!():*<->", None), ("", None),
    ],
)
def test_tsquery_has_no_empty_lexeme(query: str, expected: str | None) -> None:
    assert search.tsquery(query) == expected


def test_tsquery_is_capped() -> None:
    expression = search.tsquery(" ".join(f"w{i}" for i in range(40_000)))
    assert expression is not None and expression.count("|") == MAX_QUERY_TERMS - 1


@pytest.fixture
async def opened() -> AsyncIterator[tuple[Memory, str]]:
    """A memory over a fresh schema, and the schema's name."""
    server = postgres_url("the PostgreSQL search tests")
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    try:
        async with await Memory.open(with_params(server, schema=schema, max_size="2")) as memory:
            await memory.save_messages(
                [Message.user("it's tea time", id="a"), Message.user("What's it? coffee", id="b")],
                thread_id="t", resource_id=R)
            yield memory, schema
    finally:
        await drop_schema(server, schema)


async def test_the_reported_queries_search(opened: tuple[Memory, str]) -> None:
    memory, _ = opened
    for query in ["What's it?", "it's", "s"]:
        hits = await memory.search_messages(resource_id=R, query=query)
        assert sorted(h.message.id for h in hits) == ["a", "b"]
        recalled = await memory.recall(resource_id=R, query=query, thread_id="other")
        assert sorted(h.message.id for h in recalled.hits) == ["a", "b"] and not recalled.warnings


async def test_a_search_past_its_statement_timeout_raises_store_error(
    opened: tuple[Memory, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another session holds an exclusive lock on ``messages``, so the search statement waits on
    it until the server's ``statement_timeout`` (here 0.3 s) cancels it: the real timeout path."""
    import psycopg
    from psycopg import sql

    memory, schema = opened
    monkeypatch.setattr(search, "SEARCH_TIMEOUT", 0.3)
    url = conninfo(postgres_url())
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as holder:
        async with holder.transaction():
            await holder.execute(sql.SQL("LOCK TABLE {}.messages IN ACCESS EXCLUSIVE MODE").format(
                sql.Identifier(schema)))
            started = asyncio.get_running_loop().time()
            with pytest.raises(StoreError) as caught:
                await asyncio.wait_for(memory.search_messages(resource_id=R, query="tea"), 20)
            waited = asyncio.get_running_loop().time() - started
        assert "statement timeout" in str(caught.value) and "search" in str(caught.value)
        assert 0.25 < waited < 10
    # the lock is gone: searching works again, and the timeout did not stay on the connection
    assert [h.message.id for h in await memory.search_messages(resource_id=R, query="tea")] == ["a"]
    monkeypatch.setattr(search, "SEARCH_TIMEOUT", 10.0)
    assert isinstance(memory.store, PostgresStore)
    assert await memory.store._db.read(_statement_timeout) == "0"


async def _statement_timeout(conn: Conn) -> str:
    cursor = await conn.execute("SHOW statement_timeout")
    row = await cursor.fetchone()
    assert row is not None
    return str(row[0])
