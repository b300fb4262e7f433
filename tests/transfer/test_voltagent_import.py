"""Importing a VoltAgent memory database written by @voltagent/core + @voltagent/libsql
(tests/transfer/seeds/voltagent.mjs): every conversation, message, part, working memory and
workflow state compared with what VoltAgent itself reads back; a second import changes nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from seedcheck import assert_reimport_changes_nothing, at, memvault_parts, voltagent_parts

from memvault import Memory
from memvault.errors import ReadOnlyStoreError, StoreOpenError, ValidationError
from memvault.model import Message

Source = tuple[Path, dict[str, Any]]


async def test_every_message_matches_what_voltagent_reads(target: Memory, voltagent_db: Source) -> None:
    path, seen = voltagent_db
    report = await target.import_from(f"voltagent:{path}")
    conversations = seen["conversations"]
    assert report.counts == {"threads": len(conversations),
                             "messages": sum(len(c["messages"]) for c in conversations),
                             "working_memories": 3, "states": 2}
    for conversation in conversations:
        thread = await target.get_thread(thread_id=conversation["id"], resource_id=conversation["userId"])
        assert thread is not None
        metadata = {k: v for k, v in conversation["metadata"].items() if k != "workingMemory"}
        assert thread.title == conversation["title"]
        assert thread.metadata == {**metadata, "voltagent": {"resource_id": conversation["resourceId"]}}
        assert thread.created_at == at(conversation["createdAt"])
        assert thread.updated_at == at(conversation["updatedAt"])
        messages = await target.get_messages(thread_id=thread.id, resource_id=thread.resource_id)
        assert [m.id for m in messages] == [m["id"] for m in conversation["messages"]]
        for mine, theirs in zip(messages, conversation["messages"], strict=True):
            their_metadata = dict(theirs.get("metadata") or {})
            created = their_metadata.pop("createdAt")
            assert (mine.role, mine.created_at) == (theirs["role"], at(created))
            assert mine.metadata == their_metadata
            assert memvault_parts(mine) == voltagent_parts(theirs["parts"])
        note = await target.get_working_memory(resource_id=thread.resource_id, thread_id=thread.id,
                                               scope="thread")
        assert note == conversation["workingMemory"]


async def test_parts_of_every_kind_arrive(target: Memory, voltagent_db: Source) -> None:
    await target.import_from(f"voltagent:file:{voltagent_db[0]}")
    messages = await target.get_messages(thread_id="conv-weather", resource_id="alice")
    kinds = {part.type for m in messages for part in m.parts}
    assert kinds == {"text", "reasoning", "tool-call", "tool-result", "file", "data"}
    failed = [p for m in messages for p in m.tool_results if p.is_error]
    assert [(p.tool_call_id, p.output) for p in failed] == [("call-2", "service down")]
    assert messages[1].text == "What's the weather in Paris? Café au lait ☕"


async def test_working_memory_at_both_scopes_and_states(target: Memory, voltagent_db: Source) -> None:
    _, seen = voltagent_db
    await target.import_from(f"voltagent:{voltagent_db[0]}")
    for user, note in seen["userMemory"].items():
        assert await target.get_working_memory(resource_id=user, scope="resource") == note
    for workflow in seen["workflows"]:
        state = await target.get_state(resource_id=workflow.get("userId") or "none",
                                       key=f"voltagent:workflow:{workflow['id']}")
        if workflow.get("userId") is None:
            assert state is None
            continue
        assert state is not None
        assert state.status == workflow["status"]
        assert state.updated_at == at(workflow["updatedAt"])
        for field in ("workflowId", "workflowName", "input", "workflowState", "output", "metadata"):
            assert state.value.get(field) == workflow.get(field), field
        if "suspension" in workflow:
            assert state.value["suspension"] == workflow["suspension"]


async def test_threads_belong_to_their_user(target: Memory, voltagent_db: Source) -> None:
    await target.import_from(f"voltagent:{voltagent_db[0]}")
    assert await target.get_thread(thread_id="conv-weather", resource_id="bob") is None
    assert await target.get_messages(thread_id="conv-weather", resource_id="bob") == []
    assert sorted(await target.resource_ids()) == ["alice", "bob"]


async def test_report_names_what_was_not_carried(target: Memory, voltagent_db: Source) -> None:
    report = await target.import_from(f"voltagent:{voltagent_db[0]}")
    assert report.system == "voltagent"
    assert report.not_carried == {
        "ids of data parts": 1,
        "workflow states without a user (memvault states belong to a resource)": 1,
    }


async def test_a_second_import_changes_nothing(target: Memory, voltagent_db: Source) -> None:
    await assert_reimport_changes_nothing(target, f"voltagent:{voltagent_db[0]}")


async def test_reimport_keeps_messages_added_since(target: Memory, voltagent_db: Source) -> None:
    await target.import_from(f"voltagent:{voltagent_db[0]}")
    await target.save_messages([Message.user("added in memvault", id="mine")], thread_id="conv-notes",
                               resource_id="alice")
    await target.import_from(f"voltagent:{voltagent_db[0]}")
    messages = await target.get_messages(thread_id="conv-notes", resource_id="alice")
    assert [m.id for m in messages] == ["v-n1", "v-n2", "mine"]
    assert [m.seq for m in messages] == [1, 2, 3]


async def test_one_unreadable_row_does_not_stop_the_rest(target: Memory, voltagent_db: Source,
                                                         tmp_path: Path) -> None:
    copy = tmp_path / "broken.db"
    shutil.copy(voltagent_db[0], copy)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE voltagent_memory_messages SET parts = '[{\"type\": ' WHERE message_id = 'v-n1'")
    report = await target.import_from(f"voltagent:{copy}")
    assert report.not_carried["messages that could not be read"] == 1
    messages = await target.get_messages(thread_id="conv-notes", resource_id="alice")
    assert [m.id for m in messages] == ["v-n2"]


@pytest.mark.parametrize("kind", ["garbage", "empty sqlite", "mastra name", "missing"])
async def test_a_file_that_is_not_voltagent_is_refused(target: Memory, tmp_path: Path, kind: str,
                                                       voltagent_db: Source) -> None:
    path = tmp_path / "source.db"
    if kind == "garbage":
        path.write_bytes(b"\x00not a database\xff" * 300)
    elif kind == "empty sqlite":
        sqlite3.connect(path).execute("CREATE TABLE other (x)").connection.close()
    source = f"mastra:{voltagent_db[0]}" if kind == "mastra name" else f"voltagent:{path}"
    with pytest.raises(StoreOpenError):
        await target.import_from(source)
    assert await target.resource_ids() == []


@pytest.mark.parametrize("source", ["", "voltagent", "letta:/x.db", "voltagent:libsql://host/db",
                                    "voltagent:file:", 42])
async def test_a_bad_source_name_is_a_validation_error(target: Memory, source: Any) -> None:
    with pytest.raises(ValidationError):
        await target.import_from(source)
    assert await target.resource_ids() == []


async def test_a_read_only_target_refuses_and_holds_nothing(tmp_path: Path, voltagent_db: Source) -> None:
    path = tmp_path / "target.db"
    await (await Memory.open(f"sqlite:///{path}")).close()
    async with await Memory.open(f"sqlite:///{path}?mode=ro") as memory:
        with pytest.raises(ReadOnlyStoreError):
            await memory.import_from(f"voltagent:{voltagent_db[0]}")
    async with await Memory.open(f"sqlite:///{path}") as memory:
        assert await memory.resource_ids() == []
