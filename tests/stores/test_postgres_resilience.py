"""The PostgreSQL store when the server ends its connections: a backend terminated in the middle
of an operation, or every backend of the store terminated between two calls.

The server itself is never restarted (it is shared); instead these tests terminate the store's
own backends with ``pg_terminate_backend`` from a second connection, which is what a restart,
a failover or an idle-connection reaper does to a client. Each store here connects with an
``application_name`` unique to the test, so only its own backends are ever terminated.

What must hold: a call whose backend is terminated is run again on another connection (up to
the pool's ``max_size + 1`` times), so it succeeds (its data is then there, exactly once) or
raises :class:`~memvault.errors.StoreError`; a ``save_messages`` is all or nothing, seqs stay
gap-free and retrying a failed save by id adds no duplicate; after its backends are gone the
store's next call works (the pool replaces dead connections). Concurrent working-memory and
state writes under terminations, and a commit whose answer is lost, are in
``test_postgres_retries.py``.

These tests need ``MEMVAULT_TEST_POSTGRES_URL``; without it they skip (and fail with
``MEMVAULT_REQUIRE_POSTGRES=1``). Each uses a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from memvault import Memory, Message
from memvault.errors import StoreError
from postgres_server import conninfo, postgres_url, with_params

RESOURCE = "res"
WHAT = "the PostgreSQL resilience tests"


class Server:
    """A second connection to the server: terminates the store's backends, holds locks."""

    def __init__(self, conn: Any, schema: str, app: str) -> None:
        self.conn = conn
        self.schema = schema
        self.app = app

    async def backends(self, *, waiting: bool = False) -> list[int]:
        query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()"
        if waiting:
            query += " AND wait_event_type = 'Lock'"
        # inside a transaction (holding a lock) the statistics are a snapshot: take a new one
        await self.conn.execute("SELECT pg_stat_clear_snapshot()")
        cursor = await self.conn.execute(query, (self.app,))
        return [int(r[0]) for r in await cursor.fetchall()]

    async def terminate(self, pids: list[int] | None = None) -> int:
        """Terminate these backends (default: all of the store's); returns how many."""
        pids = await self.backends() if pids is None else pids
        cursor = await self.conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM unnest(%s::int[]) AS pid",
            (pids,),
        )
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def wait_until_gone(self, pids: list[int]) -> None:
        for _ in range(500):
            if not set(pids) & set(await self.backends()):
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"backends {pids} were not terminated")

    async def wait_for_blocked(self, other_than: Sequence[int] = ()) -> list[int]:
        for _ in range(500):
            if pids := [p for p in await self.backends(waiting=True) if p not in other_than]:
                return pids
            await asyncio.sleep(0.01)
        raise AssertionError("the store's call never blocked on the held lock")


@pytest.fixture
def schema_url() -> Iterator[tuple[str, str, str]]:
    """``(url, schema, application_name)``: a fresh schema (dropped afterwards) and an
    application name no other connection uses."""
    import psycopg
    from psycopg import sql

    server = postgres_url(WHAT)
    tag = uuid.uuid4().hex[:16]
    schema, app = f"memvault_test_{tag}", f"memvault_resilience_{tag}"
    yield with_params(server, schema=schema, application_name=app, min_size="2", max_size="4"), schema, app
    with psycopg.connect(conninfo(server), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
async def memory(schema_url: tuple[str, str, str]) -> AsyncIterator[Memory]:
    async with await Memory.open(schema_url[0]) as opened:
        yield opened


@pytest.fixture
async def server(schema_url: tuple[str, str, str]) -> AsyncIterator[Server]:
    import psycopg

    url = conninfo(postgres_url(WHAT))
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        yield Server(conn, schema_url[1], schema_url[2])


async def _ids_in_order(memory: Memory, thread_id: str = "t") -> list[str]:
    messages = await memory.get_messages(thread_id=thread_id, resource_id=RESOURCE)
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1)), "seqs are not gap-free"
    return [m.id for m in messages]


async def test_the_store_sets_its_application_name(memory: Memory, server: Server) -> None:
    await memory.get_thread(thread_id="t", resource_id=RESOURCE)
    assert await server.backends()  # so our termination below finds them


async def test_connections_say_memvault_unless_the_url_names_an_application(
    schema_url: tuple[str, str, str],
) -> None:
    async def name(conn: Any) -> str:
        cursor = await conn.execute("SHOW application_name")
        row = await cursor.fetchone()
        return str(row[0])

    url, _, app = schema_url
    for given, expected in ((url, app), (with_params(url, application_name=""), "")):
        async with await Memory.open(given) as memory:
            assert await memory.store._db.read(name) == expected  # type: ignore[attr-defined]
    plain = urlunsplit(urlsplit(url)._replace(query=urlencode(
        [(k, v) for k, v in parse_qsl(urlsplit(url).query) if k != "application_name"])))
    async with await Memory.open(plain) as memory:
        assert await memory.store._db.read(name) == "memvault"  # type: ignore[attr-defined]


async def test_after_all_backends_are_terminated_the_next_calls_work(memory: Memory, server: Server) -> None:
    await memory.save_messages([Message.user("before", id="m1")], thread_id="t", resource_id=RESOURCE)
    for round_ in range(3):
        pids = await server.backends()
        assert pids and await server.terminate(pids) == len(pids)
        await server.wait_until_gone(pids)
        # every kind of call, each on a pool whose connections were all terminated
        saved = await memory.save_messages([Message.user(f"after {round_}", id=f"a{round_}")],
                                           thread_id="t", resource_id=RESOURCE)
        assert saved[0].seq == round_ + 2
        await server.terminate()
        assert await _ids_in_order(memory) == ["m1", *(f"a{i}" for i in range(round_ + 1))]
        await server.terminate()
        await memory.update_working_memory(f"note {round_}", resource_id=RESOURCE)
        await server.terminate()
        state = await memory.set_state({"round": round_}, resource_id=RESOURCE, key="k")
        assert state.version == round_ + 1
    assert await memory.get_working_memory(resource_id=RESOURCE) is not None


async def test_a_save_whose_backend_is_terminated_mid_transaction_is_run_again_once(
    memory: Memory, server: Server
) -> None:
    await memory.save_messages([Message.user("first", id="m1")], thread_id="t", resource_id=RESOURCE)
    await server.conn.execute("BEGIN")
    await server.conn.execute(  # the save will queue behind this lock on the thread's row
        f'SELECT 1 FROM "{server.schema}".threads WHERE resource_id = %s AND id = %s FOR UPDATE',
        (RESOURCE, "t"),
    )
    batch = [Message.user(f"kept {i}", id=f"x{i}") for i in range(3)]
    save = asyncio.create_task(memory.save_messages(batch, thread_id="t", resource_id=RESOURCE))
    terminated: list[int] = []
    for _ in range(2):  # terminated twice while it waits: run again on another connection each time
        blocked = await server.wait_for_blocked(other_than=terminated)
        assert await server.terminate(blocked) == 1
        terminated += blocked
    await server.wait_for_blocked(other_than=terminated)
    assert not save.done()
    await server.conn.execute("ROLLBACK")
    assert [m.seq for m in await save] == [2, 3, 4]
    assert await _ids_in_order(memory) == ["m1", "x0", "x1", "x2"]


async def test_a_write_terminated_more_often_than_it_may_retry_raises_store_error_and_writes_nothing(
    memory: Memory, server: Server
) -> None:
    await memory.save_messages([Message.user("first", id="m1")], thread_id="t", resource_id=RESOURCE)
    await server.conn.execute("BEGIN")
    await server.conn.execute(
        f'SELECT 1 FROM "{server.schema}".threads WHERE resource_id = %s AND id = %s FOR UPDATE',
        (RESOURCE, "t"),
    )
    batch = [Message.user(f"lost {i}", id=f"x{i}") for i in range(3)]
    save = asyncio.create_task(memory.save_messages(batch, thread_id="t", resource_id=RESOURCE))
    terminated: list[int] = []
    while not save.done():  # each run is terminated while it waits (the pool's max_size is 4)
        try:
            blocked = await asyncio.wait_for(server.wait_for_blocked(other_than=terminated), 0.5)
        except TimeoutError:
            continue
        await server.terminate(blocked)
        terminated += blocked
    assert len(terminated) == 5  # max_size + 1 runs
    with pytest.raises(StoreError, match=r"PostgreSQL at .* failed"):
        await save
    await server.conn.execute("ROLLBACK")
    assert await _ids_in_order(memory) == ["m1"]  # none of the batch
    again = await memory.save_messages(batch, thread_id="t", resource_id=RESOURCE)  # the retry
    assert [m.seq for m in again] == [2, 3, 4]
    assert await _ids_in_order(memory) == ["m1", "x0", "x1", "x2"]


async def test_a_working_memory_update_whose_backend_is_terminated_mid_transaction_applies_once(
    memory: Memory, server: Server
) -> None:
    await memory.update_working_memory("kept", resource_id=RESOURCE, mode="replace")
    await server.conn.execute("BEGIN")
    await server.conn.execute(
        f'SELECT 1 FROM "{server.schema}".working_memory WHERE resource_id = %s FOR UPDATE', (RESOURCE,)
    )
    update = asyncio.create_task(memory.update_working_memory("more", resource_id=RESOURCE))
    blocked = await server.wait_for_blocked()
    await server.terminate(blocked)
    await server.wait_for_blocked(other_than=blocked)  # run again, waiting for the same lock
    await server.conn.execute("ROLLBACK")
    assert await update == "kept\nmore"
    assert await memory.get_working_memory(resource_id=RESOURCE) == "kept\nmore"


async def test_terminations_during_a_loop_of_writes_never_leave_a_partial_write(
    memory: Memory, server: Server
) -> None:
    """Two writers (saves of 1-4 messages, working-memory appends) loop while the store's backends
    are terminated at random moments. Each call succeeds or raises StoreError; a save is all or
    nothing; a failed save retried by id is never duplicated; an append is there at most once
    (exactly once when it succeeded)."""
    rng = random.Random(5)
    outcomes: dict[str, list[tuple[list[str], bool]]] = {"save": [], "append": []}
    stop = asyncio.Event()

    async def saver() -> None:
        for call in range(150):
            ids = [f"c{call}.{i}" for i in range(1 + call % 4)]
            try:
                await memory.save_messages([Message.user(f"call {call} part {i} 🍵", id=m)
                                            for i, m in enumerate(ids)], thread_id="t", resource_id=RESOURCE)
                outcomes["save"].append((ids, True))
            except StoreError:
                outcomes["save"].append((ids, False))

    async def appender() -> None:
        for call in range(150):
            line = f"line {call}"
            try:
                await memory.store.update_working_memory(
                    RESOURCE, "resource", lambda current, line=line: f"{current}\n{line}" if current else line
                )
                outcomes["append"].append(([line], True))
            except StoreError:
                outcomes["append"].append(([line], False))

    async def killer() -> int:
        killed = 0
        while not stop.is_set():
            await asyncio.sleep(rng.uniform(0.002, 0.03))
            killed += await server.terminate()
        return killed

    killing = asyncio.create_task(killer())
    await asyncio.gather(saver(), appender())
    stop.set()
    killed = await killing

    failed_saves = [ids for ids, ok in outcomes["save"] if not ok]
    failed_appends = [ids[0] for ids, ok in outcomes["append"] if not ok]
    lost = memory.store._db.pool.get_stats().get("returns_bad", 0)  # type: ignore[attr-defined]
    assert killed > 0 and lost > 0, "no backend was terminated mid-call"

    stored = await _ids_in_order(memory)
    assert len(stored) == len(set(stored))
    present = set(stored)
    for ids, ok in outcomes["save"]:
        there = [m in present for m in ids]
        assert all(there) if ok else all(there) or not any(there), (ids, ok, there)
        if all(there):  # a save's messages are contiguous and in the order given
            start = stored.index(ids[0])
            assert stored[start : start + len(ids)] == ids
    for ids in failed_saves:  # retrying by id: no duplicates, seqs stay gap-free
        await memory.save_messages([Message.user("retried", id=m) for m in ids],
                                   thread_id="t", resource_id=RESOURCE)
    stored = await _ids_in_order(memory)
    assert sorted(stored) == sorted(m for ids, _ in outcomes["save"] for m in ids)

    content = await memory.store.get_working_memory(RESOURCE, "resource")
    lines = content.split("\n") if content else []
    assert len(lines) == len(set(lines))
    for ids, ok in outcomes["append"]:
        assert lines.count(ids[0]) == (1 if ok else lines.count(ids[0])) and lines.count(ids[0]) <= 1
    assert lines == sorted(lines, key=lambda line: int(line.split()[1]))  # in call order
    print(f"terminated {killed} backends, {lost} mid-call; {len(failed_saves)}/150 saves and "
          f"{len(failed_appends)}/150 appends failed with StoreError")


async def test_a_busy_pool_makes_callers_wait_and_probes_the_server_once(
    memory: Memory, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many calls waiting longer than ``PROBE_AFTER`` for one of the pool's 4 connections (a
    lock held elsewhere keeps them busy) all succeed once it is released; the check that the
    server is up is one connection, shared, not one per waiting call (which exhausted the
    server's ``max_connections`` under load)."""
    import psycopg

    from memvault.stores.postgres import db as postgres_db

    await memory.save_messages([Message.user("first", id="m0")], thread_id="t", resource_id=RESOURCE)
    probes = 0
    connect = psycopg.AsyncConnection.connect

    async def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal probes
        probes += 1
        return await connect(*args, **kwargs)

    monkeypatch.setattr(postgres_db.psycopg.AsyncConnection, "connect", counting)
    monkeypatch.setattr(postgres_db, "PROBE_AFTER", 0.3)
    await server.conn.execute("BEGIN")
    await server.conn.execute(  # every save queues behind this lock, holding its connection
        f'SELECT 1 FROM "{server.schema}".threads WHERE resource_id = %s AND id = %s FOR UPDATE',
        (RESOURCE, "t"))
    saves = [asyncio.create_task(memory.save_messages([Message.user(f"m{i}", id=f"m{i}")], thread_id="t",
                                                      resource_id=RESOURCE)) for i in range(1, 41)]
    await asyncio.sleep(1.0)  # 36 calls have waited for a connection for over PROBE_AFTER
    await server.conn.execute("ROLLBACK")
    await asyncio.gather(*saves)
    assert sorted(await _ids_in_order(memory)) == sorted(f"m{i}" for i in range(41))
    assert 1 <= probes <= 4, probes
