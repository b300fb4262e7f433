"""Importing a Mastra memory database written by @mastra/memory + @mastra/libsql
(tests/transfer/seeds/mastra.mjs): every thread, message, part, working memory and workflow
snapshot compared with what Mastra itself reads back (its JSONB columns included); a second
import changes nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from seedcheck import assert_reimport_changes_nothing, at, mastra_parts, memvault_parts

from memvault import Memory
from memvault.errors import StoreOpenError

Source = tuple[Path, dict[str, Any]]


async def test_every_message_matches_what_mastra_reads(target: Memory, mastra_db: Source) -> None:
    path, seen = mastra_db
    report = await target.import_from(f"mastra:file:{path}")
    threads = seen["threads"]
    assert report.counts == {"threads": len(threads), "messages": sum(len(t["messages"]) for t in threads),
                             "working_memories": 2, "states": 1}
    for source in threads:
        thread = await target.get_thread(thread_id=source["id"], resource_id=source["resourceId"])
        assert thread is not None
        assert thread.title == (source["title"] or None)
        assert thread.metadata == {k: v for k, v in source["metadata"].items() if k != "workingMemory"}
        assert thread.created_at == at(source["createdAt"])
        assert thread.updated_at == at(source["updatedAt"])
        messages = await target.get_messages(thread_id=thread.id, resource_id=thread.resource_id)
        assert [m.id for m in messages] == [m["id"] for m in source["messages"]]
        for mine, theirs in zip(messages, source["messages"], strict=True):
            assert (mine.role, mine.created_at) == (theirs["role"], at(theirs["createdAt"]))
            assert mine.metadata == theirs["content"].get("metadata", {})
            assert memvault_parts(mine) == mastra_parts(theirs["content"]["parts"])
        assert await target.get_working_memory(resource_id=thread.resource_id, thread_id=thread.id,
                                               scope="thread") == source["workingMemory"]
        assert await target.get_working_memory(resource_id=thread.resource_id,
                                               scope="resource") == source["resourceWorkingMemory"]


async def test_jsonb_metadata_comes_back_whole(target: Memory, mastra_db: Source) -> None:
    path, _ = mastra_db
    with sqlite3.connect(path) as db:
        (raw,) = db.execute("SELECT metadata FROM mastra_threads WHERE id = 't-trip'").fetchone()
    assert isinstance(raw, bytes)  # Mastra wrote binary JSON: the import decodes it itself
    await target.import_from(f"mastra:{path}")
    thread = await target.get_thread(thread_id="t-trip", resource_id="alice")
    assert thread is not None
    assert thread.metadata["quote"] == 'say "ciao"\n\tthen go'
    assert thread.metadata["big"] == -9007199254740991
    assert thread.metadata["nested"] == {"ok": True, "none": None}


async def test_workflow_snapshots_become_states(target: Memory, mastra_db: Source) -> None:
    path, seen = mastra_db
    report = await target.import_from(f"mastra:{path}")
    run = next(r for r in seen["runs"] if r["runId"] == "run-1")
    state = await target.get_state(resource_id="alice", key="mastra:workflow:book-trip:run-1")
    assert state is not None
    assert (state.value, state.status) == (run["snapshot"], "suspended")
    assert report.not_carried == {
        "workflow snapshots without a resource (memvault states belong to a resource)": 1}


async def test_threads_belong_to_their_resource(target: Memory, mastra_db: Source) -> None:
    await target.import_from(f"mastra:{mastra_db[0]}")
    assert await target.get_thread(thread_id="t-trip", resource_id="bob") is None
    assert await target.get_messages(thread_id="t-bob", resource_id="alice") == []


async def test_a_second_import_changes_nothing(target: Memory, mastra_db: Source) -> None:
    await assert_reimport_changes_nothing(target, f"mastra:{mastra_db[0]}")


async def test_a_message_of_another_resource_is_not_carried(target: Memory, mastra_db: Source,
                                                            tmp_path: Path) -> None:
    copy = tmp_path / "mixed.db"
    shutil.copy(mastra_db[0], copy)
    with sqlite3.connect(copy) as db:
        db.execute("""UPDATE mastra_messages SET "resourceId" = 'mallory' WHERE id = 'm-1'""")
        db.execute("UPDATE mastra_threads SET metadata = x'ff00' WHERE id = 't-bob'")
    report = await target.import_from(f"mastra:{copy}")
    assert report.not_carried["messages whose resource is not their thread's"] == 1
    assert report.not_carried["threads that could not be read (with their messages)"] == 1
    assert "mallory" not in await target.resource_ids()
    ids = [m.id for m in await target.get_messages(thread_id="t-trip", resource_id="alice")]
    assert ids == ["m-2", "m-3"]


async def test_a_voltagent_file_is_not_a_mastra_one(target: Memory, voltagent_db: Source) -> None:
    with pytest.raises(StoreOpenError, match="not a Mastra memory database"):
        await target.import_from(f"mastra:{voltagent_db[0]}")
    assert await target.resource_ids() == []
