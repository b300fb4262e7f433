"""Lexical search: stemming, ranking, filters, hostile queries, CJK, staying in step with writes."""

from __future__ import annotations

import time
from typing import Any

import pytest
import pytest_asyncio

from memvault import Memory, Message, ToolResultPart, ValidationError
from memvault.rules.words import MAX_PHRASE_CHARS, MAX_QUERY_TERMS
from memvault.testing.support import ids, save_texts

pytestmark = pytest.mark.capability("full_text")

R = "alice"
CORPUS = {
    "runs": "She runs every morning before work",
    "run": "I run fast when late",
    "green-tea": "I like green tea with lunch",
    "black-tea": "I like black tea with milk",
    "paint": "green paint on the garden wall",
    "coffee": "coffee every single day",
    "cjk": "我喜欢中文和茶",
    "sql": "the table has rows; select them",
}


@pytest_asyncio.fixture(loop_scope="function")
async def corpus(memory: Memory) -> Memory:
    await save_texts(memory, CORPUS, thread_id="t1", resource_id=R)
    await save_texts(memory, {"other-tea": "tea in another thread"}, thread_id="t2", resource_id=R)
    return memory


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("running", {"runs", "run"}),
        ("RUNS", {"runs", "run"}),
        ("liked", {"green-tea", "black-tea"}),
        ("mornings", {"runs"}),
        ("中文", {"cjk"}),
        ("茶", {"cjk"}),
        ("文和", {"cjk"}),
        ("文中", set()),  # CJK characters match as a phrase, in order
        ("zebra", set()),
    ],
)
async def test_matching(corpus: Memory, query: str, expected: set[str]) -> None:
    hits = await corpus.search_messages(resource_id=R, query=query)
    assert set(ids(hits)) == expected


async def test_hits_are_full_messages_ranked_best_first(corpus: Memory) -> None:
    hits = await corpus.search_messages(resource_id=R, query="green tea")
    assert ids(hits)[0] == "green-tea"  # the only message with both words
    assert set(ids(hits)) == {"green-tea", "black-tea", "paint", "other-tea"}
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s >= 0 for s in scores)
    (stored,) = await corpus.get_messages(thread_id="t1", resource_id=R, ids=["green-tea"])
    assert hits[0].message == stored


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"thread_id": "t1"}, {"green-tea", "black-tea"}),
        ({"thread_id": "t2"}, {"other-tea"}),
        ({"thread_id": "nope"}, set()),
        ({"limit": 1}, 1),
        ({"limit": 2}, 2),
        ({"limit": 10_000}, 3),
    ],
    ids=str,
)
async def test_filters(corpus: Memory, kwargs: dict[str, Any], expected: set[str] | int) -> None:
    hits = await corpus.search_messages(resource_id=R, query="tea", **kwargs)
    assert (len(hits) if isinstance(expected, int) else set(ids(hits))) == expected


@pytest.mark.parametrize("limit", [0, -1, 10_001])
async def test_bad_limit_raises(corpus: Memory, limit: int) -> None:
    with pytest.raises(ValidationError):
        await corpus.search_messages(resource_id=R, query="tea", limit=limit)


HOSTILE = [
    "", "   ", '"', "'", "AND", "OR NOT", "NEAR(a b)", "a*", "*", "-x", "col:val", "(((", ")",
    "^", "💥", "中文", "SELECT * FROM messages; DROP TABLE messages;--", "\\", 'a"b',
    "body:tea", "tea OR", "NOT tea", '"tea', "tea)", "{tea}", "tea^2", "+tea", "tea AND AND",
    "\x00", "\ud800", "\t\n", "%_", "' OR '1'='1", "near/3", "\u200b", "x" * 5000,
    " ".join(f"w{i}" for i in range(1000)),
]


@pytest.mark.parametrize("query", HOSTILE)
async def test_any_query_is_safe(corpus: Memory, query: str) -> None:
    hits = await corpus.search_messages(resource_id=R, query=query)
    assert isinstance(hits, list)
    # the store still works, nothing was dropped
    assert len(await corpus.get_messages(thread_id="t1", resource_id=R)) == len(CORPUS)
    assert ids(await corpus.search_messages(resource_id=R, query="coffee")) == ["coffee"]


@pytest.mark.parametrize("query", ["", "   ", "!!!", "💥", "--", "*"])
async def test_query_without_words_finds_nothing(corpus: Memory, query: str) -> None:
    assert await corpus.search_messages(resource_id=R, query=query) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [("tea)", {"green-tea", "black-tea", "other-tea"}), ("NOT coffee", {"coffee"}),
     ('"select', {"sql"}), ("table;--", {"sql"}), ("col:coffee", {"coffee"})],
)
async def test_operators_are_plain_characters(corpus: Memory, query: str, expected: set[str]) -> None:
    hits = await corpus.search_messages(resource_id=R, query=query)
    assert set(ids(hits)) == expected


async def test_tool_result_text_is_searchable(memory: Memory) -> None:
    result = Message(role="tool", id="r", parts=[ToolResultPart(tool_call_id="c", output="xylophone")])
    await memory.save_messages([result], thread_id="t", resource_id=R)
    assert ids(await memory.search_messages(resource_id=R, query="xylophone")) == ["r"]


async def test_search_follows_updates_and_deletes(corpus: Memory) -> None:
    await corpus.save_messages([Message.user("now about kayaks", id="coffee")],
                               thread_id="t1", resource_id=R)
    assert ids(await corpus.search_messages(resource_id=R, query="coffee")) == []
    assert ids(await corpus.search_messages(resource_id=R, query="kayak")) == ["coffee"]

    await corpus.delete_messages(["coffee"], thread_id="t1", resource_id=R)
    assert ids(await corpus.search_messages(resource_id=R, query="kayak")) == []

    await corpus.clear_thread(thread_id="t2", resource_id=R)
    assert "other-tea" not in ids(await corpus.search_messages(resource_id=R, query="tea"))

    await corpus.delete_thread(thread_id="t1", resource_id=R)
    assert await corpus.search_messages(resource_id=R, query="tea") == []


EVERYDAY = {
    "whats": "What's it? Nobody knows",
    "its": "it's raining again",
    "plain": "rain is wet",
    "letters": "plan A or plan B, as usual",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What's it?", {"whats", "its"}),  # only stop words: they are searched
        ("it's", {"whats", "its"}),
        ("s", {"whats", "its"}),  # "s" is a word of its own (it is never stemmed away)
        ("is", {"plain"}),  # short words are not stemmed: "is" is not "i"
        ("as", {"letters"}),
        ("'", set()), ("\\", set()), ("&|!():*<->", set()), ("'' | ''", set()),
        ("rain's", {"its", "plain"}),  # stop words dropped when the query has other words
    ],
)
async def test_everyday_phrasing(memory: Memory, query: str, expected: set[str]) -> None:
    await save_texts(memory, EVERYDAY, thread_id="t", resource_id=R)
    assert set(ids(await memory.search_messages(resource_id=R, query=query))) == expected
    hits = await memory.recall(resource_id=R, query=query, thread_id="t")
    assert isinstance(hits.hits, list)


async def test_a_query_of_40000_words_is_searched_for_its_first_terms(corpus: Memory) -> None:
    words = ["coffee", *(f"w{i}" for i in range(40_000))]
    assert ids(await corpus.search_messages(resource_id=R, query=" ".join(words))) == ["coffee"]
    past_the_cap = [f"w{i}" for i in range(MAX_QUERY_TERMS)] + ["coffee"]
    assert await corpus.search_messages(resource_id=R, query=" ".join(past_the_cap)) == []
    repeated = " ".join(["w1"] * 40_000 + ["coffee"])  # distinct terms count, not words
    assert ids(await corpus.search_messages(resource_id=R, query=repeated)) == ["coffee"]


async def test_a_query_of_5000_cjk_characters_is_bounded(corpus: Memory) -> None:
    started = time.perf_counter()
    for query in ["中" * 5000, "我喜欢中文和茶" * 715, "".join(chr(0x4E00 + i) for i in range(5000))]:
        assert isinstance(await corpus.search_messages(resource_id=R, query=query), list)
    assert time.perf_counter() - started < 20
    # a long run is matched as phrases of MAX_PHRASE_CHARS characters: the first one here
    assert ids(await corpus.search_messages(
        resource_id=R, query="我喜欢中文和茶" + "的" * (MAX_PHRASE_CHARS - 7) + "不" * 50)) == []
    assert ids(await corpus.search_messages(resource_id=R, query="中文和茶" + "x" * 20)) == ["cjk"]
