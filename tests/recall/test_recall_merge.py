"""Merge strategies: recalled messages never repeat the recent window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import Message
from memvault.recall.merge import chronological, merge, without

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def msg(thread: str, seq: int, minutes: int | None = None) -> Message:
    return Message(id=f"{thread}-{seq}", role="user", parts=[{"type": "text", "text": f"{thread} {seq}"}],
                   thread_id=thread, seq=seq,
                   created_at=T0 + timedelta(minutes=seq if minutes is None else minutes))


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


WINDOW = [msg("t", 8), msg("t", 9), msg("t", 10)]
RECALLED = [msg("t", 2), msg("t", 3), msg("t", 9), msg("u", 5, minutes=-30)]


def test_prepend() -> None:
    assert ids(merge(RECALLED, WINDOW, "prepend")) == ["t-2", "t-3", "u-5", "t-8", "t-9", "t-10"]


def test_append() -> None:
    assert ids(merge(RECALLED, WINDOW, "append")) == ["t-8", "t-9", "t-10", "t-2", "t-3", "u-5"]


def test_interleave_merges_by_time() -> None:
    recalled = chronological([msg("t", 2), msg("u", 1, minutes=9), msg("t", 9)])
    # u-1 has the time of t-9: the recalled message comes first
    assert ids(merge(recalled, WINDOW, "interleave")) == ["t-2", "t-8", "u-1", "t-9", "t-10"]


def test_same_id_in_another_thread_is_another_message() -> None:
    other = Message(id="t-9", role="user", thread_id="elsewhere", seq=1, created_at=T0)
    assert "elsewhere" in [m.thread_id for m in merge([other], WINDOW, "prepend")]


def test_chronological_keeps_thread_order_and_places_threads_by_their_first_message() -> None:
    messages = [msg("b", 3, minutes=50), msg("a", 7), msg("b", 1, minutes=60), msg("a", 2), msg("a", 7)]
    assert ids(chronological(messages)) == ["a-2", "a-7", "b-1", "b-3"]


def test_without_drops_excluded_and_repeats() -> None:
    assert ids(without([msg("t", 1), msg("t", 8), msg("t", 1)], WINDOW)) == ["t-1"]


@given(
    recalled=st.lists(st.tuples(st.sampled_from("tuv"), st.integers(0, 12)), max_size=15),
    window=st.lists(st.integers(0, 12), max_size=8, unique=True),
    strategy=st.sampled_from(["prepend", "append", "interleave"]),
)
def test_never_duplicates_the_window(
    recalled: list[tuple[str, int]], window: list[int], strategy: str
) -> None:
    recent = [msg("t", s) for s in sorted(window)]
    found = chronological([msg(t, s) for t, s in recalled])
    merged = merge(found, recent, strategy)  # type: ignore[arg-type]
    keys = [(m.thread_id, m.id) for m in merged]
    assert len(keys) == len(set(keys))
    assert [m for m in merged if m.thread_id == "t" and m.seq in window] == recent
    assert {(m.thread_id, m.id) for m in merged} == {(m.thread_id, m.id) for m in [*found, *recent]}


@pytest.mark.parametrize("strategy", ["prepend", "append", "interleave"])
def test_empty_sides(strategy: str) -> None:
    assert merge([], WINDOW, strategy) == WINDOW  # type: ignore[arg-type]
    assert ids(merge(RECALLED, [], strategy)) == ids(RECALLED)  # type: ignore[arg-type]
