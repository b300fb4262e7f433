"""Every statement the SQLite store runs on a realistic workload is answered through an index:
no full scan of a table, so the cost of a call (delete_resource included) follows the rows it
touches, not the size of the database."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from memvault import Memory, Message, ToolCallPart, ToolResultPart
from memvault.stores.sqlite.schema import register_functions
from sqlite_trace import scans, traced_store


async def _workload(memory: Memory) -> None:
    for resource in ("ada", "bob"):
        for thread in ("t1", "t2"):
            await memory.create_thread(resource_id=resource, thread_id=thread, title=f"Title {thread}",
                                       metadata={"k": 1})
            saved = await memory.save_messages(
                [Message.user("I like green tea"), Message.assistant("Noted"),
                 Message(role="assistant", parts=[ToolCallPart(tool_call_id="c", name="f")]),
                 Message(role="tool", parts=[ToolResultPart(tool_call_id="c", output="ok")])],
                thread_id=thread, resource_id=resource,
            )
            await memory.save_messages(saved[:1], thread_id=thread, resource_id=resource)
    ids = [m.id for m in await memory.get_messages(thread_id="t1", resource_id="ada")]
    await memory.get_history(thread_id="t1", resource_id="ada")
    await memory.get_messages(thread_id="t1", resource_id="ada", ids=ids[1:2], message_range=1)
    await memory.get_messages(thread_id="t1", resource_id="ada", before=ids[2], last_n=1)
    await memory.get_messages(thread_id="t1", resource_id="ada", after=ids[0], first_n=1)
    page = await memory.list_threads(resource_id="ada", limit=1)
    await memory.list_threads(resource_id="ada", limit=1, cursor=page.next_cursor)
    for order_by in ("updated_at", "created_at"):
        for direction in ("desc", "asc"):
            order: dict[str, Any] = {"order_by": order_by, "direction": direction, "limit": 1}
            page = await memory.list_threads(resource_id="ada", title_contains="T", metadata={"k": 1},
                                             **order)
            await memory.list_threads(resource_id="ada", cursor=page.next_cursor, **order)
            await memory.list_threads(resource_id="ada", offset=1, title_contains="t", **order)
    await memory.count_threads(resource_id="ada")
    await memory.count_threads(resource_id="ada", title_contains="t", metadata={"k": 1})
    await memory.update_thread(thread_id="t1", resource_id="ada", title="tea")
    await memory.search_messages(resource_id="ada", query="tea", thread_id="t1")
    await memory.update_working_memory("likes tea", resource_id="ada")
    await memory.set_state({"step": 1}, resource_id="ada", key="run-1", status="suspended")
    await memory.list_states(resource_id="ada", status="suspended")
    await memory.set_state({"step": 1}, resource_id="ada", key="run-2", status="suspended", workflow_id="wf",
                           thread_id="t2")
    await memory.update_state(resource_id="ada", key="run-2", merge={"step": 2}, expected_version=1)
    await memory.list_states(resource_id="ada")
    await memory.list_states(resource_id="ada", workflow_id="wf")
    await memory.list_states(resource_id="ada", thread_id="t2")
    await memory.list_suspended(resource_id="ada", workflow_id="wf", thread_id="t2")
    await memory.delete_messages(ids[:1], thread_id="t1", resource_id="ada")
    await memory.clear_thread(thread_id="t2", resource_id="ada")
    await memory.delete_thread(thread_id="t2", resource_id="ada")
    await memory.delete_resource(resource_id="bob")


async def test_no_statement_scans_a_whole_table(tmp_path: Path) -> None:
    path = tmp_path / "plans.db"
    store, statements = await traced_store(path)
    memory = Memory(store)
    await _workload(memory)
    await memory.close()

    checked = 0
    probe = sqlite3.connect(path)
    register_functions(probe)
    for sql in dict.fromkeys(statements):
        if not re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE)", sql, re.IGNORECASE):
            continue
        scanned, plan = scans(probe, sql)
        # messages_fts is searched through its own index (and its vocabulary by term);
        # messages_fts_progress has one row; json_each is the list of rowids a search passes;
        # FTS5 reads its own one-row configuration (main.messages_fts_config) when it starts
        full = [s for s in scanned
                if s not in ("messages_fts", "messages_fts_vocab", "messages_fts_progress", "json_each",
                             "main.messages_fts_config")]
        assert not full, f"{sql}\n  plan: {plan}"
        checked += 1
    assert checked >= 15
