"""MemvaultStore answers as LangGraph's own ``InMemoryStore`` (the reference) does: Hypothesis
runs random sequences (a few items first, so that reads find something) of puts, deletes, gets,
searches (prefix, filter, query), namespace listings and mixed batches against both, over
``memory://``, SQLite and PostgreSQL, and compares every answer, scores aside.

Two differences are the reference's and are normalised here, not copied: it keeps listing a
namespace once all its items are deleted, or even when only a ``get`` asked about it (its
``defaultdict`` creates the entry), where memvault lists namespaces that hold items; and it
returns unranked search results in dict insertion order, where memvault returns the most
recently updated first, so a search is compared as a set, with a limit that takes everything
(paging is checked on memvault alone: pages are slices of the full answer)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory

pytest.importorskip("langgraph.store.memory", reason="needs memvault[langgraph]")

from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from memvault.integrations.langgraph import MemvaultStore

NAMESPACES = [("a",), ("a", "b"), ("a", "b", "c"), ("c", "a"), ("b", "a")]
PREFIXES = [(), ("a",), ("a", "b"), ("c",), ("z",)]
WORDS = ["tea", "coffee", "green tea", "lighthouse", "the sea", ""]

values = st.fixed_dictionaries(
    {"n": st.integers(-1, 1), "tag": st.sampled_from(["x", "y"]), "text": st.sampled_from(WORDS)},
    optional={"nested": st.fixed_dictionaries({"k": st.sampled_from(["p", "q"])})},
)
filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": st.sampled_from(["x", "y"])}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$gt": st.integers(-1, 1)})}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$gte": st.integers(-1, 1),
                                                       "$lt": st.integers(0, 2)})}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$lte": st.integers(-1, 1)})}),
    st.fixed_dictionaries({"nested": st.fixed_dictionaries({"k": st.just("p")})}),
    st.fixed_dictionaries({"n": st.fixed_dictionaries({"$ne": st.integers(-1, 1)})}),
)
keys = st.sampled_from(["k1", "k2", "k3"])
spaces = st.sampled_from(NAMESPACES)
puts = st.tuples(spaces, keys, st.one_of(values, values, st.none())).map(
    lambda a: PutOp(*a, index=None, ttl=None))
gets = st.tuples(spaces, keys).map(lambda a: GetOp(*a))
searches = st.tuples(st.sampled_from(PREFIXES), filters, st.one_of(st.none(), st.sampled_from(WORDS))).map(
    lambda a: SearchOp(a[0], a[1], limit=100, offset=0, query=a[2]))
conditions = st.tuples(st.sampled_from(["prefix", "suffix"]),
                       st.sampled_from([("a",), ("*", "b"), ("a", "*"), ("c",), ("b", "a")])).map(
    lambda a: MatchCondition(*a))
listings = st.tuples(st.one_of(st.none(), st.tuples(conditions)), st.one_of(st.none(), st.integers(1, 3)),
                     st.integers(1, 10), st.integers(0, 2)).map(lambda a: ListNamespacesOp(*a))
seeds = st.lists(st.tuples(spaces, keys, values).map(lambda a: PutOp(*a, index=None, ttl=None)),
                 min_size=2, max_size=12)
operations = st.tuples(seeds, st.lists(
    st.one_of(puts, gets, searches, searches, listings,
              st.lists(st.one_of(puts, gets, searches, listings), min_size=1, max_size=4)),
    min_size=1, max_size=20)).map(lambda a: [*a[0], *a[1]])


def _plain(result: Any) -> Any:
    """A result without what differs by design: times, scores, the order of search results."""
    if result is None:
        return None
    if isinstance(result, list) and result and hasattr(result[0], "key"):
        return sorted((i.namespace, i.key, repr(sorted(i.value.items()))) for i in result)
    if hasattr(result, "key"):
        return (result.namespace, result.key, result.value)
    return result


def _forget_empty(reference: InMemoryStore) -> None:
    for namespace in [ns for ns, items in reference._data.items() if not items]:
        del reference._data[namespace]


async def _compare(memory: Memory, steps: list[Any]) -> None:
    ours = MemvaultStore(memory, resource_id=f"r-{uuid.uuid4().hex}")
    reference = InMemoryStore()
    for step in steps:
        batch = step if isinstance(step, list) else [step]
        mine = await ours.abatch(batch)
        _forget_empty(reference)
        listed = {i: reference.batch([op])[0] for i, op in enumerate(batch)
                  if isinstance(op, ListNamespacesOp)}
        theirs = reference.batch(batch)
        for i, (op, got) in enumerate(zip(batch, mine, strict=True)):
            wanted = listed.get(i, theirs[i])
            assert _plain(got) == _plain(wanted), (op, got, wanted)
        for op in batch:
            if isinstance(op, SearchOp):
                await _pages_are_slices(ours, op)


async def _pages_are_slices(store: MemvaultStore, op: SearchOp) -> None:
    everything = await store.asearch(op.namespace_prefix, query=op.query, filter=op.filter, limit=100)
    keys = [(i.namespace, i.key) for i in everything]
    for offset, limit in ((0, 1), (1, 2), (2, 5)):
        page = await store.asearch(op.namespace_prefix, query=op.query, filter=op.filter, limit=limit,
                                   offset=offset)
        assert [(i.namespace, i.key) for i in page] == keys[offset: offset + limit]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_the_same_calls_give_the_same_results(looped_memory: tuple[asyncio.Runner, Memory],
                                              steps: list[Any]) -> None:
    runner, memory = looped_memory
    runner.run(_compare(memory, steps))
