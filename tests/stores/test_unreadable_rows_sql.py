"""Bad rows written with raw SQL, as a newer memvault or damage on disk leaves them, on the real
SQLite file and the real PostgreSQL server (the store-agnostic cases are in the conformance
suite, ``memvault.testing.suite.test_unreadable_rows``).

- Unknown parts saved back leave the stored ``parts`` column byte-identical.
- Arbitrary text in ``parts`` or ``metadata`` (Hypothesis) never gives an error that is not
  memvault's, and never hides the good rows around it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.model import UnknownPart
from postgres_server import conninfo, drop_schema, postgres_url, with_schema

R, T = "alice", "t"
NEWER = ('[{"type":"text","text":"hello"},{"type":"hologram","v":3,"data":{"x":[1,2.5,"é",null,true]}},'
         '{"type":"text","v":2,"text":"hi","lang":"en"}]')


def _sqlite_column(path: Path, column: str, message_id: str) -> Any:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(f"SELECT {column} FROM messages WHERE id = ?", (message_id,)).fetchone()[0]


def _sqlite_write(path: Path, column: str, value: Any, message_id: str) -> None:
    with closing(sqlite3.connect(path, timeout=30)) as conn, conn:
        conn.execute(f"UPDATE messages SET {column} = ? WHERE id = ?", (value, message_id))


async def test_sqlite_unknown_parts_saved_back_keep_the_column_identical(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    async with await Memory.open(f"sqlite:///{path}") as memory:
        await memory.save_messages([Message.user("old", id="a")], thread_id=T, resource_id=R)
        _sqlite_write(path, "parts", NEWER, "a")
        read = (await memory.get_messages(thread_id=T, resource_id=R))[0]
        assert [type(p).__name__ for p in read.parts] == ["TextPart", "UnknownPart", "UnknownPart"]
        await memory.save_messages([read.model_copy(update={"metadata": {"seen": 1}})],
                                   thread_id=T, resource_id=R)
        assert _sqlite_column(path, "parts", "a") == NEWER
        assert [h.message.id for h in await memory.search_messages(resource_id=R, query="hello")] == ["a"]


@pytest.fixture
async def postgres() -> AsyncIterator[tuple[Memory, str, str]]:
    url = postgres_url("the unreadable-row tests")
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    try:
        async with await Memory.open(with_schema(url, schema)) as memory:
            yield memory, url, schema
    finally:
        await drop_schema(url, schema)


async def _pg(url: str, schema: str, statement: str, args: tuple[Any, ...]) -> Any:
    import psycopg
    from psycopg import sql

    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
        await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        cursor = await conn.execute(statement.encode(), args)
        return await cursor.fetchone() if cursor.description else None


async def test_postgres_unknown_parts_saved_back_keep_the_column_identical(
    postgres: tuple[Memory, str, str]
) -> None:
    memory, url, schema = postgres
    await memory.save_messages([Message.user("old", id="a"), Message.user("next", id="b")],
                               thread_id=T, resource_id=R)
    await _pg(url, schema, "UPDATE messages SET parts = %s WHERE id = 'a'", (NEWER,))
    await _pg(url, schema, "UPDATE messages SET created_us = %s, metadata = %s WHERE id = 'b'",
              (2**62, "{oops"))
    read = await memory.get_messages(thread_id=T, resource_id=R)
    assert isinstance(read[0].parts[1], UnknownPart) and read[1].unreadable is not None
    await memory.save_messages([read[0]], thread_id=T, resource_id=R)
    assert (await _pg(url, schema, "SELECT parts FROM messages WHERE id = 'a'", ()))[0] == NEWER


GARBAGE = st.one_of(
    st.text(max_size=60),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
            st.sampled_from(["type", "text", "v", "url", "tool_call_id", "name", "x"]), inner, max_size=4),
        max_leaves=12,
    ).map(lambda value: __import__("json").dumps(value)),
    st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "data", "tool-call", "zz"])},
                                   optional={"text": st.text(max_size=5) | st.integers(),
                                             "v": st.integers(-2, 3), "url": st.none()}),
             max_size=3).map(lambda value: __import__("json").dumps(value)),
)
"""Text for a ``parts`` or ``metadata`` column: any string, any JSON, part-like JSON."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(column=st.sampled_from(["parts", "metadata"]), garbage=GARBAGE)
def test_sqlite_any_garbage_is_contained(tmp_path: Path, column: str, garbage: str) -> None:
    path = tmp_path / f"{uuid.uuid4().hex}.db"

    async def scenario() -> None:
        async with await Memory.open(f"sqlite:///{path}") as memory:
            saved = await memory.save_messages(
                [Message.user("first words", id="a"), Message.user("bad", id="b"),
                 Message.user("last words", id="c")], thread_id=T, resource_id=R)
            _sqlite_write(path, column, garbage, "b")
            for query in ({}, {"last_n": 2}, {"ids": ["b"]}, {"after": "a"}):
                read = await memory.get_messages(thread_id=T, resource_id=R, **query)
                assert all(m == saved[0] or m == saved[2] or m.id == "b" for m in read)
            read = await memory.get_messages(thread_id=T, resource_id=R)
            assert [m.id for m in read] == ["a", "b", "c"] and read[0] == saved[0] and read[2] == saved[2]
            await memory.get_history(thread_id=T, resource_id=R)
            assert [h.message.id for h in await memory.search_messages(resource_id=R, query="last")] == ["c"]
            await memory.recall(resource_id=R, thread_id=T, query="words bad")

    asyncio.run(scenario())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(column=st.sampled_from(["parts", "metadata", "body", "role", "id"]),
       garbage=st.binary(min_size=1, max_size=40).filter(lambda b: not _is_utf8(b)))
def test_sqlite_bytes_that_are_not_utf8_are_contained(tmp_path: Path, column: str, garbage: bytes) -> None:
    """A TEXT column holding bytes that are not UTF-8 (written by another program, or damaged)
    no longer fails the fetch of the whole thread: the others read whole, the row reads as text
    with U+FFFD or as a placeholder, and nothing untyped escapes."""
    path = tmp_path / f"{uuid.uuid4().hex}.db"

    async def scenario() -> None:
        async with await Memory.open(f"sqlite:///{path}") as memory:
            saved = await memory.save_messages(
                [Message.user("first words", id="a"), Message.user("bad", id="b"),
                 Message.user("last words", id="c")], thread_id=T, resource_id=R)
            with closing(sqlite3.connect(path)) as conn, conn:
                conn.execute(f"UPDATE messages SET {column} = CAST(? AS TEXT) WHERE id = 'b'", (garbage,))
            read = await memory.get_messages(thread_id=T, resource_id=R)
            assert [read[0], read[-1]] == [saved[0], saved[2]] and len(read) == 3
            await memory.get_history(thread_id=T, resource_id=R)
            assert "c" in [h.message.id for h in await memory.search_messages(resource_id=R, query="last")]
            await memory.recall(resource_id=R, thread_id=T, query="words bad")
            # the pool search reads "b" beside both hits (and scores it by their words): it
            # decodes there as everywhere, and the hits come back whole
            found = await memory.recall(resource_id=R, thread_id=None, query="words")
            hits = {hit.message.id: hit.message for hit in found.hits}
            assert (hits.get("a"), hits.get("c")) == (saved[0], saved[2])

    asyncio.run(scenario())


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True
