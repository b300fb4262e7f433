"""SQLite search leaves a word that is very common in the resource out of a query with rarer
words, and decides "common" from the resource's own messages alone, whatever the other
resources hold: a word common in the whole index only because of another resource, one the
other resources hold just enough of to need counting within the resource, and one so frequent
in the index that a bounded walk of its matches settles it."""

from __future__ import annotations

from pathlib import Path

from memvault import Memory, Message
from memvault.stores.passages import mark_of
from memvault.stores.sqlite.search import COMMON_MIN_MESSAGES, COMMON_SHARE

OWN = 2_400
"""The searched resource's messages: "alpha" is in 1,200 of them (common), "beta" in 600."""


def _own() -> list[Message]:
    out = []
    for i in range(OWN):
        words = ["note", f"w{i}"]
        if i % 2 == 0:
            words.append("alpha")
        if i % 4 == 1:
            words.append("beta")
        if i % 400 == 3:
            words.append("zeta")
        out.append(Message.user(" ".join(words), id=f"m{i}"))
    return out


def _others(beta: int) -> list[Message]:
    """Another resource's messages, ``beta`` of them with "beta" and "alpha", the rest "gamma"."""
    return [Message.user("beta alpha filler" if i < beta else "gamma filler", id=f"o{i}")
            for i in range(3_000)]


async def _hits(path: Path, others: int | None, query: str) -> list[tuple[str, float]]:
    memory = await Memory.open(f"sqlite:///{path}")
    try:
        if await memory.get_thread(thread_id="t", resource_id="ada") is None:
            own = _own()
            for start in range(0, len(own), 500):
                await memory.save_messages(own[start : start + 500], thread_id="t", resource_id="ada")
            if others is not None:
                await memory.save_messages(_others(others), thread_id="o", resource_id="bob")
        hits = await memory.search_messages(resource_id="ada", query=query, limit=50)
        return [(h.message.id, h.score) for h in hits]
    finally:
        await memory.close()


async def test_common_words_follow_the_resource_alone(tmp_path: Path) -> None:
    bound = max(COMMON_MIN_MESSAGES, COMMON_SHARE * OWN)
    assert bound < OWN and OWN // 2 > bound >= OWN // 4  # alpha common in the resource, beta not
    queries = ["alpha zeta", "beta zeta", "alpha beta", "zeta"]
    alone = {q: await _hits(tmp_path / "alone.db", None, q) for q in queries}
    # "alpha" is common, so it is left out beside a rarer word: the hits are zeta's alone
    assert alone["alpha zeta"] == alone["zeta"] and len(alone["zeta"]) == 6
    assert alone["beta zeta"] != alone["zeta"]  # beta counts
    assert {i for i, _ in alone["alpha beta"]} <= {f"m{i}" for i in range(1, OWN, 4)}  # beta's only
    # other resources holding beta: 0 (beta rare in the index), 500 (1,100 in the index:
    # counted within the resource), 3,000 (3,600: past any bound a walk needs)
    for beta in (0, 500, 3_000):
        beside = {q: await _hits(tmp_path / f"beside-{beta}.db", beta, q) for q in queries}
        assert beside == alone, beta


async def test_the_pool_marks_the_searched_words_and_leaves_the_common_one_out(tmp_path: Path) -> None:
    await _hits(tmp_path / "pool.db", 500, "zeta")  # fills the file
    memory = await Memory.open(f"sqlite:///{tmp_path / 'pool.db'}")
    try:
        for query, terms in (("alpha zeta", [("zeta",)]), ("beta zeta", [("beta",), ("zeta",)]),
                             ("alpha", [("alpha",)])):  # a query of common words alone keeps them
            pool = await memory.store.search_pool("ada", query, limit=20, message_range=2)  # type: ignore[attr-defined]
            assert pool.terms == terms, query
            read = [p for found in pool.threads.values() for p in found]
            assert len(read) >= len(pool.hits) > 0
            for passage in read:
                assert pool.marks[("t", passage.id)] == mark_of(passage.text, terms), (query, passage.text)
    finally:
        await memory.close()
