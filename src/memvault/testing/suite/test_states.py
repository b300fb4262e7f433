"""States: versioned values with compare-and-set, listed by status; workflow ids, thread scope,
suspended runs and partial updates (JSON merge patch)."""

from __future__ import annotations

import asyncio
import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message, NotFoundError, State, ThreadNotFoundError, ValidationError
from memvault.rules.merge_patch import merge_patch
from memvault.testing import has
from memvault.testing.support import tick
from memvault.transfer.jsonl import parse_records

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


# workflow states: workflow ids, threads, partial updates, suspended runs


async def test_workflow_and_thread_round_trip_and_created_at_is_kept(memory: Memory) -> None:
    await memory.create_thread(resource_id=R, thread_id="t")
    first = await memory.set_state({"step": 1}, resource_id=R, key=K, status="running", workflow_id="wf",
                                   thread_id="t")
    assert (first.workflow_id, first.thread_id, first.created_at) == ("wf", "t", first.updated_at)
    assert await memory.get_state(resource_id=R, key=K) == first
    await tick()
    second = await memory.set_state({"step": 2}, resource_id=R, key=K)  # a whole write: untagged now
    assert (second.workflow_id, second.thread_id, second.version) == (None, None, 2)
    assert second.created_at == first.created_at < second.updated_at
    await tick()
    patched = await memory.update_state(resource_id=R, key=K, merge={"step": 3})
    assert patched is not None and patched.created_at == first.created_at < patched.updated_at
    assert await memory.get_state(resource_id=R, key=K) == patched


@pytest.mark.parametrize("thread_id", ["nope", "bobs-thread"])
async def test_a_missing_or_foreign_thread_is_refused_and_nothing_is_written(
    memory: Memory, thread_id: str
) -> None:
    await memory.create_thread(resource_id="bob", thread_id="bobs-thread")
    await memory.set_state("kept", resource_id=R, key=K)
    for write in (
        memory.set_state("new", resource_id=R, key=K, thread_id=thread_id),
        memory.set_state("new", resource_id=R, key="other", thread_id=thread_id),
        memory.compare_and_set_state("new", resource_id=R, key=K, expected_version=1, thread_id=thread_id),
    ):
        with pytest.raises(ThreadNotFoundError) as raised:
            await write
        assert raised.value.thread_id == thread_id
    state = await memory.get_state(resource_id=R, key=K)
    assert state is not None and (state.value, state.version, state.thread_id) == ("kept", 1, None)
    assert await memory.get_state(resource_id=R, key="other") is None
    assert await memory.list_states(resource_id=R, thread_id=thread_id) == []


async def test_list_by_workflow_status_thread_and_suspended(memory: Memory) -> None:
    for thread_id in ("t1", "t2"):
        await memory.create_thread(resource_id=R, thread_id=thread_id)
    for key, workflow, status, thread in [("a", "wf1", "suspended", "t1"), ("b", "wf1", "running", "t1"),
                                          ("c", "wf2", "suspended", None), ("d", "wf2", "suspended", "t2"),
                                          ("e", None, "suspended", None)]:
        await memory.set_state({"key": key}, resource_id=R, key=key, status=status, workflow_id=workflow,
                               thread_id=thread)
        await tick()
    await memory.set_state({"key": "x"}, resource_id="bob", key="x", status="suspended", workflow_id="wf1")

    def keys(states: list[State]) -> list[str]:
        return [s.key for s in states]

    assert keys(await memory.list_states(resource_id=R, workflow_id="wf1")) == ["b", "a"]
    assert keys(await memory.list_states(resource_id=R, workflow_id="wf2", status="suspended")) == ["d", "c"]
    assert keys(await memory.list_states(resource_id=R, thread_id="t1", status="running")) == ["b"]
    assert keys(await memory.list_states(resource_id=R, thread_id="t2", workflow_id="wf1")) == []
    assert keys(await memory.list_suspended(resource_id=R)) == ["e", "d", "c", "a"]
    assert keys(await memory.list_suspended(resource_id=R, workflow_id="wf2")) == ["d", "c"]
    assert keys(await memory.list_suspended(resource_id=R, thread_id="t1")) == ["a"]
    assert keys(await memory.list_suspended(resource_id=R, limit=1)) == ["e"]
    assert keys(await memory.list_suspended(resource_id="nobody")) == []
    await memory.update_state(resource_id=R, key="a", status="running")
    assert keys(await memory.list_suspended(resource_id=R, workflow_id="wf1")) == []


async def test_deleting_a_thread_deletes_its_states_only(memory: Memory) -> None:
    await memory.create_thread(resource_id=R, thread_id="t")
    await memory.create_thread(resource_id=R, thread_id="keep")
    await memory.set_state(1, resource_id=R, key="of-t", thread_id="t", status="suspended")
    await memory.set_state(2, resource_id=R, key="of-keep", thread_id="keep")
    await memory.set_state(3, resource_id=R, key="untied")
    assert await memory.delete_thread(thread_id="t", resource_id=R) is True
    assert await memory.get_state(resource_id=R, key="of-t") is None
    assert sorted(s.key for s in await memory.list_states(resource_id=R)) == ["of-keep", "untied"]
    await memory.create_thread(resource_id=R, thread_id="t")  # a new thread under the same id has none
    assert await memory.list_states(resource_id=R, thread_id="t") == []
    deleted = await memory.delete_resource(resource_id=R)
    assert deleted.states == 2
    assert await memory.list_states(resource_id=R) == []


# RFC 7386, appendix A: (value, patch, result)
RFC_7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("value", "patch", "result"), RFC_7386)
async def test_update_applies_a_json_merge_patch(memory: Memory, value: Any, patch: Any, result: Any) -> None:
    await memory.set_state(value, resource_id=R, key=K, status="running", workflow_id="wf")
    updated = await memory.update_state(resource_id=R, key=K, merge=patch)
    assert updated is not None
    assert (updated.value, updated.status, updated.workflow_id, updated.version) == (
        result, "running", "wf", 2)
    assert await memory.get_state(resource_id=R, key=K) == updated


async def test_update_status_and_compare_and_set(memory: Memory) -> None:
    await memory.set_state({"n": 1}, resource_id=R, key=K, status="running")
    only_status = await memory.update_state(resource_id=R, key=K, status="suspended")
    assert only_status is not None and (only_status.value, only_status.status) == ({"n": 1}, "suspended")
    cleared = await memory.update_state(resource_id=R, key=K, status=None, expected_version=2)
    assert cleared is not None and (cleared.status, cleared.version) == (None, 3)
    stale = await memory.update_state(resource_id=R, key=K, merge={"n": 9}, expected_version=2)
    assert stale is None
    untouched = await memory.update_state(resource_id=R, key=K)  # nothing to change: still a write
    assert untouched is not None and (untouched.value, untouched.version) == ({"n": 1}, 4)
    assert await memory.get_state(resource_id=R, key=K) == untouched


async def test_update_of_a_missing_state_is_not_found(memory: Memory) -> None:
    await memory.set_state(1, resource_id="bob", key=K)
    for resource_id in (R, "nobody"):
        with pytest.raises(NotFoundError):
            await memory.update_state(resource_id=resource_id, key=K, merge={"a": 1})
        with pytest.raises(NotFoundError):
            await memory.update_state(resource_id=resource_id, key=K, merge={"a": 1}, expected_version=1)
    assert await memory.get_state(resource_id=R, key=K) is None
    bob = await memory.get_state(resource_id="bob", key=K)
    assert bob is not None and (bob.value, bob.version) == (1, 1)


@pytest.mark.parametrize("change", [
    {"merge": float("nan")}, {"merge": {"s": {1, 2}}}, {"merge": {1: "int key"}}, {"status": 3},
    {"expected_version": -1}, {"expected_version": "1"}, {"merge": {"a": "\x00"}},
])
async def test_bad_update_is_refused_and_writes_nothing(memory: Memory, change: dict[str, Any]) -> None:
    before = await memory.set_state({"a": 1}, resource_id=R, key=K)
    with pytest.raises(ValidationError):
        await memory.update_state(resource_id=R, key=K, **change)
    assert await memory.get_state(resource_id=R, key=K) == before


async def test_a_merge_nested_too_deep_is_refused_and_one_at_the_limit_applies(memory: Memory) -> None:
    def nested(levels: int, leaf: Any) -> Any:
        for _ in range(levels):
            leaf = {"d": leaf}
        return leaf

    before = await memory.set_state(nested(64, "leaf"), resource_id=R, key=K)  # 64 levels: the most allowed
    with pytest.raises(ValidationError, match="nested more than 64"):
        await memory.update_state(resource_id=R, key=K, merge=nested(64, {"x": 1}))
    assert await memory.get_state(resource_id=R, key=K) == before
    deepest = await memory.update_state(resource_id=R, key=K, merge=nested(64, "new leaf"))
    assert deepest is not None and deepest.value == nested(64, "new leaf")
    assert await memory.get_state(resource_id=R, key=K) == deepest


async def test_concurrent_updates_all_apply(memory: Memory) -> None:
    """Merges without a version check never lose one another: each runs alone between its read
    and its write."""
    await memory.set_state({}, resource_id=R, key=K)
    await asyncio.gather(*(memory.update_state(resource_id=R, key=K, merge={f"k{i}": i}) for i in range(12)))
    state = await memory.get_state(resource_id=R, key=K)
    assert state is not None
    assert (state.value, state.version) == ({f"k{i}": i for i in range(12)}, 13)


async def test_concurrent_versioned_updates_have_one_winner(memory: Memory) -> None:
    await memory.set_state({"n": 0}, resource_id=R, key=K)
    results = await asyncio.gather(*(
        memory.update_state(resource_id=R, key=K, merge={"n": i}, expected_version=1) for i in range(1, 9)))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and winners[0].version == 2
    assert await memory.get_state(resource_id=R, key=K) == winners[0]


@pytest.mark.capability("export", "summaries", "embeddings", "full_text")
async def test_export_and_import_carry_workflow_thread_and_times(memory: Memory, store_factory: Any,
                                                                  tmp_path: Path) -> None:
    await memory.create_thread(resource_id=R, thread_id="t")
    await memory.set_state({"a": 1}, resource_id=R, key="tied", status="suspended", workflow_id="wf",
                           thread_id="t")
    await tick()
    await memory.update_state(resource_id=R, key="tied", merge={"b": 2})
    await memory.set_state([1], resource_id=R, key="loose")
    sink = io.StringIO()
    await memory.export_records(sink)
    records = parse_records(sink.getvalue().splitlines())
    async with store_factory.memory(tmp_path / "other") as other:
        await other.import_records(records)
        for key in ("tied", "loose"):
            copied = await other.get_state(resource_id=R, key=key)
            assert copied == await memory.get_state(resource_id=R, key=key)
        await other.delete_thread(thread_id="t", resource_id=R)  # still tied to its thread there
        assert [s.key for s in await other.list_states(resource_id=R)] == ["loose"]


@pytest.mark.capability("export", "summaries", "embeddings", "full_text")
async def test_import_of_a_state_whose_thread_is_nowhere_writes_nothing(
        memory: Memory, store_factory: Any, tmp_path: Path) -> None:
    """Records holding a thread, then a state tied to a thread that is neither in the records nor
    in the target: ThreadNotFoundError, and the target stays empty (the thread before it is not
    written either). With that thread in the target, the same records import."""
    await memory.create_thread(resource_id=R, thread_id="kept")
    await memory.save_messages([Message.user("hello")], thread_id="kept", resource_id=R)
    await memory.create_thread(resource_id=R, thread_id="left")
    await memory.set_state({"a": 1}, resource_id=R, key="tied", thread_id="left")
    sink = io.StringIO()
    await memory.export_records(sink)
    records = [r for r in parse_records(sink.getvalue().splitlines())
               if not (r["kind"] == "thread" and r["id"] == "left")]
    async with store_factory.memory(tmp_path / "other") as other:
        with pytest.raises(ThreadNotFoundError):
            await other.import_records(records)
        assert (await other.list_threads(resource_id=R)).threads == []
        assert await other.list_states(resource_id=R) == []
        await other.create_thread(resource_id=R, thread_id="left")
        assert (await other.import_records(records))["state"] == 1
        assert (await other.get_state(resource_id=R, key="tied")).thread_id == "left"


# Property: any sequence of merges on any JSON value leaves each store holding exactly what the
# merge rule (memvault.rules.merge_patch, checked above against RFC 7386's examples) computes.

LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                   st.sampled_from([0.5, 1.0, "x", "é", "", "🎉"]))
KEYS = st.sampled_from(["a", "b", "c", "ключ", "%"])
JSON_VALUES = st.recursive(
    LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8)


async def _merge_all(factory: Any, start: Any, patches: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with factory.memory(Path(folder)) as memory:
            if not has(memory, "states"):
                pytest.skip(f"{type(memory.store).__name__} ({factory.id}) has no states capability")
            await memory.set_state(start, resource_id=R, key=K)
            expected = start
            for version, patch in enumerate(patches, 2):
                expected = merge_patch(expected, patch)
                updated = await memory.update_state(resource_id=R, key=K, merge=patch,
                                                    expected_version=version - 1)
                assert updated is not None and (updated.value, updated.version) == (expected, version)
            stored = await memory.get_state(resource_id=R, key=K)
            assert stored is not None and stored.value == expected


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=JSON_VALUES, patches=st.lists(JSON_VALUES, min_size=1, max_size=4))
def test_merges_match_the_merge_rule(store_factory: Any, start: Any, patches: list[Any]) -> None:
    asyncio.run(_merge_all(store_factory, start, patches))
