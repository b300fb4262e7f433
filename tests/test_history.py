"""The history window: count and token limits that never split a tool call from its result."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault import Message, TextPart, ToolCallPart, ToolResultPart
from memvault.rules.history import window
from memvault.rules.tokens import message_tokens

TOOL = (ToolCallPart, ToolResultPart)
WORDS = ["tea", "green", "weather", "Paris", "extraordinarily", "42", "?", "你好"]


# -- generating threads -------------------------------------------------------------------------


@st.composite
def sentences(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12)))


@st.composite
def threads(draw: st.DrawFn) -> list[Message]:
    """Plain messages mixed with tool exchanges: 1-3 parallel calls, results in one message or
    split across several (sometimes with a plain message in between), sometimes a dangling call,
    sometimes call and result inside one message."""
    messages: list[Message] = []
    counter = iter(range(10_000))

    def plain() -> Message:
        role = draw(st.sampled_from(["user", "assistant", "system"]))
        return Message(role=role, parts=[TextPart(text=draw(sentences()))])

    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["plain", "plain", "exchange", "inline", "empty"]))
        if kind == "plain":
            messages.append(plain())
        elif kind == "empty":
            messages.append(Message(role="assistant", parts=[]))
        elif kind == "inline":
            call_id = f"c{next(counter)}"
            messages.append(Message(role="assistant", parts=[
                ToolCallPart(tool_call_id=call_id, name="now"),
                ToolResultPart(tool_call_id=call_id, output=draw(sentences())),
            ]))
        else:
            ids = [f"c{next(counter)}" for _ in range(draw(st.integers(1, 3)))]
            preface = [TextPart(text=draw(sentences()))] if draw(st.booleans()) else []
            calls = [ToolCallPart(tool_call_id=i, name="lookup", args={"q": draw(sentences())})
                     for i in ids]
            messages.append(Message(role="assistant", parts=[*preface, *calls]))
            answered = [i for i in ids if draw(st.integers(0, 4)) != 0]  # some dangle
            while answered:
                size = draw(st.integers(1, len(answered)))
                group, answered = answered[:size], answered[size:]
                messages.append(Message(role="tool", parts=[
                    ToolResultPart(tool_call_id=i, output=draw(sentences())) for i in group
                ]))
                if answered and draw(st.booleans()):
                    messages.append(plain())
    return messages


last_ns = st.one_of(st.none(), st.integers(0, 16))
budgets = st.one_of(st.none(), st.integers(0, 250))


# -- an independent reference ------------------------------------------------------------------


def tail_of(messages: list[Message], last_n: int | None) -> list[Message]:
    if last_n is None:
        return list(messages)
    return messages[-last_n:] if last_n else []


def tool_ids(messages: list[Message], kind: type | tuple[type, ...] = TOOL) -> set[str]:
    return {p.tool_call_id for m in messages for p in m.parts if isinstance(p, kind)}


@dataclass
class Reference:
    """The tail with unpaired tool parts removed: what any valid window is a suffix of."""

    messages: list[Message]

    @classmethod
    def of(cls, tail: list[Message]) -> Reference:
        paired = tool_ids(tail, ToolCallPart) & tool_ids(tail, ToolResultPart)
        kept = []
        for message in tail:
            parts = [p for p in message.parts if not isinstance(p, TOOL) or p.tool_call_id in paired]
            if parts or not message.parts:
                kept.append(message.model_copy(update={"parts": parts}))
        return cls(kept)

    def safe(self, cut: int) -> bool:
        """Cutting before ``messages[cut]`` leaves every exchange entirely on one side."""
        return not (tool_ids(self.messages[:cut]) & tool_ids(self.messages[cut:]))

    def tokens(self, start: int) -> int:
        return sum(message_tokens(m) for m in self.messages[start:])


def dump(messages: list[Message]) -> list[tuple[str, list[dict]]]:
    return [(m.id, [p.model_dump() for p in m.parts]) for m in messages]


# -- properties --------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(threads(), last_ns, budgets)
def test_window_invariants(messages: list[Message], last_n: int | None, budget: int | None) -> None:
    got = window(messages, last_n=last_n, max_tokens=budget)
    tail = tail_of(messages, last_n)
    ref = Reference.of(tail)

    # tool exchanges are whole: every id is both called and answered inside the window
    assert tool_ids(got, ToolCallPart) == tool_ids(got, ToolResultPart)

    # a suffix of the tail (in order), where only unpaired tool parts were left out
    start = len(ref.messages) - len(got)
    assert start >= 0
    assert dump(got) == dump(ref.messages[start:])
    tail_ids = [m.id for m in tail]
    positions = [tail_ids.index(m.id) for m in got]
    assert positions == sorted(positions)
    assert ref.safe(start)

    if budget is None:
        assert start == 0
        return
    assert sum(message_tokens(m) for m in got) <= budget
    # maximal: taking in the previous safe unit (one or more messages) would break the budget
    previous = [cut for cut in range(start) if ref.safe(cut)]
    if previous:
        assert ref.tokens(max(previous)) > budget


@given(threads(), last_ns)
def test_without_tools_or_budget_the_window_is_the_last_n(
    messages: list[Message], last_n: int | None
) -> None:
    plain = [m for m in messages if not tool_ids([m])]
    assert dump(window(plain, last_n=last_n)) == dump(tail_of(plain, last_n))


@given(threads(), last_ns, budgets)
def test_window_does_not_change_its_input(
    messages: list[Message], last_n: int | None, budget: int | None
) -> None:
    before = dump(messages)
    window(messages, last_n=last_n, max_tokens=budget)
    assert dump(messages) == before


# -- examples ----------------------------------------------------------------------------------


def call(call_id: str, text: str = "") -> Message:
    preface = [TextPart(text=text)] if text else []
    return Message(role="assistant", id=f"call-{call_id}", parts=[
        *preface, ToolCallPart(tool_call_id=call_id, name="lookup", args={"q": "x"}),
    ])


def result(*call_ids: str) -> Message:
    return Message(role="tool", id="result-" + "-".join(call_ids), parts=[
        ToolResultPart(tool_call_id=i, output="done") for i in call_ids
    ])


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


THREAD = [
    Message.user("weather in Paris?", id="u1"),
    call("c1"),
    result("c1"),
    Message.assistant("sunny", id="a1"),
]


@pytest.mark.parametrize(
    ("messages", "last_n", "budget", "expected"),
    [
        pytest.param(THREAD, 10, None, ["u1", "call-c1", "result-c1", "a1"], id="all"),
        pytest.param(THREAD, 0, None, [], id="last_n=0"),
        pytest.param(THREAD, None, None, ["u1", "call-c1", "result-c1", "a1"], id="last_n=None"),
        pytest.param(THREAD, 2, None, ["a1"], id="count-cut-drops-orphan-result"),
        pytest.param(THREAD, 3, None, ["call-c1", "result-c1", "a1"], id="count-cut-at-boundary"),
        pytest.param(THREAD, 10, 0, [], id="zero-budget"),
        pytest.param(
            THREAD, 10, message_tokens(THREAD[3]) + message_tokens(THREAD[2]), ["a1"],
            id="budget-never-splits-exchange",
        ),
        pytest.param(
            [call("c1", "let me check"), Message.user("hi", id="u2")], 10, None,
            ["call-c1", "u2"], id="dangling-call-keeps-text",
        ),
        pytest.param([call("c1"), Message.user("hi", id="u2")], 10, None, ["u2"],
                     id="dangling-call-only-is-dropped"),
        pytest.param([call("c1"), result("c1", "c9")], 10, None, ["call-c1", "result-c1-c9"],
                     id="orphan-result-among-paired"),
    ],
)
def test_window_examples(
    messages: list[Message], last_n: int | None, budget: int | None, expected: list[str]
) -> None:
    got = window(messages, last_n=last_n, max_tokens=budget)
    assert ids(got) == expected
    assert tool_ids(got, ToolCallPart) == tool_ids(got, ToolResultPart)


def test_unpaired_parts_are_removed_from_a_copy() -> None:
    message = Message(role="assistant", parts=[
        TextPart(text="checking"), ToolCallPart(tool_call_id="lost", name="lookup"),
    ])
    (got,) = window([message], last_n=5)
    assert [p.type for p in got.parts] == ["text"]
    assert [p.type for p in message.parts] == ["text", "tool-call"]
