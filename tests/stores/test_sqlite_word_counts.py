"""What SQLite searches remember of their words' counts (``WordCounts``) changes no result: a
store that has searched before finds exactly what a store opened afresh finds, message for
message and score for score, whatever was saved, edited or deleted in between, a resource
emptied and filled again included."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.stores.sqlite.search import _MANY, WordCounts

R = "ada"
WORDS = [f"w{i}" for i in range(12)]
SHARES = [0.5, 0.2, 0.08, 0.06, 0.052, 0.048, 0.04, 0.02, 0.01, 0.005, 0.002, 0.001]
"""How often each word is drawn: some far above the 5 % bound, some at it, some far below."""


def _text(rng: random.Random) -> str:
    words = [w for w, share in zip(WORDS, SHARES, strict=True) if rng.random() < share]
    return " ".join(["note", *words])


async def _found(memory: Memory, query: str) -> list[tuple[str, float]]:
    hits = await memory.search_messages(resource_id=R, query=query, limit=30)
    pool = await memory.store.search_pool(R, query, limit=30, message_range=1)  # type: ignore[attr-defined]
    assert [(p.id, s) for p, s in pool.hits] == [(h.message.id, h.score) for h in hits]
    return [(h.message.id, h.score) for h in hits]


OPS = st.lists(st.tuples(st.sampled_from(["save", "delete", "edit", "empty", "query"]),
                         st.integers(0, 2**16)), min_size=3, max_size=12)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS)
def test_a_searched_store_finds_what_a_fresh_one_finds(
    tmp_path_factory: object, ops: list[tuple[str, int]]
) -> None:
    folder = Path(tmp_path_factory.mktemp("counts"))  # type: ignore[attr-defined]
    asyncio.run(_run(folder / "counts.db", ops))


async def _run(path: Path, ops: list[tuple[str, int]]) -> None:
    rng = random.Random(7)
    kept = await Memory.open(f"sqlite:///{path}")
    try:
        ids: list[str] = []

        async def save(n: int) -> None:
            batch = [Message.user(_text(rng)) for _ in range(n)]
            await kept.save_messages(batch, thread_id="t", resource_id=R)
            ids.extend(m.id for m in batch)

        await save(1_300)
        for op, seed in [("query", 0), *ops]:
            pick = random.Random(seed)
            if op == "save":
                await save(pick.randint(1, 400))
            elif op == "delete" and ids:
                gone = pick.sample(ids, min(len(ids), pick.randint(1, 300)))
                await kept.delete_messages(gone, thread_id="t", resource_id=R)
                ids[:] = [i for i in ids if i not in set(gone)]
            elif op == "edit" and ids:
                chosen = pick.sample(ids, min(len(ids), 200))
                edited = [Message.user(_text(rng) + " w0 w1", id=i) for i in chosen]
                await kept.save_messages(edited, thread_id="t", resource_id=R)
            elif op == "empty":
                if pick.random() < 0.5:
                    await kept.delete_resource(resource_id=R)
                else:
                    await kept.delete_messages(list(ids), thread_id="t", resource_id=R)
                ids.clear()
                await save(1_300)
            queries = [" ".join(pick.sample(WORDS, pick.randint(2, 4))) for _ in range(6)]
            fresh = await Memory.open(f"sqlite:///{path}")
            try:
                for query in queries:
                    assert await _found(kept, query) == await _found(fresh, query), (op, query)
            finally:
                await fresh.close()
    finally:
        await kept.close()


def test_bounds_widen_by_the_changes_since_and_hold_for_one_statistics_row() -> None:
    counts = WordCounts(resources=2, words=2)
    counts.note(R, 1, 10, ("a",), 100, 120)
    assert counts.bounds(R, 1, 10, ("a",)) == (100, 120)
    assert counts.bounds(R, 1, 15, ("a",)) == (95, 125)  # five messages gained or lost since
    assert counts.bounds(R, 2, 10, ("a",)) == (0, _MANY)  # the row was made again
    assert counts.bounds(R, 1, 9, ("a",)) == (0, _MANY)  # never trusted backwards
    assert counts.bounds(R, 1, 10, ("b",)) == (0, _MANY)
    counts.note(R, 1, 10, ("b",), 0, 3)
    counts.note(R, 1, 10, ("c",), 0, 3)  # two words per resource: "a" goes
    assert counts.bounds(R, 1, 10, ("a",)) == (0, _MANY)
    counts.note("bob", 4, 0, ("a",), 1, 1)
    counts.note("cy", 5, 0, ("a",), 1, 1)  # two resources: ada goes
    assert counts.bounds(R, 1, 10, ("b",)) == (0, _MANY)
    counts.forget("cy")
    assert counts.bounds("cy", 5, 0, ("a",)) == (0, _MANY)
    assert counts.bounds("bob", 4, 0, ("a",)) == (1, 1)
