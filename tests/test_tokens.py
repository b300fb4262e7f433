"""The offline token estimate and what a message costs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memvault.tokens import MESSAGE_OVERHEAD, estimate_tokens, message_tokens

CJK_RANGES = [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0xAC00, 0xD7AF), (0x3400, 0x4DBF)]
cjk_text = st.lists(
    st.one_of(*(st.integers(lo, hi) for lo, hi in CJK_RANGES)).map(chr), min_size=1, max_size=50
).map("".join)
text = st.text(st.characters(codec="utf-8"), max_size=200)


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("", 0),
        ("   \n\t ", 0),
        ("hello", 1),
        ("hello world", 2),
        ("a" * 8, 1),
        ("a" * 9, 2),  # long words count as several tokens
        ("a" * 80, 10),
        ("1234567", 3),  # digits in runs of up to three
        ("x = f(y);", 7),  # every symbol is a token
        ("你好世界", 4),  # one per CJK character
        ("こんにちは", 5),
        ("안녕하세요", 5),
    ],
)
def test_estimate_examples(sample: str, expected: int) -> None:
    assert estimate_tokens(sample) == expected


@given(text, text)
def test_estimate_grows_with_appended_text(head: str, tail: str) -> None:
    assert estimate_tokens(head + tail) >= estimate_tokens(head)


@given(text, text)
def test_estimate_adds_over_whitespace(left: str, right: str) -> None:
    assert estimate_tokens(f"{left} {right}") == estimate_tokens(left) + estimate_tokens(right)


@given(text)
def test_estimate_is_bounded_by_characters(sample: str) -> None:
    tokens = estimate_tokens(sample)
    assert 0 <= tokens <= len(sample)
    assert (tokens == 0) == all(c.isspace() for c in sample)


@given(cjk_text)
def test_cjk_counts_one_per_character(sample: str) -> None:
    assert estimate_tokens(sample) == len(sample)


def test_cjk_counts_far_more_than_chars_over_four() -> None:
    sample = "我喜欢喝绿茶因为它很健康" * 10
    assert estimate_tokens(sample) == len(sample)


def counted(message: Message) -> int:
    return message_tokens(message, len)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([], 0),
        ([TextPart(text="hello")], 5),
        ([ReasoningPart(text="think")], 5),
        ([TextPart(text="ab"), TextPart(text="cd")], 4),
        (
            [ToolCallPart(tool_call_id="c1", name="lookup", args={"q": "é"})],
            len("lookup") + len(json.dumps({"q": "é"}, ensure_ascii=False)),
        ),
        ([ToolCallPart(tool_call_id="c1", name="now")], len("now") + len("{}")),
        ([ToolResultPart(tool_call_id="c1", output="sunny")], len("sunny")),
        ([ToolResultPart(tool_call_id="c1", output={"t": 21})], len(json.dumps({"t": 21}))),
        ([ToolResultPart(tool_call_id="c1")], len("null")),
    ],
)
def test_message_tokens_counts_text_reasoning_and_tool_parts(parts: list, expected: int) -> None:
    assert counted(Message(role="assistant", parts=parts)) == MESSAGE_OVERHEAD + expected


def test_message_tokens_uses_the_default_estimate() -> None:
    message = Message(
        role="assistant",
        parts=[
            TextPart(text="checking the weather"),
            ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Paris"}),
        ],
    )
    expected = (
        MESSAGE_OVERHEAD
        + estimate_tokens("checking the weather")
        + estimate_tokens("weather")
        + estimate_tokens('{"city": "Paris"}')
    )
    assert message_tokens(message) == expected


@pytest.mark.parametrize(
    "part",
    [
        ToolCallPart(tool_call_id="c1", name="search", args={"query": "green tea"}),
        ToolResultPart(tool_call_id="c1", output="a long tool result " * 20),
        ToolResultPart(tool_call_id="c1", output={"rows": [1, 2, 3]}),
    ],
)
def test_tool_parts_cost_tokens(part: ToolCallPart | ToolResultPart) -> None:
    base = Message.assistant("ok")
    with_tool = base.model_copy(update={"parts": [*base.parts, part]})
    assert message_tokens(with_tool) > message_tokens(base)

