"""A checkpointer or store bound to one resource never reads, lists, copies or deletes another
resource's checkpoints or items, even with the same thread ids and namespaces; deleting a
resource deletes its checkpoints, writes and items, and nothing of another resource.
Over ``memory://``, a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

import pytest

from memvault import Memory

pytest.importorskip("langgraph.checkpoint.base", reason="needs memvault[langgraph]")

from langgraph.checkpoint.base import empty_checkpoint

from memvault.integrations.langgraph import MemvaultSaver, MemvaultStore


async def put(saver: MemvaultSaver, thread: str, value: str) -> dict[str, object]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": value}
    checkpoint["channel_versions"] = {"note": 1}
    config = await saver.aput({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, checkpoint,
                              {"source": "input", "step": 0, "run_id": "run-1"}, {"note": 1})
    await saver.aput_writes(config, [("note", f"pending {value}")], "task-1")
    return dict(config)


async def test_another_resource_sees_nothing_and_changes_nothing(any_memory: Memory) -> None:
    ada, bob = MemvaultSaver(any_memory, resource_id="ada"), MemvaultSaver(any_memory, resource_id="bob")
    ada_store = MemvaultStore(any_memory, resource_id="ada")
    bob_store = MemvaultStore(any_memory, resource_id="bob")
    stored = await put(ada, "t1", "ada's secret")
    await ada_store.aput(("notes",), "k", {"text": "ada's secret"})
    thread = {"configurable": {"thread_id": "t1"}}

    assert await bob.aget_tuple(thread) is None
    assert await bob.aget_tuple(stored) is None  # naming ada's checkpoint id does not help
    assert [t async for t in bob.alist(None)] == []
    assert [t async for t in bob.alist(thread, filter={"run_id": "run-1"})] == []
    await bob.acopy_thread("t1", "stolen")
    assert [t async for t in bob.alist({"configurable": {"thread_id": "stolen"}})] == []
    assert await bob_store.aget(("notes",), "k") is None
    assert await bob_store.asearch(("notes",), query="secret") == []
    assert await bob_store.alist_namespaces() == []

    await bob.adelete_thread("t1")
    await bob.adelete_for_runs(["run-1"])
    await bob.aprune(["t1"], strategy="delete")
    await bob_store.adelete(("notes",), "k")
    tup = await ada.aget_tuple(thread)
    assert tup is not None and tup.checkpoint["channel_values"] == {"note": "ada's secret"}
    assert [w[2] for w in tup.pending_writes or []] == ["pending ada's secret"]
    assert (await ada_store.aget(("notes",), "k")) is not None


async def test_deleting_a_resource_deletes_its_checkpoints_and_items_only(any_memory: Memory) -> None:
    ada, bob = MemvaultSaver(any_memory, resource_id="ada"), MemvaultSaver(any_memory, resource_id="bob")
    for saver in (ada, bob):
        await put(saver, "t1", f"{saver.resource_id}'s note")
        await put(saver, "t2", f"{saver.resource_id}'s other note")
        await MemvaultStore(any_memory, resource_id=saver.resource_id).aput(("notes",), "k", {"v": 1})

    deleted = await any_memory.delete_resource(resource_id="ada")
    assert deleted.extra == {"checkpoints": 2, "items": 1}
    assert [t async for t in ada.alist(None)] == []
    assert await MemvaultStore(any_memory, resource_id="ada").alist_namespaces() == []
    assert len([t async for t in bob.alist(None)]) == 2
    assert await MemvaultStore(any_memory, resource_id="bob").aget(("notes",), "k") is not None
    # writes went too: a checkpoint put again under ada's old ids starts with none
    again = await put(ada, "t1", "new")
    tup = await ada.aget_tuple(again)
    assert tup is not None and [w[2] for w in tup.pending_writes or []] == ["pending new"]
