"""Diversity in the final top k: across threads and across neighbouring turns."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.errors import ValidationError
from memvault.recall import RecallOptions, recall
from memvault.recall.diversity import diversify

from .conftest import FILLER, save_thread

Ranked = list[tuple[tuple[str, str], float]]


def _ranked(scores: list[tuple[str, float]]) -> tuple[Ranked, dict[tuple[str, str], Message]]:
    """Best-first candidates; the i-th of a thread has seq i."""
    counts: dict[str, int] = {}
    ranked: Ranked = []
    messages: dict[tuple[str, str], Message] = {}
    for thread, score in scores:
        counts[thread] = counts.get(thread, 0) + 1
        key = (thread, f"{thread}{counts[thread]}")
        ranked.append((key, score))
        messages[key] = Message(id=key[1], role="user", seq=counts[thread])
    ranked.sort(key=lambda item: -item[1])
    return ranked, messages


candidates = st.lists(st.tuples(st.sampled_from("abc"), st.floats(min_value=0.0, max_value=10.0)),
                      max_size=30)
penalties = st.floats(min_value=0.0, max_value=1.0)


@given(candidates, st.integers(min_value=1, max_value=40), penalties, penalties)
def test_diversity_only_reorders_and_never_returns_fewer(
    scores: list[tuple[str, float]], top_k: int, thread: float, neighbour: float
) -> None:
    ranked, messages = _ranked(scores)
    picked = diversify(ranked, messages, top_k, thread_penalty=thread, neighbour_penalty=neighbour)
    assert len(picked) == min(top_k, len(ranked))
    assert len({key for key, _ in picked}) == len(picked)
    original = dict(ranked)
    for key, score in picked:
        assert 0.0 <= score <= original[key]
    shown = [score for _, score in picked]
    assert shown == sorted(shown, reverse=True)


@given(candidates, st.integers(min_value=1, max_value=40))
def test_no_penalty_is_the_plain_ranking(scores: list[tuple[str, float]], top_k: int) -> None:
    ranked, messages = _ranked(scores)
    assert diversify(ranked, messages, top_k) == ranked[:top_k]


def test_a_thread_penalty_brings_in_another_thread() -> None:
    ranked, messages = _ranked([("a", 1.0), ("a", 0.95), ("a", 0.9), ("b", 0.8)])
    plain = [key[0] for key, _ in diversify(ranked, messages, 3)]
    spread = [key[0] for key, _ in diversify(ranked, messages, 3, thread_penalty=0.25)]
    assert plain == ["a", "a", "a"]
    assert spread == ["a", "b", "a"]


def test_a_neighbour_penalty_skips_the_turn_next_to_a_hit() -> None:
    # a1 (seq 1) taken: a2 (seq 2) is its neighbour, a3 (seq 3) is not
    ranked, messages = _ranked([("a", 1.0), ("a", 0.95), ("a", 0.9)])
    picked = diversify(ranked, messages, 2, neighbour_penalty=0.1)
    assert [key for key, _ in picked] == [("a", "a1"), ("a", "a3")]


async def test_diversity_through_recall_keeps_top_k(memory: Memory) -> None:
    await save_thread(memory, "busy", ["The garden tulips are red.", "Garden tulips again!",
                                       "More garden tulips.", *FILLER[:3]])
    await save_thread(memory, "other", [*FILLER[3:6], "A garden of tulips, once, long ago and far away."])
    # the weakest candidate (fused score 0 under min-max normalisation)
    await save_thread(memory, "weak", ["Somewhere far away there is a garden with hardly anything in it."])
    reader = memory.recall_reader("ada")
    base = RecallOptions(top_k=3, message_range=0, context_window=0)
    plain = await recall(reader, thread_id=None, query="garden tulips", options=base)
    spread = await recall(reader, thread_id=None, query="garden tulips",
                          options=RecallOptions(top_k=3, message_range=0, context_window=0,
                                                thread_diversity=1.0))
    assert [h.thread_id for h in plain.hits] == ["busy", "busy", "busy"]
    assert len(spread.hits) == 3
    assert {h.thread_id for h in spread.hits} == {"busy", "other"}


@pytest.mark.parametrize("name", ["thread_diversity", "neighbour_diversity"])
@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), "1", True])
def test_diversity_is_validated(name: str, value: object) -> None:
    with pytest.raises(ValidationError, match=name):
        RecallOptions(**{name: value})  # type: ignore[arg-type]
