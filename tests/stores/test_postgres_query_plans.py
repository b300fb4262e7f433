"""The PostgreSQL store's thread and state queries are answered through an index, in index order:
with sequential scans, bitmap scans and sorts disabled (the planner still uses one where nothing
else can answer, so a tiny test table tells what a big one would get), no plan scans ``threads``
or ``states`` whole, and no page of threads or states needs a sort (the SQLite twin:
``test_sqlite_query_plans.py``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from memvault import Memory
from memvault.stores import rows
from memvault.stores import thread_queries as tq
from memvault.stores.base import Direction, ThreadOrder, ThreadQuery
from memvault.stores.postgres.threads import DIALECT
from postgres_server import conninfo, drop_schema, postgres_url, with_schema

ORDERS: list[tuple[ThreadOrder, Direction]] = [
    ("updated_at", "desc"), ("updated_at", "asc"), ("created_at", "desc"), ("created_at", "asc")]


def _statements() -> list[tuple[str, list[Any], bool]]:
    """Every thread and state query shape: ``(sql, parameters, ordered)``."""
    found: list[tuple[str, list[Any], bool]] = []
    for order_by, direction in ORDERS:
        plain = ThreadQuery(order_by=order_by, direction=direction)
        filtered = ThreadQuery(title_contains="T", metadata={"k": 1}, offset=1, order_by=order_by,
                               direction=direction)
        for query in (plain, filtered):
            for after in (None, (1, "t1")):
                sql, args = tq.thread_page_sql(query, after, 5, DIALECT, rows.THREAD_COLUMNS)
                found.append((sql, ["ada", *args], True))
    for query in (ThreadQuery(), ThreadQuery(title_contains="t", metadata={"k": 1})):
        sql, args = tq.count_sql(query, DIALECT)
        found.append((sql, ["ada", *args], False))
    for filters in ({}, {"status": "suspended"}, {"workflow_id": "wf"}, {"thread_id": "t1"},
                    {"status": "suspended", "workflow_id": "wf"}):
        sql, args = rows.states_sql({"status": None, "workflow_id": None, "thread_id": None, **filters}, "%s")
        found.append((sql, ["ada", *args, 10], True))
    found.append(("DELETE FROM states WHERE resource_id = %s AND thread_id = %s", ["ada", "t1"], False))
    return found


@pytest.fixture
async def url() -> AsyncIterator[str]:
    base = postgres_url("the PostgreSQL query plans")
    schema = f"plans_{uuid.uuid4().hex[:12]}"
    try:
        yield with_schema(base, schema)
    finally:
        await drop_schema(base, schema)


@pytest.mark.parametrize(("sql", "args", "ordered"), _statements(), ids=lambda v: str(v)[:60])
async def test_thread_and_state_queries_use_an_index(
    url: str, sql: str, args: list[Any], ordered: bool
) -> None:
    async with await Memory.open(url) as memory:
        for thread in ("t1", "t2"):
            await memory.create_thread(resource_id="ada", thread_id=thread, title="T", metadata={"k": 1})
        await memory.set_state(1, resource_id="ada", key="run", status="suspended", workflow_id="wf",
                               thread_id="t1")
    schema = url.rsplit("schema=", 1)[1].split("&")[0]
    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
        await conn.execute(f'SET search_path TO "{schema}"')
        for kind in ("seqscan", "bitmapscan", "sort"):  # (each still used where nothing else can do)
            await conn.execute(f"SET enable_{kind} = off")
        cursor = psycopg.AsyncClientCursor(conn)
        await cursor.execute("EXPLAIN " + sql, args)
        plan = "\n".join(row[0] for row in await cursor.fetchall())
    assert "Seq Scan on threads" not in plan and "Seq Scan on states" not in plan, f"{sql}\n{plan}"
    assert "Index Cond: (resource_id = " in plan or "Index Cond: ((resource_id = " in plan, f"{sql}\n{plan}"
    if ordered:
        assert "Sort" not in plan, f"{sql}\n{plan}"
