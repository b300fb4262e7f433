"""PostgreSQL writes run again after a lost connection, and apply once (issue 13, point 7).

Two faults, both real:

- backends terminated with ``pg_terminate_backend`` (from a second connection) while many
  working-memory appends and state writes run concurrently: every acknowledged append is in the
  note exactly once, every acknowledged state write added exactly one version, and nothing but
  :class:`~memvault.errors.StoreError` ever escapes;
- the answer to a ``COMMIT`` lost after the server committed (:mod:`postgres_proxy`, a TCP
  proxy that withholds it and drops the connection): the write is run again, finds its
  operation id and applies nothing more; a write that cannot know (not idempotent) raises
  StoreError saying it may have been applied.

These tests need ``MEMVAULT_TEST_POSTGRES_URL``; each uses a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from memvault import Memory, Message
from memvault.errors import StoreError
from postgres_proxy import CommitAnswerThief
from postgres_server import conninfo, postgres_url, with_params

R = "res"
WHAT = "the PostgreSQL retry tests"


@pytest.fixture
def schema() -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"memvault_test_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(conninfo(postgres_url(WHAT)), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture
async def thief() -> AsyncIterator[CommitAnswerThief]:
    parts = urlsplit(postgres_url(WHAT))
    proxy = CommitAnswerThief(parts.hostname or "127.0.0.1", parts.port or 5432)
    await proxy.start()
    yield proxy
    await proxy.close()


@pytest.fixture
async def proxied(thief: CommitAnswerThief, schema: str) -> AsyncIterator[Memory]:
    """A memory whose connections go through ``thief``."""
    async with await Memory.open(thief.url(postgres_url(WHAT), schema=schema, max_size="2")) as memory:
        yield memory


async def _op_ids(schema: str) -> int:
    import psycopg
    from psycopg import sql

    async with await psycopg.AsyncConnection.connect(conninfo(postgres_url(WHAT))) as conn:
        query = sql.SQL("SELECT count(*) FROM {}.applied_ops").format(sql.Identifier(schema))
        cursor = await conn.execute(query)
        row = await cursor.fetchone()
        return int(row[0]) if row else 0


# --------------------------------------------------------------------------------------------
# A COMMIT whose answer is lost, after the server committed
# --------------------------------------------------------------------------------------------


async def test_a_state_write_whose_commit_answer_is_lost_applies_once(
    proxied: Memory, thief: CommitAnswerThief
) -> None:
    assert (await proxied.set_state({"n": 1}, resource_id=R, key="k")).version == 1
    thief.arm()
    state = await proxied.set_state({"n": 2}, resource_id=R, key="k")
    assert thief.stolen == [b"COMMIT"]  # the server committed; the answer never came back
    assert state.version == 2 and state.value == {"n": 2}
    stored = await proxied.get_state(resource_id=R, key="k")
    assert stored is not None and stored.version == 2  # not 3: run again, applied once


async def test_a_compare_and_set_whose_commit_answer_is_lost_reports_its_success(
    proxied: Memory, thief: CommitAnswerThief
) -> None:
    await proxied.set_state("a", resource_id=R, key="k")
    thief.arm()
    state = await proxied.compare_and_set_state("b", resource_id=R, key="k", expected_version=1)
    assert thief.stolen == [b"COMMIT"]
    assert state is not None and state.version == 2  # a second run would have found version 2: None
    assert (await proxied.get_state(resource_id=R, key="k")).value == "b"  # type: ignore[union-attr]


async def test_a_working_memory_append_whose_commit_answer_is_lost_applies_once(
    proxied: Memory, thief: CommitAnswerThief
) -> None:
    await proxied.update_working_memory("first", resource_id=R, mode="replace")
    thief.arm()
    assert await proxied.update_working_memory("second", resource_id=R) == "first\nsecond"
    assert thief.stolen == [b"COMMIT"]
    assert await proxied.get_working_memory(resource_id=R) == "first\nsecond"


async def test_a_save_whose_commit_answer_is_lost_is_run_again_without_duplicates(
    proxied: Memory, thief: CommitAnswerThief
) -> None:
    thief.arm()
    saved = await proxied.save_messages([Message.user("a", id="a"), Message.user("b", id="b")],
                                        thread_id="t", resource_id=R)
    assert thief.stolen == [b"COMMIT"]
    assert [m.seq for m in saved] == [1, 2]
    assert [(m.id, m.seq) for m in await proxied.get_messages(thread_id="t", resource_id=R)] == [
        ("a", 1), ("b", 2)]


async def test_a_write_that_cannot_be_run_again_says_it_may_have_been_applied(
    proxied: Memory, thief: CommitAnswerThief
) -> None:
    await proxied.save_messages([Message.user("a", id="a")], thread_id="t", resource_id=R)
    thief.arm()
    with pytest.raises(StoreError, match="lost during COMMIT: the write may or may not have been applied"):
        await proxied.delete_thread(thread_id="t", resource_id=R)
    assert thief.stolen == [b"COMMIT"]
    assert await proxied.get_thread(thread_id="t", resource_id=R) is None  # it was, this time


async def test_old_operation_ids_are_pruned(
    proxied: Memory, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg
    from psycopg import sql

    import memvault.stores.postgres.ops as ops

    for i in range(5):
        await proxied.set_state(i, resource_id=R, key="k")
    assert await _op_ids(schema) == 5
    async with await psycopg.AsyncConnection.connect(conninfo(postgres_url(WHAT)), autocommit=True) as conn:
        await conn.execute(sql.SQL("UPDATE {}.applied_ops SET applied_us = applied_us - %s").format(
            sql.Identifier(schema)), (int(ops.KEEP_FOR.total_seconds() * 1e6) + 1_000_000,))
    monkeypatch.setattr(ops, "PRUNE_EVERY", 0.0)
    await proxied.update_working_memory("x", resource_id=R)
    assert await _op_ids(schema) == 1  # the five older than KEEP_FOR are gone, the new one kept


# --------------------------------------------------------------------------------------------
# Backends terminated while many appends and state writes run
# --------------------------------------------------------------------------------------------


async def test_concurrent_appends_and_state_writes_under_terminations_apply_exactly_once(
    schema: str,
) -> None:
    import psycopg

    app = f"memvault_retries_{uuid.uuid4().hex[:12]}"
    url = with_params(postgres_url(WHAT), schema=schema, application_name=app, min_size="4", max_size="8")
    writers, calls = 8, 30
    rng = random.Random(13)
    appended: list[tuple[str, bool]] = []
    written: list[tuple[int | None, bool]] = []
    untyped: list[Exception] = []
    stop = asyncio.Event()

    async with await Memory.open(url) as memory, await psycopg.AsyncConnection.connect(
        conninfo(postgres_url(WHAT)), autocommit=True
    ) as killer_conn:

        async def appender(w: int) -> None:
            for c in range(calls):
                line = f"w{w}.c{c}"
                try:
                    await memory.update_working_memory(line, resource_id=R)
                    appended.append((line, True))
                except StoreError:
                    appended.append((line, False))
                except Exception as exc:  # anything else is the failure looked for
                    untyped.append(exc)

        async def state_writer(w: int) -> None:
            for c in range(calls):
                try:
                    state = await memory.set_state({"w": w, "c": c}, resource_id=R, key="counter")
                    written.append((state.version, True))
                except StoreError:
                    written.append((None, False))
                except Exception as exc:
                    untyped.append(exc)

        async def killer() -> int:
            killed = 0
            while not stop.is_set():
                await asyncio.sleep(rng.uniform(0.002, 0.02))
                cursor = await killer_conn.execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE application_name = %s AND pid <> pg_backend_pid()", (app,))
                row: Any = await cursor.fetchone()
                killed += int(row[0])
            return killed

        killing = asyncio.create_task(killer())
        await asyncio.gather(*(appender(w) for w in range(writers)),
                             *(state_writer(w) for w in range(writers)))
        stop.set()
        killed = await killing
        lost = memory.store._db.pool.get_stats().get("returns_bad", 0)  # type: ignore[attr-defined]

        assert untyped == []
        assert killed > 0 and lost > 0, "no backend was terminated mid-call"
        note = await memory.get_working_memory(resource_id=R) or ""
        lines = note.split("\n") if note else []
        for line, ok in appended:
            assert lines.count(line) == 1 if ok else lines.count(line) <= 1, (line, ok)
        assert sorted(lines) == sorted(set(lines))

        state = await memory.get_state(resource_id=R, key="counter")
        acknowledged = [v for v, ok in written if ok and v is not None]
        failed = sum(1 for _, ok in written if not ok)
        assert len(set(acknowledged)) == len(acknowledged)  # each acknowledged write: its own version
        assert state is not None and len(acknowledged) <= state.version <= len(acknowledged) + failed
        assert max(acknowledged, default=0) <= state.version
        print(f"terminated {killed} backends, {lost} connections lost mid-call; "
              f"{sum(not ok for _, ok in appended)}/{len(appended)} appends and "
              f"{failed}/{len(written)} state writes failed with StoreError; "
              f"state version {state.version} for {len(acknowledged)} acknowledged writes")
