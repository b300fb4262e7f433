"""MemvaultSaver answers as LangGraph's own ``InMemorySaver`` (the reference) does: Hypothesis
runs random sequences (a few checkpoints first, so that reads find something) of puts
(threads, namespaces, parents, metadata), pending writes (special
channels included), gets, lists (thread, namespace, metadata filter, ``before``, ``limit``) and
thread deletions against both, over ``memory://``, SQLite and PostgreSQL, and compares every
answer. (The reference has no ``delete_for_runs``, ``copy_thread`` or ``prune``: the conformance
suite checks those.)

One difference is by design and normalised: listing every namespace of a thread (no
``checkpoint_ns``), the reference goes namespace by namespace, memvault newest first across
them (as LangGraph's PostgreSQL saver does), so such a listing is compared as a set, without a
limit."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory

pytest.importorskip("langgraph.checkpoint.memory", reason="needs memvault[langgraph]")

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from memvault.integrations.langgraph import MemvaultSaver

THREADS = ["t1", "t2"]
NAMESPACES = ["", "child:1"]

puts = st.fixed_dictionaries(
    {
        "op": st.just("put"),
        "thread": st.sampled_from(THREADS),
        "ns": st.sampled_from(NAMESPACES),
        "child": st.booleans(),
        "source": st.sampled_from(["input", "loop"]),
        "run": st.sampled_from(["r1", "r2"]),
    }
)
writes = st.fixed_dictionaries(
    {
        "op": st.just("writes"),
        "at": st.integers(0, 4),
        "task": st.sampled_from(["a", "b"]),
        "path": st.sampled_from(["", "~p"]),
        "writes": st.lists(
            st.tuples(st.sampled_from(["x", "__error__", "__interrupt__"]), st.integers(0, 9)),
            min_size=1,
            max_size=3,
        ),
    }
)
gets = st.fixed_dictionaries(
    {
        "op": st.just("get"),
        "thread": st.sampled_from(THREADS),
        "ns": st.sampled_from(NAMESPACES),
        "at": st.one_of(st.none(), st.integers(0, 4)),
    }
)
lists = st.fixed_dictionaries(
    {
        "op": st.just("list"),
        "thread": st.sampled_from(THREADS),
        "ns": st.sampled_from([None, *NAMESPACES]),
        "filter": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "source": st.sampled_from(["input", "loop"]),
                    "run_id": st.sampled_from(["r1", "r2"]),
                },
            ),
        ),
        "before": st.one_of(st.none(), st.integers(0, 4)),
        "limit": st.one_of(st.none(), st.integers(1, 4)),
    }
)
deletes = st.fixed_dictionaries({"op": st.just("delete"), "thread": st.sampled_from(THREADS)})
operations = st.tuples(st.lists(puts, min_size=3, max_size=10),
                       st.lists(st.one_of(puts, writes, writes, gets, lists, lists, deletes), min_size=1,
                                max_size=30)).map(lambda a: [*a[0], *a[1]])


def plain(tup: CheckpointTuple | None) -> Any:
    if tup is None:
        return None
    conf = tup.config["configurable"]
    return (
        conf["thread_id"],
        conf.get("checkpoint_ns", ""),
        conf["checkpoint_id"],
        tup.checkpoint["channel_values"],
        dict(tup.metadata),
        tup.parent_config["configurable"]["checkpoint_id"] if tup.parent_config else None,
        [tuple(w) for w in tup.pending_writes or []],
    )


async def compare(memory: Memory, steps: list[dict[str, Any]]) -> None:
    ours = MemvaultSaver(memory, resource_id=f"r-{uuid.uuid4().hex}")
    reference = InMemorySaver()
    made: list[dict[str, Any]] = []  # configs of the puts, in order
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for number, step in enumerate(steps):
        if step["op"] == "put":
            key = (step["thread"], step["ns"])
            config: dict[str, Any] = {
                "configurable": {"thread_id": step["thread"], "checkpoint_ns": step["ns"]}
            }
            if step["child"] and key in latest:
                config["configurable"]["checkpoint_id"] = latest[key]["configurable"]["checkpoint_id"]
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"x": number}
            checkpoint["channel_versions"] = {"x": number + 1}
            metadata: Any = {"source": step["source"], "step": number, "run_id": step["run"]}
            got = await ours.aput(config, checkpoint, metadata, {"x": number + 1})
            assert got == reference.put(config, checkpoint, metadata, {"x": number + 1})
            made.append(dict(got))
            latest[key] = dict(got)
        elif step["op"] == "writes" and made:
            config = made[step["at"] % len(made)]
            await ours.aput_writes(config, step["writes"], step["task"], step["path"])
            reference.put_writes(config, step["writes"], step["task"], step["path"])
        elif step["op"] == "get":
            config = {"configurable": {"thread_id": step["thread"], "checkpoint_ns": step["ns"]}}
            if step["at"] is not None and made:
                config["configurable"]["checkpoint_id"] = made[step["at"] % len(made)]["configurable"][
                    "checkpoint_id"
                ]
            assert plain(await ours.aget_tuple(config)) == plain(reference.get_tuple(config))
        elif step["op"] == "list":
            await compare_lists(ours, reference, step, made)
        elif step["op"] == "delete":
            await ours.adelete_thread(step["thread"])
            reference.delete_thread(step["thread"])
            latest = {k: v for k, v in latest.items() if k[0] != step["thread"]}


async def compare_lists(
    ours: MemvaultSaver, reference: InMemorySaver, step: dict[str, Any], made: list[dict[str, Any]]
) -> None:
    conf: dict[str, Any] = {"thread_id": step["thread"]}
    if step["ns"] is not None:
        conf["checkpoint_ns"] = step["ns"]
    before = made[step["before"] % len(made)] if step["before"] is not None and made else None
    limit = step["limit"] if step["ns"] is not None else None
    args: dict[str, Any] = {"filter": step["filter"], "before": before, "limit": limit}
    mine = [plain(t) async for t in ours.alist({"configurable": conf}, **args)]
    if step["thread"] not in reference.storage:  # the reference's defaultdict: no thread, no listing
        assert mine == []
        return
    theirs = [plain(t) for t in reference.list({"configurable": conf}, **args)]
    if step["ns"] is None:
        assert sorted(mine, key=repr) == sorted(theirs, key=repr)
    else:
        assert mine == theirs


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_the_same_calls_give_the_same_checkpoints(
    looped_memory: tuple[asyncio.Runner, Memory], steps: list[dict[str, Any]]
) -> None:
    runner, memory = looped_memory
    runner.run(compare(memory, steps))
