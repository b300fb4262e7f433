"""Group commit: concurrent writes share transactions, each caller returns after its commit,
and one caller's error rolls back only its own write."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memvault import Memory, Message, ThreadExistsError
from memvault.stores.sqlite import SqliteStore


async def _open(tmp_path: Path) -> tuple[Memory, list[str]]:
    store = await SqliteStore.open(tmp_path / "g.db")
    statements: list[str] = []
    for conn in store._worker.connections():  # the worker's, and the one of small writes at NORMAL
        await store._worker.run(conn.set_trace_callback, statements.append)
    return Memory(store), statements


async def test_concurrent_saves_share_commits_and_all_land(tmp_path: Path) -> None:
    memory, statements = await _open(tmp_path)
    saves = [
        memory.save_messages([Message.user(f"turn {i}", id=f"m{i}")], thread_id=f"t{i % 7}", resource_id="r")
        for i in range(300)
    ]
    saved = await asyncio.gather(*saves)
    commits = sum(1 for s in statements if s == "COMMIT")
    await memory.close()

    assert commits < 300 / 3  # shared: far fewer transactions than writes
    reopened = await Memory.open(f"sqlite:///{tmp_path}/g.db")
    for k in range(7):
        stored = await reopened.get_messages(thread_id=f"t{k}", resource_id="r")
        assert [m.seq for m in stored] == list(range(1, len(stored) + 1))
        assert {m.id for m in stored} == {f"m{i}" for i in range(300) if i % 7 == k}
    assert sorted(m.id for batch in saved for m in batch) == sorted(f"m{i}" for i in range(300))
    await reopened.close()


async def test_a_failing_write_in_a_group_fails_alone(tmp_path: Path) -> None:
    memory, _ = await _open(tmp_path)
    await memory.create_thread(resource_id="r", thread_id="taken")
    results = await asyncio.gather(
        *[memory.save_messages([Message.user(f"x{i}", id=f"x{i}")], thread_id="t", resource_id="r")
          for i in range(20)],
        memory.create_thread(resource_id="r", thread_id="taken"),
        *[memory.save_messages([Message.user(f"y{i}", id=f"y{i}")], thread_id="t", resource_id="r")
          for i in range(20)],
        return_exceptions=True,
    )
    failures = [r for r in results if isinstance(r, BaseException)]
    assert len(failures) == 1
    assert isinstance(failures[0], ThreadExistsError)
    stored = await memory.get_messages(thread_id="t", resource_id="r")
    assert len(stored) == 40
    assert [m.seq for m in stored] == list(range(1, 41))
    await memory.close()


async def test_a_write_whose_body_raises_changes_nothing(tmp_path: Path) -> None:
    memory, _ = await _open(tmp_path)

    def explode(current: str | None) -> str:
        raise RuntimeError("boom")

    other = memory.update_working_memory("kept", resource_id="r")
    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.gather(other, memory.store.update_working_memory("r", "thread:x", explode))
    assert await memory.get_working_memory(resource_id="r") == "kept"
    assert await memory.store.get_working_memory("r", "thread:x") is None
    await memory.close()
