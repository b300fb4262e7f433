"""The recall reader answers exactly what the store would, from what it already read when it can.

Property: for any thread (with deletions leaving gaps in ``seq``) and any sequence of
neighbourhood requests, :meth:`RecallReader.around` returns exactly what a fresh
``get_messages(ids=..., message_range=...)`` returns, and never makes more store calls than
there were requests. Over the reference in-memory store (the reads are store-agnostic; the
stores' own ``get_messages`` is conformance-tested)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault import Message
from memvault.recall import RecallReader
from memvault.recall.reader import _Thread
from memvault.stores.base import MessageQuery
from memvault.stores.memory import InMemoryStore
from memvault.stores.passages import Passage


def _ids(found: list[Message]) -> list[str]:
    return [m.id for m in found]


requests = st.lists(
    st.tuples(st.lists(st.integers(0, 39), min_size=1, max_size=4), st.integers(0, 6)),
    min_size=1, max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 40), deleted=st.sets(st.integers(0, 39), max_size=10), asked=requests)
def test_around_is_what_the_store_returns(
    size: int, deleted: set[int], asked: list[tuple[list[int], int]]
) -> None:
    async def check() -> None:
        store = InMemoryStore()
        await store.save_messages("ada", "t", [Message.user(f"m{i}", id=f"m{i}") for i in range(size)])
        await store.delete_messages("ada", "t", [f"m{i}" for i in deleted if i < size])
        reader = RecallReader(store, "ada")
        for positions, message_range in asked:
            ids = [f"m{i}" for i in positions]
            fresh = await store.get_messages("ada", "t", MessageQuery(ids=ids, message_range=message_range))
            got = await reader.around({"t": ids}, message_range)
            assert _ids(got["t"]) == _ids(fresh), (ids, message_range)
        assert reader.calls <= len(asked)

    asyncio.run(check())


@settings(max_examples=200, deadline=None)
@given(size=st.integers(0, 30), hits=st.sets(st.integers(0, 34), max_size=6),
       reads=st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29), st.integers(0, 6)), max_size=3))
def test_a_read_covers_exactly_the_neighbours_it_read(
    size: int, hits: set[int], reads: list[tuple[int, int, int]]
) -> None:
    """After reads of runs of a thread around some ids, a message counts as covered for a
    range exactly when one read held it with that many neighbours each side of an id (ids a
    read does not hold, beyond ``size``, count for nothing)."""
    thread = _Thread()
    want: dict[str, int] = {}
    for start, stop, message_range in [(0, size, 3), *reads]:
        found = [Passage("t", f"m{i}", i) for i in range(start, min(stop, size))]
        ids = {f"m{i}" for i in hits}
        thread.add(found, ids, message_range)
        held = [i for i in range(len(found)) if found[i].id in ids]
        for j, passage in enumerate(found):
            nearest = min((abs(i - j) for i in held), default=None)
            if nearest is not None and nearest <= message_range:
                want[passage.id] = max(want.get(passage.id, -1), message_range - nearest)
    for i in range(size):
        for message_range in range(8):
            assert thread.covers(f"m{i}", message_range) == (want.get(f"m{i}", -1) >= message_range)


async def test_a_covered_request_reads_nothing() -> None:
    store = InMemoryStore()
    await store.save_messages("ada", "t", [Message.user(f"m{i}", id=f"m{i}") for i in range(30)])
    reader = RecallReader(store, "ada")
    await reader.around({"t": ["m10"]}, 5)
    assert reader.calls == 1
    narrower = await reader.around({"t": ["m12", "m8"]}, 2)  # within m10's five each side
    assert reader.calls == 1
    assert _ids(narrower["t"]) == [f"m{i}" for i in range(6, 15)]
    await reader.around({"t": ["m16"]}, 2)  # m16 is m10 + 6: not covered
    assert reader.calls == 2


async def test_the_note_is_read_once_and_the_window_can_be_given() -> None:
    store = InMemoryStore()
    saved = await store.save_messages("ada", "t", [Message.user(f"m{i}", id=f"m{i}") for i in range(12)])
    await store.update_working_memory("ada", "resource", lambda _: "- Name: Ada")
    reader = RecallReader(store, "ada", last_n=5)
    assert await reader.note("t") == "- Name: Ada"
    assert await reader.note("t") == "- Name: Ada"
    assert reader.calls == 1
    fresh = await reader.window("t")
    assert reader.calls == 2
    given_reader = RecallReader(store, "ada", last_n=5)
    given_reader.preload_tail("t", saved[-8:], complete=False)
    assert _ids(await given_reader.window("t")) == _ids(fresh) == [f"m{i}" for i in range(7, 12)]
    assert given_reader.calls == 0
    short = RecallReader(store, "ada", last_n=50)
    short.preload_tail("t", saved, complete=True)  # the whole thread: enough for any window
    assert _ids(await short.window("t")) == _ids(saved) and short.calls == 0


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, 12), last_n=st.integers(0, 15), note=st.sampled_from([None, "- Name: Ada"]),
       thread=st.sampled_from(["t", "other", "missing"]))
def test_read_turn_reads_the_window_and_the_note_in_one_call(
    size: int, last_n: int, note: str | None, thread: str
) -> None:
    """What :meth:`RecallReader.window` and :meth:`RecallReader.note` give after
    :meth:`RecallReader.read_turn` is what they read alone, for any thread length and window
    (another resource's thread and a missing one included), in one store call instead of two."""
    async def check() -> None:
        store = InMemoryStore()
        await store.save_messages("ada", "t", [Message.user(f"m{i}", id=f"m{i}") for i in range(size)])
        await store.save_messages("bob", "other", [Message.user("bob's")])
        if note is not None:
            await store.update_working_memory("ada", "resource", lambda _: note)
        alone = RecallReader(store, "ada")
        expected = (_ids(await alone.window(thread, last_n)), await alone.note(thread))
        reader = RecallReader(store, "ada")
        await reader.read_turn(thread, last_n)
        assert (_ids(await reader.window(thread, last_n)), await reader.note(thread)) == expected
        assert (reader.calls, alone.calls) == (1, 2)
        await reader.read_turn(thread, last_n)  # known already: nothing read
        assert reader.calls == 1

    asyncio.run(check())
