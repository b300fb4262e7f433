"""Erasure on PostgreSQL (ARCHITECTURE.md, invariant 4): a deletion leaves dead rows in the table
files; :meth:`memvault.Memory.purge` (``VACUUM FULL``) makes them unreadable.

The proof reads the files themselves: after a ``CHECKPOINT`` (so every page is on disk), the raw
bytes of every file of the test's database under the data directory (``SHOW data_directory``,
``pg_relation_filepath``) are searched for a unique marker written only in the deleted records.
Before the purge the marker is there (the test can see dead rows); after it, in no file.
This needs the server's data directory on this machine and readable (root, as ``.ci/run``
runs): otherwise the test skips, and fails with ``MEMVAULT_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memvault import Memory
from postgres_server import conninfo, drop_schema, postgres_url, with_schema


@pytest.fixture
async def schema_url() -> AsyncIterator[tuple[str, str]]:
    url = postgres_url("the PostgreSQL purge tests")
    schema = f"purge_{uuid.uuid4().hex[:10]}"
    try:
        yield url, with_schema(url, schema)
    finally:
        await drop_schema(url, schema)


async def _sql(url: str, query: str) -> list[tuple[object, ...]]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
        cursor = await conn.execute(query)
        return await cursor.fetchall() if cursor.description else []


async def copies(url: str, schema: str, marker: str) -> int:
    """How many times ``marker`` occurs in the raw bytes of the files of the test's database
    (its folder under ``base/``), after a checkpoint."""
    await _sql(url, "CHECKPOINT")
    [(folder,)] = await _sql(
        url, "SELECT 'base/' || oid FROM pg_database WHERE datname = current_database()")
    files = {f"{folder}/{name}" for (name,) in await _sql(url, f"SELECT pg_ls_dir('{folder}')")}
    relations = await _sql(url, (
        "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n"
        f" ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' AND c.relkind IN ('r', 't', 'i')"))
    assert len(relations) > 10 and {str(p) for (p,) in relations} <= files
    found = 0
    for path in sorted(files):
        rows = await _sql(url, f"SELECT pg_read_binary_file('{path}', 0, {1 << 28}, true)")
        content = rows[0][0] if rows else None
        if isinstance(content, (bytes, memoryview)):
            found += bytes(content).count(marker.encode())
    return found


async def test_purge_leaves_no_deleted_row_in_the_table_files(schema_url: tuple[str, str]) -> None:
    url, store_url = schema_url
    schema = store_url.split("schema=")[-1]
    marker = f"mk{uuid.uuid4().hex}0"
    async with await Memory.open(store_url) as memory:
        for thread in ("t1", "t2", "t3", "kept"):
            await memory.create_thread(resource_id="ann", thread_id=thread, title=f"{thread} {marker}"
                                       if thread != "kept" else "kept")
            word = marker if thread != "kept" else "lighthouses"
            await memory.save_messages(
                [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": f"{i} {word}"}]}
                 for i in range(40)], thread_id=thread, resource_id="ann")
        await memory.update_working_memory(f"likes {marker}", resource_id="ann", thread_id="t3",
                                           scope="thread", mode="replace")
        await memory.save_summary(f"about {marker}", thread_id="t3", resource_id="ann",
                                  through_message_id="m5", expected_version=None)
        await memory.set_state({"x": marker}, resource_id="bob", key="k")

        await memory.delete_messages(["m1", "m2", "m3"], thread_id="t1", resource_id="ann")
        await memory.delete_messages([f"m{i}" for i in range(40)], thread_id="t1", resource_id="ann")
        await memory.delete_thread(thread_id="t1", resource_id="ann")
        await memory.clear_thread(thread_id="t2", resource_id="ann")
        await memory.delete_thread(thread_id="t2", resource_id="ann")
        await memory.delete_thread(thread_id="t3", resource_id="ann")
        await memory.delete_resource(resource_id="bob")
        assert not await memory.search_messages(resource_id="ann", query=marker)

        before = await copies(url, schema, marker)
        assert before > 0  # deleted but still in the files: this is what purge is for
        done = await memory.purge()
        assert "messages" in done["vacuum_full"] and "states" in done["vacuum_full"]
        after = await copies(url, schema, marker)
        assert after == 0, f"{after} copies of the marker left after purge (before: {before})"
        assert len(await memory.get_messages(thread_id="kept", resource_id="ann")) == 40
        assert len(await memory.search_messages(resource_id="ann", query="lighthouses", limit=50)) == 40


async def test_sweep_then_purge_leaves_no_expired_row_in_the_table_files(
    schema_url: tuple[str, str],
) -> None:
    """Retention on PostgreSQL: the sweep deletes the expired rows (reads never return them even
    before), and purge makes them unrecoverable from the table files, as after any deletion."""
    url, store_url = schema_url
    schema = store_url.split("schema=")[-1]
    marker = f"mk{uuid.uuid4().hex}0"
    old = (datetime.now(UTC) - timedelta(days=100)).isoformat()
    async with await Memory.open(store_url) as memory:
        await memory.save_messages(
            [{"id": f"o{i}", "role": "user", "created_at": old,
              "parts": [{"type": "text", "text": f"{i} {marker}"}]} for i in range(40)]
            + [{"id": f"n{i}", "role": "user", "parts": [{"type": "text", "text": f"{i} lighthouses"}]}
               for i in range(40)], thread_id="t", resource_id="ann")
        await memory.set_retention(timedelta(days=90))
        assert not await memory.search_messages(resource_id="ann", query=marker)
        assert await memory.sweep() == {"messages": 40, "threads": 0, "resources": 1}
        assert await copies(url, schema, marker) > 0  # deleted, still in the files until purge
        await memory.purge()
        assert await copies(url, schema, marker) == 0
        assert len(await memory.get_messages(thread_id="t", resource_id="ann")) == 40
