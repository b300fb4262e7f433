"""recall(): candidates, context scoring, scope, thresholds, neighbours, merging, vectors,
and degradation when the vector search fails."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memvault import Memory, ValidationError
from memvault.recall import MessageRef, RecallOptions, recall
from memvault.recall.types import VectorSearch

from .conftest import BASE, FILLER, hit_ids, save_thread

TEA = "I love jasmine tea in the afternoon."


async def _ada(memory: Memory) -> None:
    """Thread ``old`` (a month ago) mentions tea in message 3; thread ``now`` is current."""
    await save_thread(memory, "old", [*FILLER[:3], TEA, *FILLER[3:]], start=BASE - timedelta(days=30))
    await save_thread(memory, "now", [*FILLER[4:], "What should I drink later?"])



async def test_finds_an_older_message_of_another_thread(memory: Memory) -> None:
    await _ada(memory)
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                          options=RecallOptions(last_n=0))
    hit = result.hits[0]
    assert hit.message.id == "old-3"
    assert hit.source == "lexical"
    assert (hit.thread_id, hit.other_thread) == ("old", True)
    assert hit.created_at == BASE - timedelta(days=30) + timedelta(minutes=3)
    assert hit.lexical_score is not None and hit.vector_score is None
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


async def test_a_hit_of_the_current_thread_is_not_other_thread(memory: Memory) -> None:
    await _ada(memory)
    result = await recall(memory.recall_reader("ada"), thread_id="old", query="jasmine tea",
                          options=RecallOptions(last_n=0))
    assert result.hits[0].other_thread is False


async def test_scope_thread_searches_only_the_current_thread(memory: Memory) -> None:
    await _ada(memory)
    await save_thread(memory, "now", ["Green tea or jasmine tea?"], start=BASE + timedelta(hours=1))
    across = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                          options=RecallOptions(last_n=0, scope="resource"))
    only = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                        options=RecallOptions(last_n=0, scope="thread"))
    assert {h.thread_id for h in across.hits} == {"old", "now"}
    assert {h.thread_id for h in only.hits} == {"now"}


async def test_scope_thread_needs_a_thread(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="thread_id"):
        await recall(memory.recall_reader("ada"), thread_id=None, query="tea",
                     options=RecallOptions(scope="thread"))


async def test_other_resources_are_never_searched(memory: Memory) -> None:
    await _ada(memory)
    await save_thread(memory, "old", ["jasmine tea jasmine tea"], resource_id="bob")
    result = await recall(memory.recall_reader("bob"), thread_id=None, query="jasmine tea")
    assert [(h.thread_id, h.message.text) for h in result.hits] == [("old", "jasmine tea jasmine tea")]


async def test_top_k_defaults_to_five(memory: Memory) -> None:
    await save_thread(memory, "t", [f"note {i} about the garden" for i in range(12)])
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="garden")
    assert len(result.hits) == 5
    three = await recall(memory.recall_reader("ada"), thread_id=None, query="garden",
                         options=RecallOptions(top_k=3))
    assert len(three.hits) == 3


async def test_context_finds_the_answer_to_a_question(memory: Memory) -> None:
    """The reply shares no word with the query; the question before it does. The answer comes
    before the question: a question asked before is put back (``question_penalty``), and the
    question's two neighbours tie on its words."""
    texts = [*FILLER[:4], "Where did you go hiking last weekend?", "Up Mount Tamalpais, the view was great!",
             *FILLER[4:]]
    await save_thread(memory, "t", texts)
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="Where did she go hiking?",
                          options=RecallOptions(top_k=3, message_range=0))
    assert "t-5" in hit_ids(result)[:2]
    assert hit_ids(result).index("t-5") < hit_ids(result).index("t-4")
    unpenalised = await recall(memory.recall_reader("ada"), thread_id=None, query="Where did she go hiking?",
                               options=RecallOptions(top_k=3, message_range=0, question_penalty=0))
    assert hit_ids(unpenalised)[0] == "t-4" and "t-5" in hit_ids(unpenalised)
    alone = await recall(memory.recall_reader("ada"), thread_id=None, query="Where did she go hiking?",
                         options=RecallOptions(top_k=3, message_range=0, context_window=0))
    assert hit_ids(alone) == ["t-4"]


async def test_neighbour_expansion(memory: Memory) -> None:
    await save_thread(memory, "t", [*FILLER[:4], TEA, *FILLER[4:]])
    for message_range, expected in [(0, ["t-4"]), (1, ["t-3", "t-4", "t-5"]),
                                    (2, ["t-2", "t-3", "t-4", "t-5", "t-6"])]:
        result = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine",
                              options=RecallOptions(top_k=1, message_range=message_range))
        assert hit_ids(result) == ["t-4"]
        assert [m.id for m in result.hits[0].context] == expected
        assert [m.id for m in result.messages] == expected


async def test_neighbours_stop_at_the_thread_edges(memory: Memory) -> None:
    await save_thread(memory, "t", [TEA, *FILLER[:3]])
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine",
                          options=RecallOptions(top_k=1, message_range=2))
    assert [m.id for m in result.hits[0].context] == ["t-0", "t-1", "t-2"]


async def test_relative_threshold(memory: Memory) -> None:
    await save_thread(memory, "t", ["jasmine tea, jasmine tea, jasmine tea", *FILLER, "some tea"])
    everything = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine tea",
                              options=RecallOptions(message_range=0, context_window=0))
    assert hit_ids(everything) == ["t-0", "t-9"]
    best = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine tea",
                        options=RecallOptions(message_range=0, context_window=0, relative_threshold=0.9))
    assert hit_ids(best) == ["t-0"]


async def test_min_lexical_score(memory: Memory) -> None:
    await save_thread(memory, "t", ["jasmine tea", *FILLER])
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine tea")
    top = result.hits[0].lexical_score
    assert top is not None
    none = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine tea",
                        options=RecallOptions(min_lexical_score=top + 1))
    assert none.hits == [] and none.messages == []


async def test_a_query_without_words_recalls_nothing_but_keeps_the_window(memory: Memory) -> None:
    await _ada(memory)
    result = await recall(memory.recall_reader("ada"), thread_id="now", query=" ?! ",
                          options=RecallOptions(last_n=2))
    assert result.hits == []
    assert [m.id for m in result.messages] == ["now-3", "now-4"]


@pytest.mark.parametrize("strategy", ["prepend", "append", "interleave"])
async def test_merge_never_duplicates_the_recent_window(memory: Memory, strategy: str) -> None:
    texts = [TEA, *FILLER, "jasmine tea again?", "Yes, jasmine tea."]
    await save_thread(memory, "t", texts)
    result = await recall(memory.recall_reader("ada"), thread_id="t", query="jasmine tea",
                          options=RecallOptions(last_n=3, merge=strategy))  # type: ignore[arg-type]
    window = ["t-8", "t-9", "t-10"]
    assert [m.id for m in result.history] == window
    assert "t-0" in hit_ids(result)
    assert not set(hit_ids(result)) & set(window)  # the window's messages are never hits
    ids = [m.id for m in result.messages]
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i in window] == window
    assert not {m.id for m in result.recalled} & set(window)
    recalled = [m.id for m in result.recalled]
    if strategy == "prepend":
        assert ids == [*recalled, *window]
    elif strategy == "append":
        assert ids == [*window, *recalled]
    else:
        assert ids == sorted(ids, key=lambda i: int(i.split("-")[1]))


async def test_neighbours_inside_the_window_are_not_repeated(memory: Memory) -> None:
    await save_thread(memory, "t", [*FILLER[:5], TEA, *FILLER[5:7]])
    result = await recall(memory.recall_reader("ada"), thread_id="t", query="jasmine",
                          options=RecallOptions(last_n=2, message_range=2, top_k=1))
    assert hit_ids(result) == ["t-5"]
    assert [m.id for m in result.hits[0].context] == ["t-3", "t-4", "t-5"]
    assert [m.id for m in result.messages] == ["t-3", "t-4", "t-5", "t-6", "t-7"]


async def test_recalled_messages_never_hold_half_a_tool_exchange(memory: Memory) -> None:
    from memvault import Message, TextPart, ToolCallPart, ToolResultPart

    messages = [
        Message(id="m0", role="user", parts=[TextPart(text="what's the weather in Lisbon?")]),
        Message(id="m1", role="assistant", parts=[
            TextPart(text="Checking the Lisbon forecast."),
            ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Lisbon"})]),
        Message(id="m2", role="tool", parts=[ToolResultPart(tool_call_id="c1", output="sunny, 24C")]),
        Message(id="m3", role="assistant", parts=[TextPart(text="Sunny and warm.")]),
        *[Message(id=f"f{i}", role="user", parts=[TextPart(text=t)]) for i, t in enumerate(FILLER)],
    ]
    await memory.save_messages(messages, thread_id="t", resource_id="ada")
    half = await recall(memory.recall_reader("ada"), thread_id=None, query="Lisbon forecast",
                        options=RecallOptions(top_k=1, message_range=0, context_window=0))
    assert [h.message.id for h in half.hits] == ["m1"]
    assert half.hits[0].message.tool_calls  # the hit itself is the stored message
    assert [m.id for m in half.messages] == ["m1"]
    assert half.messages[0].tool_calls == [] and half.messages[0].text == "Checking the Lisbon forecast."
    whole = await recall(memory.recall_reader("ada"), thread_id=None, query="Lisbon forecast",
                         options=RecallOptions(top_k=1, message_range=1, context_window=0))
    assert [m.id for m in whole.messages] == ["m0", "m1", "m2"]
    assert whole.messages[1].tool_calls and whole.messages[2].tool_results


async def test_the_memory_history_options_give_the_default_window(memory: Memory) -> None:
    await save_thread(memory, "t", [f"{i} tea" for i in range(14)])
    result = await recall(memory.recall_reader("ada"), thread_id="t", query="tea")
    assert len(result.history) == memory.options.history.last_n == 10
    assert all(int(h.message.id.split("-")[1]) < 4 for h in result.hits)


async def test_working_memory_is_returned(memory: Memory) -> None:
    await _ada(memory)
    await memory.update_working_memory("- likes: jasmine tea", resource_id="ada", thread_id="now")
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="tea")
    assert result.working_memory is not None and "jasmine" in result.working_memory
    off = await recall(memory.recall_reader("ada"), thread_id="now", query="tea",
                       options=RecallOptions(working_memory=False))
    assert off.working_memory is None


@pytest.mark.parametrize("scope", ["thread", "resource"])
async def test_no_current_thread_means_no_window_and_no_thread_working_memory(scope: str) -> None:
    from memvault import MemoryOptions, WorkingMemoryOptions

    opened = await Memory.open("memory://", options=MemoryOptions(
        working_memory=WorkingMemoryOptions(scope=scope)))  # type: ignore[arg-type]
    try:
        await save_thread(opened, "t", [TEA])
        await opened.update_working_memory("- tea", resource_id="ada", thread_id="t")
        result = await recall(opened.recall_reader("ada"), thread_id=None, query="jasmine")
        assert result.history == [] and hit_ids(result) == ["t-0"]
        assert result.working_memory == (None if scope == "thread" else "- tea")
    finally:
        await opened.close()


async def test_author_boost_prefers_the_named_author(memory: Memory) -> None:
    texts = ["I adopted a cat.", "I adopted a dog.", *FILLER[:2]]
    await save_thread(memory, "t", texts, names=["Mel", "Caro"])
    options = RecallOptions(top_k=1, message_range=0, context_window=0)
    caro = await recall(memory.recall_reader("ada"), thread_id=None, query="What did Caro adopt?",
                        options=options)
    mel = await recall(memory.recall_reader("ada"), thread_id=None, query="What did Mel adopt?",
                       options=options)
    assert (hit_ids(caro), hit_ids(mel)) == (["t-1"], ["t-0"])


async def test_date_boost_prefers_messages_of_the_named_day(memory: Memory) -> None:
    texts = ["We talked about the garden.", *FILLER[:2]]
    await save_thread(memory, "a", texts, start=datetime(2023, 5, 8, tzinfo=UTC))
    await save_thread(memory, "b", texts, start=datetime(2023, 6, 9, tzinfo=UTC))
    options = RecallOptions(top_k=1, message_range=0)
    may = await recall(memory.recall_reader("ada"), thread_id=None,
                       query="What about the garden on 8 May 2023?", options=options)
    june = await recall(memory.recall_reader("ada"), thread_id=None,
                        query="What about the garden in June 2023?", options=options)
    assert (may.hits[0].thread_id, june.hits[0].thread_id) == ("a", "b")


# vector search


def vectors(matches: Sequence[tuple[MessageRef | tuple[str, str], float]]) -> VectorSearch:
    calls: list[tuple[str, str, str | None, int]] = []

    async def search(query: str, resource_id: str, thread_id: str | None, top_k: int) -> list[
            tuple[MessageRef | tuple[str, str], float]]:
        calls.append((query, resource_id, thread_id, top_k))
        return [m for m in matches if thread_id is None or m[0][0] == thread_id][:top_k]

    search.calls = calls  # type: ignore[attr-defined]
    return search


async def test_vector_hits_are_fused_and_labelled(memory: Memory) -> None:
    await _ada(memory)
    search = vectors([(MessageRef("old", "old-3"), 0.9), (("old", "old-6"), 0.8)])
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                          options=RecallOptions(last_n=0, message_range=0, top_k=20), vector_search=search)
    sources = {h.message.id: h.source for h in result.hits}
    assert sources["old-3"] == "both"
    assert sources["old-6"] == "vector"
    assert result.hits[0].message.id == "old-3"
    assert result.hits[0].vector_score == 0.9
    assert search.calls == [("jasmine tea", "ada", None, 50)]  # type: ignore[attr-defined]


async def test_a_synchronous_vector_search_works_too(memory: Memory) -> None:
    await _ada(memory)

    def search(query: str, resource_id: str, thread_id: str | None, top_k: int) -> list[
            tuple[MessageRef, float]]:
        return [(MessageRef("old", "old-6"), 0.7)]

    result = await recall(memory.recall_reader("ada"), thread_id="now", query="nothing matches this",
                          options=RecallOptions(last_n=0), vector_search=search)
    assert [(h.message.id, h.source) for h in result.hits] == [("old-6", "vector")]
    assert [m.id for m in result.hits[0].context] == ["old-5", "old-6", "old-7"]


async def test_vector_matches_outside_the_resource_or_scope_are_dropped(memory: Memory) -> None:
    await _ada(memory)
    await save_thread(memory, "secret", ["bob's secret"], resource_id="bob")
    search = vectors([(MessageRef("secret", "secret-0"), 0.99), (MessageRef("old", "gone"), 0.95),
                      (MessageRef("old", "old-1"), 0.5), (MessageRef("now", "now-1"), 0.4)])
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="zzz",
                          options=RecallOptions(last_n=0, message_range=0), vector_search=search)
    assert hit_ids(result) == ["old-1", "now-1"]
    scoped = await recall(memory.recall_reader("ada"), thread_id="now", query="zzz",
                          options=RecallOptions(last_n=0, message_range=0, scope="thread"),
                          vector_search=search)
    assert hit_ids(scoped) == ["now-1"]
    assert search.calls[-1][2] == "now"  # type: ignore[attr-defined]


async def test_min_vector_score(memory: Memory) -> None:
    await _ada(memory)
    search = vectors([(MessageRef("old", "old-1"), 0.5), (MessageRef("old", "old-2"), 0.2)])
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="zzz",
                          options=RecallOptions(min_vector_score=0.3, message_range=0),
                          vector_search=search)
    assert hit_ids(result) == ["old-1"]


@pytest.mark.parametrize("fusion", ["weighted", "minmax", "rrf"])
async def test_hits_carry_the_fused_score(memory: Memory, fusion: str) -> None:
    texts = ["jasmine tea jasmine tea", *FILLER[:3], "tea", *FILLER[3:]]
    await save_thread(memory, "t", texts)
    search = vectors([(MessageRef("t", "t-4"), 0.95), (MessageRef("t", "t-0"), 0.10),
                      (MessageRef("t", "t-7"), 0.05)])
    options = RecallOptions(fusion="rrf" if fusion == "rrf" else "weighted", message_range=0,
                            top_k=20, lexical_weight=1.0, vector_weight=2.0,
                            normalization="minmax" if fusion == "minmax" else "max")
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="jasmine tea",
                          options=options, vector_search=search)
    lexical = {h.message.id: h.lexical_score for h in result.hits if h.lexical_score is not None}
    vector = {h.message.id: h.vector_score for h in result.hits if h.vector_score is not None}
    assert vector == {"t-4": 0.95, "t-0": 0.10, "t-7": 0.05}
    assert {h.message.id: h.source for h in result.hits if h.message.id in vector} == {
        "t-4": "both", "t-0": "both", "t-7": "vector"}
    for hit in result.hits:
        key = hit.message.id
        if fusion == "weighted":
            expected = (lexical.get(key, 0.0) / max(lexical.values())
                        + 2.0 * vector.get(key, 0.0) / max(vector.values()))
        elif fusion == "minmax":
            low, high = min(lexical.values()), max(lexical.values())
            expected = (lexical[key] - low) / (high - low) if key in lexical else 0.0
            if key in vector:
                expected += 2.0 * (vector[key] - 0.05) / (0.95 - 0.05)
        else:
            lexical_order = sorted(lexical, key=lambda k: -lexical[k])
            vector_order = sorted(vector, key=lambda k: -vector[k])
            lexical_rank = lexical_order.index(key) + 1 if key in lexical else None
            vector_rank = vector_order.index(key) + 1 if key in vector else None
            expected = ((1 / (60 + lexical_rank) if lexical_rank else 0.0)
                        + (2.0 / (60 + vector_rank) if vector_rank else 0.0))
        assert hit.score == pytest.approx(expected)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


# degradation


async def test_a_failing_vector_search_degrades_to_lexical(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    await _ada(memory)

    async def broken(query: str, resource_id: str, thread_id: str | None, top_k: int) -> list[
            tuple[MessageRef, float]]:
        raise ConnectionError("embedding service unreachable")

    with caplog.at_level(logging.WARNING, logger="memvault.recall"):
        result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                              vector_search=broken)
    assert hit_ids(result)[0] == "old-3"
    assert {h.source for h in result.hits} == {"lexical"}
    assert any("vector search failed" in r.getMessage() and "unreachable" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)
    assert result.warnings and "ConnectionError" in result.warnings[0]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda *a: 1 / 0, id="sync-raises"),
        pytest.param(lambda *a: [("just-one-field",)], id="malformed-match"),
        pytest.param(lambda *a: [(("old", "old-1"), float("nan"))], id="nan-score"),
        pytest.param(lambda *a: None, id="not-a-list"),
        pytest.param(lambda *a: [(("", "old-1"), 0.5)], id="empty-thread-id"),
        pytest.param(lambda *a: [(("old", "x" * 300), 0.5)], id="overlong-id"),
    ],
)
async def test_any_vector_failure_or_bad_match_is_a_warning(
    memory: Memory, caplog: pytest.LogCaptureFixture, answer: VectorSearch
) -> None:
    await _ada(memory)
    with caplog.at_level(logging.WARNING, logger="memvault.recall"):
        result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                              vector_search=answer)
    assert hit_ids(result)[0] == "old-3"
    assert {h.source for h in result.hits} == {"lexical"}
    assert len(result.warnings) == 1
    assert caplog.records


async def test_a_bad_match_does_not_lose_the_good_ones(memory: Memory) -> None:
    await _ada(memory)

    def search(query: str, resource_id: str, thread_id: str | None, top_k: int) -> list[Any]:
        return [(("old", ""), 0.99), ("nonsense",), (("old", "old-6"), 0.7)]

    result = await recall(memory.recall_reader("ada"), thread_id="now", query="zzz",
                          options=RecallOptions(last_n=0, message_range=0), vector_search=search)
    assert [(h.message.id, h.source) for h in result.hits] == [("old-6", "vector")]
    assert len(result.warnings) == 1 and "2 malformed" in result.warnings[0]


async def test_result_to_dict_is_json_ready(memory: Memory) -> None:
    import json

    await _ada(memory)
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["hits"][0]["thread_id"] == "old"
    assert data["hits"][0]["other_thread"] is True


# vector scorer: every candidate scored by meaning, smoothed over its neighbours


class TableScorer:
    """A stand-in for the semantic index's scorer: similarities from a table by message id;
    records what it is asked, and can be told to fail."""

    def __init__(self, table: dict[str, float], *, failing: bool = False) -> None:
        self.table = table
        self.failing = failing
        self.asked: list[tuple[str, str, list[MessageRef]]] = []

    async def similarities(self, query: str, resource_id: str, refs: Sequence[MessageRef]) -> dict[
            MessageRef, float]:
        self.asked.append((query, resource_id, list(refs)))
        if self.failing:
            raise ConnectionError("index down")
        return {ref: self.table[ref.message_id] for ref in refs if ref.message_id in self.table}


async def test_a_scorer_smooths_similarity_over_the_neighbours(memory: Memory) -> None:
    await save_thread(memory, "t", FILLER)
    table = {f"t-{i}": 0.0 for i in range(8)} | {"t-3": 0.9}
    search = vectors([(MessageRef("t", "t-3"), 0.9)])
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="zzz",
                          options=RecallOptions(message_range=0, vector_context_window=1),
                          vector_search=search, vector_scorer=TableScorer(table))
    # (0.9 * 1 + 0.0 * 0.5 + 0.0 * 0.5) / (1 + 0.5 + 0.5); the match's neighbours become
    # candidates too: (0.0 + 0.9 * 0.5 + 0.0 * 0.5) / 2
    assert [(h.message.id, h.vector_score, h.source) for h in result.hits] == [
        ("t-3", pytest.approx(0.45), "vector"), ("t-2", pytest.approx(0.225), "vector"),
        ("t-4", pytest.approx(0.225), "vector")]
    edge = await recall(memory.recall_reader("ada"), thread_id=None, query="zzz",
                        options=RecallOptions(message_range=0, vector_context_window=2),
                        vector_search=vectors([(MessageRef("t", "t-0"), 0.9)]),
                        vector_scorer=TableScorer(table | {"t-0": 0.6, "t-1": 0.3}))
    # the thread starts at t-0: only t-1 (0.5) and t-2 (0.25) beside it
    assert edge.hits[0].vector_score == pytest.approx((0.6 + 0.5 * 0.3 + 0.25 * 0.0) / 1.75)


async def test_a_scorer_gives_every_lexical_candidate_a_vector_score(memory: Memory) -> None:
    await _ada(memory)
    table = {f"old-{i}": 0.1 * i for i in range(9)}
    scorer = TableScorer(table)
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                          options=RecallOptions(last_n=0, message_range=0, vector_context_window=0),
                          vector_search=vectors([(MessageRef("old", "old-6"), 0.6)]), vector_scorer=scorer)
    by_id = {h.message.id: h for h in result.hits}
    assert by_id["old-3"].source == "both"  # a lexical hit the vector search did not return
    assert by_id["old-3"].vector_score == pytest.approx(0.3)
    assert by_id["old-6"].source == "vector"
    assert all(query == "jasmine tea" and resource == "ada" for query, resource, _ in scorer.asked)


async def test_min_vector_score_applies_to_the_own_similarity(memory: Memory) -> None:
    await save_thread(memory, "t", FILLER)
    table = {"t-2": 0.2, "t-3": 0.9, "t-4": 0.4}
    search = vectors([(MessageRef("t", "t-3"), 0.9), (MessageRef("t", "t-2"), 0.2)])
    result = await recall(memory.recall_reader("ada"), thread_id=None, query="zzz",
                          options=RecallOptions(message_range=0, min_vector_score=0.5),
                          vector_search=search, vector_scorer=TableScorer(table))
    assert hit_ids(result) == ["t-3"]


async def test_a_failing_scorer_falls_back_to_the_matches(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    await _ada(memory)
    with caplog.at_level(logging.WARNING, logger="memvault.recall"):
        result = await recall(memory.recall_reader("ada"), thread_id="now", query="zzz",
                              options=RecallOptions(last_n=0, message_range=0),
                              vector_search=vectors([(MessageRef("old", "old-6"), 0.6)]),
                              vector_scorer=TableScorer({}, failing=True))
    assert [(h.message.id, h.vector_score) for h in result.hits] == [("old-6", 0.6)]
    assert len(result.warnings) == 1 and "vector scoring failed" in result.warnings[0]
    assert "index down" in caplog.text


async def test_a_scorer_without_a_search_is_not_asked(memory: Memory) -> None:
    await _ada(memory)
    scorer = TableScorer({"old-3": 0.9})
    result = await recall(memory.recall_reader("ada"), thread_id="now", query="jasmine tea",
                          vector_scorer=scorer)
    assert hit_ids(result)[0] == "old-3" and scorer.asked == []
    assert {h.source for h in result.hits} == {"lexical"}


def test_vector_weight_defaults_depend_on_the_scorer() -> None:
    from memvault.recall.options import vector_weight

    assert vector_weight(RecallOptions(), scored=True) == 1.3
    assert vector_weight(RecallOptions(), scored=False) == 0.3
    assert vector_weight(RecallOptions(vector_weight=2.0), scored=True) == 2.0


def test_the_name_boost_and_question_penalty_defaults_depend_on_the_scorer() -> None:
    from memvault.recall.options import entity_boost, question_penalty

    assert entity_boost(RecallOptions(), scored=True) == 0.5
    assert entity_boost(RecallOptions(), scored=False) == 0.0
    assert entity_boost(RecallOptions(entity_boost=0.0), scored=True) == 0.0
    assert entity_boost(RecallOptions(entity_boost=2.0), scored=False) == 2.0
    assert (question_penalty(RecallOptions(), True), question_penalty(RecallOptions(), False)) == (0.5, 0.9)


async def test_names_weigh_more_by_default_only_with_a_scorer(memory: Memory) -> None:
    """With a vector scorer a name in the query counts 1.5 times in the words' score, as with
    ``entity_boost=0.5``; words alone keep it at 1 (``entity_boost=0``)."""
    await save_thread(memory, "t", ["Caroline went to the museum.", "The tea was green and hot.",
                                    *FILLER[:4]])
    table = {f"t-{i}": 0.1 for i in range(6)}

    async def lexical(scorer: bool, **given: float) -> dict[str, float | None]:
        result = await recall(memory.recall_reader("ada"), thread_id=None, query="Did Caroline like tea?",
                              options=RecallOptions(message_range=0, context_window=0, **given),
                              vector_search=vectors([(MessageRef("t", "t-5"), 0.1)]) if scorer else None,
                              vector_scorer=TableScorer(table) if scorer else None)
        return {h.message.id: h.lexical_score for h in result.hits if h.lexical_score is not None}

    scored = await lexical(True)
    assert scored == await lexical(True, entity_boost=0.5) != await lexical(True, entity_boost=0.0)
    assert scored["t-0"] > scored["t-1"]  # the name's message before the tea's
    words = await lexical(False)
    assert words == await lexical(False, entity_boost=0.0) != await lexical(False, entity_boost=0.5)
    assert words["t-1"] > words["t-0"]  # unboosted, the name is one word among others


async def test_memory_options_give_the_default_recall_options() -> None:
    from memvault import MemoryOptions

    memory = await Memory.open("memory://", options=MemoryOptions(
        recall=RecallOptions(scope="thread", top_k=1, message_range=0)))
    try:
        await _ada(memory)
        default = await memory.recall(thread_id="now", resource_id="ada", query="jasmine tea")
        assert default.hits == []  # scope "thread": the tea of thread "old" is not searched
        told = await memory.recall(thread_id="now", resource_id="ada", query="jasmine tea",
                                   options=RecallOptions(last_n=0, message_range=0))
        assert hit_ids(told)[0] == "old-3"  # options given: the memory's defaults are not used
    finally:
        await memory.close()
