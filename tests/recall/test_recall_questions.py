"""Earlier questions put back: the question share of a text, and the lazy re-ranking that reads
as few texts as the top needs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.errors import ValidationError
from memvault.recall import RecallOptions, recall
from memvault.recall.questions import penalise_questions, question_share
from memvault.rules.words import fold_text
from memvault.stores.passages import Passage

from .conftest import FILLER, hit_ids, save_thread

Key = tuple[str, str]



@pytest.mark.parametrize(("text", "share"), [
    ("", 0.0),
    ("...?!", 0.0),  # marks without a sentence
    ("I moved to Lisbon.", 0.0),
    ("Really?!", 1.0),
    ("Wow, nice! What kind of yoga is it?", 0.5),
    ("Did you go?\nI did", 0.5),
    ("where did you go", 0.0),  # no mark: a statement
    (fold_text("本当\uff1fそれはいい\u3002どう\uff1f"), 2 / 3),  # full-width marks fold to ASCII ones
])
def test_question_share(text: str, share: float) -> None:
    assert question_share(text) == share


sentences = st.lists(st.tuples(st.text(alphabet="abc xyz", min_size=1, max_size=8), st.booleans()),
                     max_size=6)


@given(sentences)
def test_the_share_counts_the_sentences_that_end_with_a_question_mark(
    parts: list[tuple[str, bool]],
) -> None:
    kept = [(body, asked) for body, asked in parts if body.strip()]
    text = " ".join(f"{body}{'?' if asked else '.'}" for body, asked in kept)
    expected = sum(asked for _, asked in kept) / len(kept) if kept else 0.0
    assert question_share(text) == pytest.approx(expected)


@given(st.text())
def test_the_share_is_a_fraction(text: str) -> None:
    assert 0.0 <= question_share(text) <= 1.0
    if "?" not in text:
        assert question_share(text) == 0.0


class _Counted(Passage):
    """A passage whose text reads are counted."""

    reads = 0

    @property
    def text(self) -> str:
        _Counted.reads += 1
        return super().text


def _candidates(rows: list[tuple[float, bool, int]]) -> tuple[list[tuple[Key, float]], dict[Key, Passage]]:
    passages: dict[Key, Passage] = {}
    ranked: list[tuple[Key, float]] = []
    for i, (score, asked, created) in enumerate(rows):
        key = ("t", f"m{i}")
        text = "Where did you go?" if asked else "We went to the coast."
        created_at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=created)
        passages[key] = _Counted.of(Message.user(text, id=key[1], created_at=created_at))
        ranked.append((key, score))
    return ranked, passages


def _order(passages: dict[Key, Passage]):  # type: ignore[no-untyped-def]
    return lambda item: (-item[1], passages[item[0]].created_us, item[0])


rows = st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]) | st.floats(0.0, 10.0),
                          st.booleans(), st.integers(0, 3)), max_size=40)


@given(rows, st.integers(min_value=1, max_value=45),
       st.sampled_from([0.5, 1.0]) | st.floats(min_value=0.0, max_value=1.0))
def test_the_top_is_exactly_what_penalising_every_candidate_gives(
    candidates: list[tuple[float, bool, int]], needed: int, penalty: float,
) -> None:
    """Ties included: the lazy walk stops only where no later candidate can reach the top."""
    ranked, passages = _candidates(candidates)
    order = _order(passages)
    ranked.sort(key=order)
    every = sorted(((key, score * (1 - penalty * question_share(passages[key].text)))
                    for key, score in ranked), key=order)
    lazy = penalise_questions(ranked, passages, penalty, needed, order)
    assert lazy[:needed] == every[:needed]
    assert sorted(key for key, _ in lazy) == sorted(key for key, _ in ranked)  # only reordered


def test_only_the_texts_the_top_needs_are_read() -> None:
    ranked, passages = _candidates([(10.0 - i, i % 4 == 0, 0) for i in range(100)])
    _Counted.reads = 0
    top = penalise_questions(ranked, passages, 0.9, 5, _order(passages))
    assert [key[1] for key, _ in top[:5]] == ["m1", "m2", "m3", "m5", "m6"]
    assert _Counted.reads < 10


async def test_an_earlier_question_comes_after_the_statements_that_answer(memory: Memory) -> None:
    texts = [*FILLER[:3], "Do you like green tea?", *FILLER[3:6], "I drink green tea every morning.",
             *FILLER[6:], "The tea shop had closed."]  # a weak match: the scale's bottom
    await save_thread(memory, "t", texts)
    options = RecallOptions(top_k=2, message_range=0, context_window=0)
    found = await recall(memory.recall_reader("ada"), thread_id=None, query="green tea", options=options)
    assert hit_ids(found) == ["t-7", "t-3"]
    off = RecallOptions(top_k=2, message_range=0, context_window=0, question_penalty=0)
    unpenalised = await recall(memory.recall_reader("ada"), thread_id=None, query="green tea", options=off)
    assert hit_ids(unpenalised)[0] == "t-3"  # the shorter text scores higher by words
    assert found.hits[1].score < unpenalised.hits[0].score


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), "high"])
def test_a_penalty_outside_0_to_1_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match="question_penalty"):
        RecallOptions(question_penalty=value)  # type: ignore[arg-type]
