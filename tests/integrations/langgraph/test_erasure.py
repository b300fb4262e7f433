"""Erasure is real for graph data on SQLite (ARCHITECTURE.md, invariant 4): once
``Memory.delete_resource`` (or the checkpointer's ``delete_thread``, or the store's ``delete``)
returns, a unique marker written only in the deleted checkpoints, pending writes and items is
in none of the database's files (main file, ``-wal``, ``-shm``), while the data kept is still
there."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from memvault import Memory

pytest.importorskip("langgraph.checkpoint.base", reason="needs memvault[langgraph]")

from langgraph.checkpoint.base import empty_checkpoint

from memvault.integrations.langgraph import MemvaultSaver, MemvaultStore

FILES = ("", "-wal", "-shm")


def copies(db: Path, marker: str) -> int:
    """How many times ``marker`` occurs in the raw bytes of the database's files."""
    paths = [Path(f"{db}{suffix}") for suffix in FILES]
    return sum(path.read_bytes().count(marker.encode()) for path in paths if path.exists())


async def seed(memory: Memory, resource_id: str, thread: str, marker: str) -> None:
    saver = MemvaultSaver(memory, resource_id=resource_id)
    config: dict[str, object] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step in range(20):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": [f"{marker} said hello {step}"]}
        config = dict(await saver.aput(config, checkpoint, {"step": step, "note": marker}, {}))
        await saver.aput_writes(config, [("messages", f"{marker} write {step}")], f"task-{step}")
    store = MemvaultStore(memory, resource_id=resource_id)
    await store.aput((thread,), "fact", {"text": f"{marker} likes tea"})


async def assert_erased(tmp_path: Path, doomed: tuple[str, str], kept: tuple[str, str],
                        erase: Callable[[Memory], Awaitable[None]]) -> None:
    """Seed a graph under ``doomed`` (resource, thread) and one under ``kept``, each with its own
    marker; once ``erase`` returns (and again once the memory is closed) the doomed marker is in
    none of the files, while the kept one still is."""
    db = tmp_path / "graph.db"
    marker, kept_marker = f"zq{uuid.uuid4().hex[:10]}7", f"kp{uuid.uuid4().hex[:10]}7"
    async with await Memory.open(f"sqlite:///{db}") as memory:
        await seed(memory, *doomed, marker)
        await seed(memory, *kept, kept_marker)
        assert copies(db, marker) > 0
        await erase(memory)
        assert copies(db, marker) == 0
        assert copies(db, kept_marker) > 0
    assert copies(db, marker) == 0


async def test_deleting_the_resource_leaves_no_copy_in_the_files(tmp_path: Path) -> None:
    async def erase(memory: Memory) -> None:
        await memory.delete_resource(resource_id="ann")

    await assert_erased(tmp_path, ("ann", "t"), ("bob", "t"), erase)


async def test_deleting_a_graph_thread_or_an_item_leaves_no_copy(tmp_path: Path) -> None:
    async def erase(memory: Memory) -> None:
        await MemvaultSaver(memory, resource_id="ann").adelete_thread("doomed")
        await MemvaultStore(memory, resource_id="ann").adelete(("doomed",), "fact")

    await assert_erased(tmp_path, ("ann", "doomed"), ("ann", "kept"), erase)
