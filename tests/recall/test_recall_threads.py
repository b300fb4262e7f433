"""The thread prior: a session-level ranking applied to the turn-level one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import Memory
from memvault.errors import ValidationError
from memvault.recall import RecallOptions, recall
from memvault.recall.threads import thread_prior

from .conftest import FILLER, save_thread

keys = st.tuples(st.sampled_from(["a", "b", "c"]), st.text("0123456789", min_size=1, max_size=3))
score_maps = st.dictionaries(keys, st.floats(min_value=0.0, max_value=100.0), max_size=30)


@given(score_maps)
def test_weight_zero_changes_nothing(scores: dict[tuple[str, str], float]) -> None:
    assert thread_prior(scores, 0.0) == scores


@given(score_maps, st.floats(min_value=0.01, max_value=5.0))
def test_the_order_inside_a_thread_is_kept_and_no_score_drops(
    scores: dict[tuple[str, str], float], weight: float
) -> None:
    boosted = thread_prior(scores, weight)
    assert set(boosted) == set(scores)
    for key, score in scores.items():
        assert score <= boosted[key] <= score * (1.0 + weight) + 1e-9
    for one in scores:
        for other in scores:
            if one[0] == other[0] and scores[one] < scores[other]:
                assert boosted[one] <= boosted[other]


def test_a_thread_with_more_matches_wins_a_tie() -> None:
    scores = {("busy", "1"): 1.0, ("busy", "2"): 0.8, ("busy", "3"): 0.6, ("lone", "1"): 1.0}
    boosted = thread_prior(scores, 0.5)
    assert boosted[("busy", "1")] > boosted[("lone", "1")]
    assert boosted[("busy", "1")] == pytest.approx(1.5)  # the best thread: * (1 + 0.5)


async def test_thread_boost_through_recall(memory: Memory) -> None:
    # the same garden line in two threads; one of them talks about the garden more
    await save_thread(memory, "busy", ["We planted tulips in the garden.", *FILLER[:3],
                                       "The garden tulips need water.", *FILLER[3:6],
                                       "I love the garden in spring."])
    await save_thread(memory, "lone", [*FILLER[:4], "I love the garden in spring.", *FILLER[4:8]])
    options = RecallOptions(top_k=1, message_range=0, context_window=0, thread_boost=1.0)
    result = await recall(memory.recall_reader("ada"), thread_id=None,
                          query="Do I love the garden in spring?", options=options)
    assert result.hits[0].thread_id == "busy"


@pytest.mark.parametrize("value", [-0.1, float("nan"), "1", True])
def test_thread_boost_is_validated(value: object) -> None:
    with pytest.raises(ValidationError, match="thread_boost"):
        RecallOptions(thread_boost=value)  # type: ignore[arg-type]
