"""States: versioned values with compare-and-set, listed by status."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memvault import Memory, State, ValidationError
from memvault.testing.support import tick

pytestmark = pytest.mark.capability("states")

R, K = "alice", "run-1"
VALUE = {"step": 3, "pending": ["a", "b"], "note": "中文 🎉", "ratio": 0.25, "done": False, "x": None}


async def test_set_get_and_version(memory: Memory) -> None:
    assert await memory.get_state(resource_id=R, key=K) is None
    first = await memory.set_state(VALUE, resource_id=R, key=K, status="running")
    assert (first.resource_id, first.key, first.value, first.status, first.version) == (
        R, K, VALUE, "running", 1)
    assert await memory.get_state(resource_id=R, key=K) == first
    await tick()
    second = await memory.set_state([1, "two"], resource_id=R, key=K)
    assert (second.value, second.status, second.version) == ([1, "two"], None, 2)
    assert second.updated_at > first.updated_at
    assert await memory.get_state(resource_id=R, key=K) == second


@pytest.mark.parametrize("value", [None, 0, "text", [], {}, {"nested": {"deep": [1, {"x": "y"}]}}])
async def test_any_json_value_round_trips(memory: Memory, value: Any) -> None:
    await memory.set_state(value, resource_id=R, key=K)
    state = await memory.get_state(resource_id=R, key=K)
    assert state is not None and state.value == value


@pytest.mark.parametrize("value", [float("nan"), {1: "int key"}, {"s": {1, 2}}, object(), "\x00"])
async def test_non_json_value_is_refused(memory: Memory, value: Any) -> None:
    await memory.set_state("kept", resource_id=R, key=K)
    with pytest.raises(ValidationError):
        await memory.set_state(value, resource_id=R, key=K)
    with pytest.raises(ValidationError):
        await memory.compare_and_set_state(value, resource_id=R, key=K, expected_version=1)
    state = await memory.get_state(resource_id=R, key=K)
    assert state is not None and (state.value, state.version) == ("kept", 1)


@pytest.mark.parametrize(
    ("existing_writes", "expected_version", "succeeds"),
    [
        (0, None, True),  # None: create only if absent
        (1, None, False),
        (0, 1, False),
        (1, 1, True),
        (2, 1, False),  # stale
        (2, 2, True),
        (2, 3, False),  # from the future
    ],
)
async def test_compare_and_set(
    memory: Memory, existing_writes: int, expected_version: int | None, succeeds: bool
) -> None:
    for i in range(existing_writes):
        await memory.set_state(f"v{i + 1}", resource_id=R, key=K, status="old")
    before = await memory.get_state(resource_id=R, key=K)
    result = await memory.compare_and_set_state(
        "new", resource_id=R, key=K, expected_version=expected_version, status="new"
    )
    after = await memory.get_state(resource_id=R, key=K)
    if succeeds:
        assert result is not None
        assert (result.value, result.status, result.version) == ("new", "new", existing_writes + 1)
        assert after == result
    else:
        assert result is None
        assert after == before


async def test_concurrent_compare_and_set_has_one_winner(memory: Memory) -> None:
    await memory.set_state(0, resource_id=R, key=K)
    results = await asyncio.gather(*(
        memory.compare_and_set_state(i, resource_id=R, key=K, expected_version=1)
        for i in range(1, 11)
    ))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and winners[0].version == 2
    assert await memory.get_state(resource_id=R, key=K) == winners[0]


async def test_list_states_newest_first_and_by_status(memory: Memory) -> None:
    for key, status in [("a", "running"), ("b", "done"), ("c", "running"), ("d", None)]:
        await memory.set_state({"key": key}, resource_id=R, key=key, status=status)
        await tick()
    await memory.set_state({"key": "a", "again": True}, resource_id=R, key="a", status="running")

    def keys(states: list[State]) -> list[str]:
        return [s.key for s in states]

    assert keys(await memory.list_states(resource_id=R)) == ["a", "d", "c", "b"]
    assert keys(await memory.list_states(resource_id=R, status="running")) == ["a", "c"]
    assert keys(await memory.list_states(resource_id=R, status="done")) == ["b"]
    assert keys(await memory.list_states(resource_id=R, status="nope")) == []
    assert keys(await memory.list_states(resource_id=R, limit=2)) == ["a", "d"]
    assert keys(await memory.list_states(resource_id="nobody")) == []
    listed = await memory.list_states(resource_id=R, status="done")
    assert listed[0] == await memory.get_state(resource_id=R, key="b")


async def test_delete_state(memory: Memory) -> None:
    await memory.set_state(1, resource_id=R, key=K)
    await memory.set_state(2, resource_id=R, key="other")
    assert await memory.delete_state(resource_id=R, key=K) is True
    assert await memory.get_state(resource_id=R, key=K) is None
    assert await memory.delete_state(resource_id=R, key=K) is False
    assert [s.key for s in await memory.list_states(resource_id=R)] == ["other"]
    recreated = await memory.compare_and_set_state(3, resource_id=R, key=K, expected_version=None)
    assert recreated is not None and recreated.version == 1


async def test_returned_states_are_snapshots(memory: Memory) -> None:
    value: dict[str, list[Any]] = {"list": [1]}
    state = await memory.set_state(value, resource_id=R, key=K)
    value["list"].append("input")
    state.value["list"].append("returned")
    fetched = await memory.get_state(resource_id=R, key=K)
    assert fetched is not None
    fetched.value["list"].append("fetched")
    final = await memory.get_state(resource_id=R, key=K)
    assert final is not None and final.value == {"list": [1]}
