"""The history window: newest last_n (default 10), within max_tokens, tool calls kept with their
results."""

from __future__ import annotations

import pytest

from memvault import Memory, Message, TextPart, ToolCallPart, ToolResultPart
from memvault.rules.tokens import message_tokens

from .support import assert_tool_pairs_complete, ids, save_texts

R, T = "alice", "t"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def _call(*call_ids: str, text: str | None = None) -> list:
    parts: list = [TextPart(text=text)] if text else []
    return parts + [ToolCallPart(tool_call_id=c, name="weather", args={"city": c}) for c in call_ids]


# u1, a1 (calls c1, c2 in parallel), r1 (c1), r2 (c2), a2, a3 (text + dangling call c3), u2
CONVERSATION = [
    Message.user("what is the weather in paris and rome", id="u1"),
    Message(role="assistant", id="a1", parts=_call("c1", "c2")),
    Message(role="tool", id="r1", parts=[ToolResultPart(tool_call_id="c1", output={"sun": True})]),
    Message(role="tool", id="r2", parts=[ToolResultPart(tool_call_id="c2", output="rain")]),
    Message.assistant("sunny in paris, rain in rome", id="a2"),
    Message(role="assistant", id="a3", parts=_call("c3", text="let me check berlin")),
    Message.user("thanks", id="u2"),
]
ALL = [m.id for m in CONVERSATION]


def _w(numbers: range) -> list[str]:
    return [f"w{i}" for i in numbers]


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (3, _w(range(3))),
        (10, _w(range(10))),
        (15, _w(range(5, 15))),
        pytest.param(
            7, _w(range(7)), id="7",
        ),
    ],
)
async def test_default_window_is_the_last_10(memory: Memory, count: int, expected: list) -> None:
    texts = {f"w{i}": WORDS[i % len(WORDS)] for i in range(count)}
    await save_texts(memory, texts, thread_id=T, resource_id=R)
    assert ids(await memory.get_history(thread_id=T, resource_id=R)) == expected


@pytest.mark.parametrize("last_n", [0, 1, 3, 8])
async def test_last_n(memory: Memory, last_n: int) -> None:
    await save_texts(memory, dict(zip(WORDS, WORDS, strict=True)), thread_id=T, resource_id=R)
    window = await memory.get_history(thread_id=T, resource_id=R, last_n=last_n)
    assert ids(window) == (WORDS[-last_n:] if last_n else [])


@pytest.mark.parametrize("max_tokens", [0, 4, 5, 9, 10, 24, 25, 1000])
async def test_max_tokens_keeps_the_newest_that_fit(memory: Memory, max_tokens: int) -> None:
    await save_texts(memory, dict(zip(WORDS, WORDS, strict=True)), thread_id=T, resource_id=R)
    cost = message_tokens(Message.user("alpha"))  # every message here costs the same
    window = await memory.get_history(thread_id=T, resource_id=R, last_n=8, max_tokens=max_tokens)
    fitting = min(len(WORDS), max_tokens // cost)
    assert ids(window) == (WORDS[-fitting:] if fitting else [])


async def test_missing_thread_has_empty_history(memory: Memory) -> None:
    assert await memory.get_history(thread_id="nope", resource_id=R) == []


@pytest.mark.parametrize(
    ("last_n", "expected"),
    [
        (7, ALL),  # c3 has no result: a3 keeps its text but loses the dangling call
        (5, ["a2", "a3", "u2"]),  # starts at r2 (result without its call): r1/r2 left out
        (4, ["a2", "a3", "u2"]),
        (2, ["a3", "u2"]),
        (1, ["u2"]),
    ],
)
async def test_history_never_splits_a_tool_exchange(
    memory: Memory, last_n: int, expected: list[str]
) -> None:
    await memory.save_messages(CONVERSATION, thread_id=T, resource_id=R)
    window = await memory.get_history(thread_id=T, resource_id=R, last_n=last_n)
    assert ids(window) == expected
    assert_tool_pairs_complete(window)
    for a3 in (m for m in window if m.id == "a3"):
        assert (a3.text, a3.tool_calls) == ("let me check berlin", [])
    stored = await memory.get_messages(thread_id=T, resource_id=R, ids=["a3"])
    assert len(stored[0].tool_calls) == 1  # trimming is only in the returned window


async def test_token_cut_falls_between_complete_exchanges(memory: Memory) -> None:
    await memory.save_messages(CONVERSATION, thread_id=T, resource_id=R)
    full = await memory.get_history(thread_id=T, resource_id=R, last_n=7)
    costs = [message_tokens(m) for m in full]
    # room for r1..u2 but not for a1: r1 and r2 must not come without the call that made them
    budget = sum(costs[2:])
    window = await memory.get_history(thread_id=T, resource_id=R, last_n=7, max_tokens=budget)
    assert ids(window) == ["a2", "a3", "u2"]
    # room for a1 too: the whole exchange fits
    window = await memory.get_history(
        thread_id=T, resource_id=R, last_n=7, max_tokens=sum(costs[1:])
    )
    assert ids(window) == ALL[1:]


@pytest.mark.parametrize("last_n", range(8))
@pytest.mark.parametrize("max_tokens", [None, 0, 7, 15, 30, 60, 10_000])
async def test_window_invariants(memory: Memory, last_n: int, max_tokens: int | None) -> None:
    await memory.save_messages(CONVERSATION, thread_id=T, resource_id=R)
    window = await memory.get_history(thread_id=T, resource_id=R, last_n=last_n,
                                      max_tokens=max_tokens)
    assert_tool_pairs_complete(window)
    tail = ALL[-last_n:] if last_n else []
    assert [i for i in tail if i in ids(window)] == ids(window)  # a subsequence of the tail
    if max_tokens is not None:
        assert sum(message_tokens(m) for m in window) <= max_tokens
    if window:
        assert window[-1].id == ALL[-1]  # cuts only ever drop the oldest end
