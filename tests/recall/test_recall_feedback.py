"""Pseudo-relevance feedback and the name (entity) boost: query terms from the resource's own data."""

from __future__ import annotations

import pytest

from memvault import Memory
from memvault.errors import ValidationError
from memvault.recall import RecallOptions, recall
from memvault.recall.feedback import expansion
from memvault.recall.lexical import _term_weights
from memvault.rules.words import query_terms

from .conftest import FILLER, save_thread


def test_expansion_takes_the_best_candidates_words_not_the_query_nor_stop_words() -> None:
    own = [["paint", "the", "sunset", "lake", "12"], ["sunset", "lake", "canva"], ["cat"], ["dog"]]
    words = [word for word, _ in expansion(own, [3.0, 2.0, 0.5, 0.0], [("paint",)], docs=2, terms=5)]
    assert set(words) == {"sunset", "lake", "canva"}
    assert expansion(own, [0.0, 0.0, 0.0, 0.0], [("paint",)], docs=2, terms=5) == []


def test_expansion_weights_are_relative_to_the_best() -> None:
    own = [["sunset", "sunset", "lake"], ["cat"], ["dog"], ["lake"]]
    found = dict(expansion(own, [1.0, 0.0, 0.0, 0.0], [], docs=1, terms=2))
    assert found["sunset"] == 1.0
    assert 0.0 < found["lake"] < 1.0


async def test_feedback_finds_a_turn_with_the_best_hits_words(memory: Memory) -> None:
    await save_thread(memory, "s1", ["I painted the sunset over the lake with watercolours.",
                                     *FILLER[:4]])
    # s2-3 has none of the query's words; it is in the scored pool as s2-2's neighbour
    await save_thread(memory, "s2", [*FILLER[4:6], "The sunset is early now.",
                                     "The watercolours of the lake came out well.", FILLER[7]])
    reader = memory.recall_reader("ada")
    query = "What did I paint at sunset?"
    plain = RecallOptions(top_k=5, message_range=0, context_window=0)
    fed = RecallOptions(top_k=5, message_range=0, context_window=0, feedback_weight=0.5)
    without = await recall(reader, thread_id=None, query=query, options=plain)
    with_feedback = await recall(reader, thread_id=None, query=query, options=fed)
    assert "s2-3" not in [h.message.id for h in without.hits]
    assert "s2-3" in [h.message.id for h in with_feedback.hits]


async def test_feedback_depends_on_the_resource_alone(memory: Memory) -> None:
    await save_thread(memory, "s1", ["I painted the sunset over the lake with watercolours.",
                                     *FILLER[:4]])
    await save_thread(memory, "s2", [*FILLER[4:7], "The watercolours of the lake came out well."])
    options = RecallOptions(top_k=5, message_range=0, feedback_weight=0.5, entity_boost=1.0)
    query = "What did I paint at sunset with Ana?"

    async def seen() -> list[tuple[str, float]]:
        result = await recall(memory.recall_reader("ada"), thread_id=None, query=query, options=options)
        return [(h.message.id, h.score) for h in result.hits]

    before = await seen()
    # another resource writes the same words, and more of them
    await save_thread(memory, "b1", ["Sunset painting, watercolours, lake, Ana, canvas, brushes."] * 3
                      + FILLER, resource_id="bob")
    assert await seen() == before


def test_names_in_the_query_weigh_more() -> None:
    query = "What did Caroline research in Sweden? Where did she go"
    terms = query_terms(query)
    weights = dict(zip(terms, _term_weights(query, terms, 1.0), strict=True))
    assert weights[("sweden",)] == 2.0 and weights[("research",)] == 1.0
    assert weights[("go",)] == 1.0  # "Where" starts a sentence: not a name, and a stop word anyway
    assert _term_weights(query, terms, 0.0) == [1.0] * len(terms)


@pytest.mark.parametrize(("name", "value"), [("feedback_weight", -1.0), ("feedback_weight", "x"),
                                             ("entity_boost", -0.5), ("feedback_docs", 0),
                                             ("feedback_terms", 1.5)])
def test_feedback_options_are_validated(name: str, value: object) -> None:
    with pytest.raises(ValidationError, match=name):
        RecallOptions(**{name: value})  # type: ignore[arg-type]
