"""MemvaultStore beyond the reference's answers: ``search(query=...)`` ranks by words (with the
indexed ``fields``) and, with an embedder, by meaning; a failing embedder degrades to words;
TTL hides, refreshes and sweeps; bad input is refused with nothing written. Over ``memory://``,
a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from memvault import Memory
from memvault.errors import ValidationError

pytest.importorskip("langgraph.store.base", reason="needs memvault[langgraph]")
pytest.importorskip("numpy", reason="meaning needs numpy (any embedder extra)")

from memvault.embeddings.base import EmbeddingError
from memvault.integrations.langgraph import MemvaultStore

NOTES = {
    "tea": {"text": "Ada drinks green tea every morning", "topic": "habits"},
    "boat": {"text": "The lighthouse keeper rows a small boat", "topic": "sea"},
    "code": {"text": "Ada writes Python on Tuesdays", "topic": "work", "aside": "tea tea tea"},
}
DIMENSIONS = {"drink": ("tea", "coffee", "beverage", "drinks"),
              "sea": ("boat", "lighthouse", "ocean", "sail")}


def toy_meaning(texts: list[str]) -> list[list[float]]:
    """Two dimensions, drinks and the sea: a text is near the words of its dimension."""
    return [[float(sum(w in text.lower() for w in words)) + 0.01 for words in DIMENSIONS.values()]
            for text in texts]


async def fill(store: MemvaultStore) -> None:
    for key, value in NOTES.items():
        await store.aput(("ada", "notes"), key, value)


async def test_words_rank_the_items_that_share_them_first(any_memory: Memory) -> None:
    store = MemvaultStore(any_memory, resource_id="ada", fields=("text",))
    await fill(store)
    found = await store.asearch(("ada",), query="which TEA does she drink?")
    assert found[0].key == "tea" and found[0].score is not None and found[0].score > 0
    assert {i.key for i in found} == set(NOTES)  # every selected item comes back, ranked
    assert all(i.score == 0 for i in found[1:])  # "aside" is not an indexed field: code shares nothing
    assert [i.key for i in await store.asearch(("ada",), query="lighthouses", limit=1)] == ["boat"]


async def test_the_whole_value_is_indexed_by_default_and_index_false_indexes_nothing(
    any_memory: Memory,
) -> None:
    store = MemvaultStore(any_memory, resource_id="ada")
    await fill(store)
    await store.aput(("ada", "notes"), "hidden", {"text": "tea, tea and more tea"}, index=False)
    found = await store.asearch(("ada",), query="tea")
    scores = {i.key: i.score for i in found}
    assert scores["code"] > 0 and scores["tea"] > 0  # "aside" counts with the whole value indexed
    assert scores["hidden"] == 0


async def test_meaning_finds_what_shares_no_word_with_an_embedder(any_memory: Memory) -> None:
    plain = MemvaultStore(any_memory, resource_id="ada", fields=("text",))
    await fill(plain)
    assert all(i.score == 0 for i in await plain.asearch(("ada",), query="a beverage"))
    meaning = MemvaultStore(any_memory, resource_id="bea", fields=("text",), embedder=toy_meaning)
    await fill(meaning)
    found = await meaning.asearch(("ada",), query="a beverage")
    assert found[0].key == "tea" and found[0].score is not None and found[0].score > found[-1].score
    assert (await meaning.asearch(("ada",), query="ocean"))[0].key == "boat"


async def test_a_failing_embedder_degrades_to_words(
    any_memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("the embedding server is down")

    store = MemvaultStore(any_memory, resource_id="ada", fields=("text",), embedder=broken)
    with caplog.at_level(logging.WARNING, logger="memvault.langgraph"):
        await fill(store)
        found = await store.asearch(("ada",), query="green tea")
    assert found[0].key == "tea"
    assert "searched by words only" in caplog.text


async def test_ttl_hides_refreshes_and_sweeps(any_memory: Memory) -> None:
    store = MemvaultStore(any_memory, resource_id="ada", ttl={"default_ttl": 10})
    await store.aput(("ada",), "short", {"v": 1})
    await store.aput(("ada",), "forever", {"v": 2}, ttl=None)
    items = any_memory.item_store()
    now = datetime.now(UTC)
    [short] = await items.get_items("ada", [(("ada",), "short")], now)
    assert short.ttl_minutes == 10 and short.expires_at is not None
    assert timedelta(minutes=9) < short.expires_at - now <= timedelta(minutes=10)

    later = now + timedelta(minutes=11)
    assert [i.key for i in await items.scan_items("ada", ("ada",), later)] == ["forever"]
    assert await items.get_items("ada", [(("ada",), "short")], later) == []

    await items.refresh_items("ada", [(("ada",), "short")], now + timedelta(minutes=5))
    assert [i.key for i in await items.get_items("ada", [(("ada",), "short")], later)] == ["short"]
    assert await items.expire_items(now + timedelta(minutes=16)) == 1
    assert await items.get_items("ada", [(("ada",), "short")], now) == []
    assert await store.aget(("ada",), "forever") is not None


async def test_a_read_refreshes_the_expiry_unless_told_not_to(any_memory: Memory) -> None:
    store = MemvaultStore(any_memory, resource_id="ada")
    await store.aput(("ada",), "k", {"v": 1}, ttl=60)
    items = any_memory.item_store()

    async def expiry() -> datetime:
        [item] = await items.get_items("ada", [(("ada",), "k")], datetime.now(UTC))
        assert item.expires_at is not None
        return item.expires_at

    first = await expiry()
    await store.aget(("ada",), "k", refresh_ttl=False)
    assert await expiry() == first
    await store.aget(("ada",), "k")
    assert await expiry() > first


@pytest.mark.parametrize(("value", "ttl"), [({"when": datetime.now(UTC)}, None), ({"n": float("nan")}, None),
                                            ({"ok": 1}, -5), ({"ok": 1}, "soon")])
async def test_bad_input_is_refused_and_writes_nothing(any_memory: Memory, value: dict[str, object],
                                                       ttl: object) -> None:
    store = MemvaultStore(any_memory, resource_id="ada")
    with pytest.raises(ValidationError):
        await store.aput(("ada",), "k", value, ttl=ttl)  # type: ignore[arg-type]
    assert await store.aget(("ada",), "k") is None
    assert await store.alist_namespaces() == []
