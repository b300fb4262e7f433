"""Tests of the Anthropic Messages converter (memvault.formats.anthropic), checked against the
official ``anthropic`` package's ``MessageParam`` type."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import MessageParam
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from memvault.errors import ValidationError
from memvault.formats import from_anthropic, to_anthropic
from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
)

from .support import assert_refused, core, json_values, text_strategy

MESSAGES = TypeAdapter(list[MessageParam])


def valid(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` after checking them against the anthropic package's MessageParam."""
    MESSAGES.validate_python(items, strict=False)
    return items


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "A cat, probably.", "signature": "EqQBCgIYAhIM"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "classify", "input": {"image": 1, "top": [1, 2.5]}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "cat (0.97)"},
        ],
    },
    {"role": "assistant", "content": "A cat."},
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "is_error": True,
                "content": [{"type": "text", "text": "timeout"}],
            },
            {"type": "text", "text": "and a dog?"},
        ],
    },
]


def test_a_conversation_reads_as_parts_and_writes_back_exactly() -> None:
    messages = from_anthropic(valid(CONVERSATION))
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert messages[1].parts[1] == ImagePart(url="data:image/png;base64,iVBORw0K", media_type="image/png")
    assert messages[1].parts[2] == ImagePart(url="https://example.com/cat.jpg")
    assert messages[2].parts[0] == ReasoningPart(text="A cat, probably.", signature="EqQBCgIYAhIM")
    assert messages[2].parts[1] == DataPart(
        name="anthropic:redacted_thinking", data={"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
    )
    assert messages[2].tool_calls == [
        ToolCallPart(tool_call_id="toolu_1", name="classify", args={"image": 1, "top": [1, 2.5]})
    ]
    assert messages[3].parts == [ToolResultPart(tool_call_id="toolu_1", output="cat (0.97)", name="classify")]
    assert messages[5].tool_results[0].is_error is True
    assert messages[1].text == "What is in this picture?"
    assert valid(to_anthropic(messages)) == CONVERSATION


def test_memvault_messages_become_valid_anthropic_messages() -> None:
    messages = [
        Message.system("Be brief."),
        Message(
            role="user",
            parts=[
                TextPart(text="read this"),
                FilePart(
                    url="data:application/pdf;base64,JVBERi0", media_type="application/pdf", name="a.pdf"
                ),
                ImagePart(url="https://x.example/i.png", detail="high"),
            ],
        ),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(text="another provider's reasoning"),  # no signature: left out
                TextPart(text="Checking."),
                ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Oslo"}),
                ToolResultPart(tool_call_id="c1", output={"sky": "snow"}),  # the runtime's merged turn
                TextPart(text="Snow."),
            ],
        ),
        Message(role="tool", parts=[ToolResultPart(tool_call_id="c2", output=None)]),
        Message(role="assistant", parts=[ReasoningPart(text="only unsigned")]),
        Message(role="user", parts=[UnknownPart(raw={"type": "hologram"})]),
    ]
    wire = valid(to_anthropic(messages))
    assert wire == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "read this"},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0"},
                },
                {"type": "image", "source": {"type": "url", "url": "https://x.example/i.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": '{"sky":"snow"}'}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Snow."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2"}]},
    ]


def test_an_edited_part_is_written_fresh_not_with_its_recorded_fields() -> None:
    [message] = from_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "old", "citations": None, "cache_control": {"type": "ephemeral"}}
                ],
            }
        ]
    )
    edited = message.model_copy(update={"parts": [TextPart(text="new")]})
    assert to_anthropic([edited]) == [{"role": "user", "content": "new"}]
    assert to_anthropic([message])[0]["content"][0]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        ({"role": "user", "content": "hi"}, "wrap one in a list"),
        ([{"role": "tool", "content": "x"}], "role 'tool' is not supported"),
        ([{"role": "user"}], "missing 'content'"),
        ([{"role": "user", "content": "x", "name": "bob"}], "unsupported field(s) 'name'"),
        ([{"role": "user", "content": 5}], "content must be a string or a list"),
        ([{"role": "user", "content": ["hi"]}], "content[0] must be a mapping"),
        ([{"role": "user", "content": [{"type": "text"}]}], "content[0] is missing 'text'"),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": "{}"}]}],
            "input must be a mapping",
        ),
        (
            [{"role": "system", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}],
            "text blocks only",
        ),
        ([{"role": "user", "content": [{"type": "thinking", "thinking": "x"}]}], "missing 'signature'"),
        ([{"role": "user", "content": "bad \x00"}], "NUL"),
        (
            [{"role": "user", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}]}],
            "belongs in an assistant message",
        ),
        (
            [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "c"}]}],
            "belongs in a user message",
        ),
    ],
)
def test_from_anthropic_rejects_bad_input(items: Any, needle: str) -> None:
    assert_refused(from_anthropic, items, needle)


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        (Message.user("hi"), "wrap one in a list"),
        ([{"role": "user", "content": "hi"}], "is a dict, not a Message"),
        ([Message(role="user", parts=[DataPart(data={"k": 1})])], "data parts other than its own"),
        ([Message(role="user", parts=[ToolCallPart(tool_call_id="c", name="f")])], "assistant messages"),
        (
            [Message(role="assistant", parts=[ToolCallPart(tool_call_id="c", name="f", args="x")])],
            "not a JSON object",
        ),
        ([Message(role="system", parts=[ImagePart(url="u")])], "text only"),
        ([Message(role="tool", parts=[TextPart(text="x")])], "tool-result parts only"),
        ([Message(role="system", parts=[ToolResultPart(tool_call_id="c")])], "system message"),
        ([Message(role="user", parts=[], metadata={"anthropic": 1})], 'metadata["anthropic"] must be a dict'),
    ],
)
def test_to_anthropic_rejects_what_anthropic_cannot_hold(messages: Any, needle: str) -> None:
    assert_refused(to_anthropic, messages, needle)


# ---------------------------------------------------------------- property tests

TEXT = text_strategy(max_size=10)
IDS = TEXT.filter(lambda s: bool(s.strip()))
JSON_VALUES = json_values(TEXT)
CACHE = {"cache_control": st.just({"type": "ephemeral"})}
TEXT_BLOCK = st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}, optional=CACHE)
MEDIA = st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"])
SOURCE = st.one_of(
    st.fixed_dictionaries({"type": st.just("base64"), "media_type": MEDIA, "data": TEXT}),
    st.fixed_dictionaries({"type": st.just("url"), "url": TEXT | TEXT.map("data:image/png;base64,".__add__)}),
    st.fixed_dictionaries({"type": st.just("file"), "file_id": TEXT}),
)
IMAGE_BLOCK = st.fixed_dictionaries({"type": st.just("image"), "source": SOURCE}, optional=CACHE)
DOCUMENT_BLOCK = st.fixed_dictionaries(
    {
        "type": st.just("document"),
        "source": st.one_of(
            st.fixed_dictionaries(
                {"type": st.just("base64"), "media_type": st.just("application/pdf"), "data": TEXT}
            ),
            st.fixed_dictionaries({"type": st.just("url"), "url": TEXT}),
            st.fixed_dictionaries(
                {"type": st.just("text"), "media_type": st.just("text/plain"), "data": TEXT}
            ),
        ),
    },
    optional={"title": TEXT, **CACHE},
)
TOOL_USE = st.fixed_dictionaries(
    {
        "type": st.just("tool_use"),
        "id": IDS,
        "name": TEXT,
        "input": st.dictionaries(TEXT, JSON_VALUES, max_size=3),
    },
    optional=CACHE,
)
TOOL_RESULT = st.fixed_dictionaries(
    {"type": st.just("tool_result"), "tool_use_id": IDS},
    optional={
        "content": TEXT | st.lists(TEXT_BLOCK | IMAGE_BLOCK, max_size=2),
        "is_error": st.booleans(),
        **CACHE,
    },
)
THINKING = st.fixed_dictionaries({"type": st.just("thinking"), "thinking": TEXT, "signature": TEXT})
REDACTED = st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": TEXT})

ANTHROPIC_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.just("system"), "content": TEXT | st.lists(TEXT_BLOCK, max_size=3)}),
    st.fixed_dictionaries(
        {
            "role": st.just("user"),
            "content": TEXT | st.lists(TEXT_BLOCK | IMAGE_BLOCK | DOCUMENT_BLOCK | TOOL_RESULT, max_size=4),
        }
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": TEXT | st.lists(TEXT_BLOCK | THINKING | REDACTED | TOOL_USE, max_size=4),
        }
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ANTHROPIC_MESSAGE, max_size=6))
def test_property_anthropic_round_trips_exactly(items: list[dict[str, Any]]) -> None:
    messages = from_anthropic(items)
    assert valid(to_anthropic(messages)) == items
    assert [core(m) for m in from_anthropic(to_anthropic(messages))] == [core(m) for m in messages]


PARTS = st.one_of(
    st.builds(TextPart, text=TEXT),
    st.builds(ImagePart, url=TEXT, detail=st.none() | st.sampled_from(["auto", "low", "high"])),
    st.builds(ToolCallPart, tool_call_id=IDS, name=TEXT, args=st.dictionaries(TEXT, JSON_VALUES, max_size=2)),
    st.builds(ToolResultPart, tool_call_id=IDS, output=JSON_VALUES, is_error=st.booleans()),
    st.builds(ReasoningPart, text=TEXT, signature=st.none() | TEXT),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.builds(Message, role=st.sampled_from(["user", "assistant"]), parts=st.lists(PARTS, max_size=4)),
        max_size=4,
    )
)
def test_property_memvault_messages_write_valid_anthropic(messages: list[Message]) -> None:
    misplaced = any(m.role == "user" and m.tool_calls for m in messages)
    if misplaced:
        with pytest.raises(ValidationError, match="assistant messages"):
            to_anthropic(messages)
        return
    wire = valid(to_anthropic(messages))
    back = from_anthropic(wire)
    texts = [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]
    assert [p.text for m in back for p in m.parts if isinstance(p, TextPart)] == texts


def test_a_result_read_without_its_call_keeps_its_recorded_fields() -> None:
    wire = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": False}]},
    ]
    _, result = from_anthropic(wire)
    assert result.tool_results[0].name == "f"
    assert to_anthropic([result]) == wire[1:]  # a window holding the result alone
    assert to_anthropic(from_anthropic(wire[1:])) == wire[1:]
