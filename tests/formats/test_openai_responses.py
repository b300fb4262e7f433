"""Tests of the OpenAI Responses converter (memvault.formats.openai_responses), checked against
the official ``openai`` package's ``ResponseInputItemParam`` type."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from memvault.errors import ValidationError
from memvault.formats import from_responses, to_responses
from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

from .support import assert_refused, core, json_values, text_strategy

ITEMS = TypeAdapter(list[ResponseInputItemParam])


def valid(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` after checking them against the openai package's ResponseInputItemParam."""
    ITEMS.validate_python(items)
    return items


CONVERSATION: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Weather in Oslo? See the map."},
            {"type": "input_image", "detail": "high", "image_url": "https://example.com/map.png"},
            {"type": "input_file", "file_id": "file-123", "filename": "notes.pdf"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need the tool."}],
        "encrypted_content": "gAAAA",
        "status": "completed",
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Oslo"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "snow"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Snow in Oslo.", "annotations": [], "logprobs": []}],
    },
    {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "I cannot share that."}],
    },
    {"type": "item_reference", "id": "msg_0"},
]


def test_a_conversation_reads_as_parts_and_writes_back_exactly() -> None:
    messages = from_responses(valid(CONVERSATION))
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "assistant",
    ]
    assert messages[1].parts[1:] == [
        ImagePart(url="https://example.com/map.png", detail="high"),
        FilePart(url="openai-file:file-123", name="notes.pdf"),
    ]
    assert messages[2].parts == [ReasoningPart(text="Need the tool.")]
    assert messages[3].tool_calls == [
        ToolCallPart(tool_call_id="call_1", name="weather", args={"city": "Oslo"})
    ]
    assert messages[4].parts == [ToolResultPart(tool_call_id="call_1", output="snow", name="weather")]
    assert messages[5].text == "Snow in Oslo."
    assert messages[6].text == "I cannot share that."
    assert messages[7].parts == [
        DataPart(name="openai:item_reference", data={"type": "item_reference", "id": "msg_0"})
    ]
    assert valid(to_responses(messages)) == CONVERSATION


def test_memvault_messages_become_valid_items() -> None:
    messages = [
        Message.system("Be brief."),
        Message(role="user", parts=[TextPart(text="hi"), FilePart(url="data:application/pdf;base64,JVB")]),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(text="not from Responses", signature="s"),  # no item id: left out
                TextPart(text="Checking."),
                ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Oslo"}),
                ToolResultPart(tool_call_id="c1", output={"sky": "snow"}, is_error=True),
                TextPart(text="Snow."),
            ],
        ),
        Message(role="assistant", parts=[ReasoningPart(text="only reasoning")]),
    ]
    assert valid(to_responses(messages)) == [
        {"type": "message", "role": "system", "content": "Be brief."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "hi"},
                {"type": "input_file", "file_data": "data:application/pdf;base64,JVB"},
            ],
        },
        {"type": "message", "role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "c1", "output": '{"sky":"snow"}'},
        {"type": "message", "role": "assistant", "content": "Snow."},
    ]


def test_edited_arguments_win_over_the_recorded_text() -> None:
    [message] = from_responses(
        [{"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"a": 1}'}]
    )
    assert to_responses([message])[0]["arguments"] == '{"a": 1}'
    edited = message.model_copy(update={"parts": [ToolCallPart(tool_call_id="c", name="f", args={"a": 2})]})
    assert to_responses([edited])[0]["arguments"] == '{"a":2}'


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        ({"role": "user", "content": "hi"}, "wrap one in a list"),
        (["hi"], "[0]: an item must be a mapping"),
        ([{"role": "tool", "content": "x"}], "role 'tool' is not supported"),
        ([{"type": "function_call", "call_id": "c", "name": "f"}], "missing 'arguments'"),
        (
            [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}],
            "arguments (a JSON text)",
        ),
        ([{"type": "function_call_output", "output": "x"}], "missing 'call_id'"),
        ([{"type": "reasoning", "id": "r"}], "missing 'summary'"),
        ([{"role": "user", "content": [{"type": "input_audio"}]}], "'input_audio' is not supported"),
        ([{"role": "user", "content": [{"type": "input_image", "detail": "auto"}]}], "needs one of"),
        ([{"role": "user", "content": "bad \x00"}], "NUL"),
        (
            [{"role": "assistant", "content": [{"type": "input_image", "detail": "auto", "image_url": "u"}]}],
            "an assistant message holds text only",
        ),
    ],
)
def test_from_responses_rejects_bad_input(items: Any, needle: str) -> None:
    assert_refused(from_responses, items, needle)


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        (Message.user("hi"), "wrap one in a list"),
        ([Message(role="user", parts=[DataPart(data={"k": 1})])], "data parts other than its own"),
        ([Message(role="user", parts=[ToolCallPart(tool_call_id="c", name="f")])], "assistant messages"),
        ([Message(role="assistant", parts=[ImagePart(url="u")])], "text only"),
        ([Message(role="tool", parts=[TextPart(text="x")])], "tool-result parts only"),
        ([Message(role="user", parts=[], metadata={"openai_responses": []})], "must be a dict"),
    ],
)
def test_to_responses_rejects_what_it_cannot_hold(messages: Any, needle: str) -> None:
    assert_refused(to_responses, messages, needle)


# ---------------------------------------------------------------- property tests

TEXT = text_strategy(max_size=10)
IDS = TEXT.filter(lambda s: bool(s.strip()))
JSON_VALUES = json_values(TEXT)
ARGUMENTS = st.one_of(
    st.dictionaries(TEXT, JSON_VALUES, max_size=3).map(lambda d: json.dumps(d, separators=(",", ":"))),
    st.dictionaries(TEXT, JSON_VALUES, max_size=3).map(json.dumps),
    TEXT,
)
STATUS = st.sampled_from(["in_progress", "completed", "incomplete"])
INPUT_TEXT = st.fixed_dictionaries({"type": st.just("input_text"), "text": TEXT})
INPUT_IMAGE = st.fixed_dictionaries(
    {"type": st.just("input_image"), "detail": st.sampled_from(["auto", "low", "high", "original"])},
    optional={"image_url": TEXT, "file_id": TEXT},
).filter(lambda b: "image_url" in b or "file_id" in b)
INPUT_FILE = st.one_of(
    st.fixed_dictionaries({"type": st.just("input_file"), "file_data": TEXT}, optional={"filename": TEXT}),
    st.fixed_dictionaries({"type": st.just("input_file"), "file_url": TEXT}, optional={"filename": TEXT}),
    st.fixed_dictionaries({"type": st.just("input_file"), "file_id": TEXT}, optional={"filename": TEXT}),
)
OUTPUT_TEXT = st.fixed_dictionaries(
    {"type": st.just("output_text"), "text": TEXT, "annotations": st.just([])},
    optional={"logprobs": st.just([])},
)
REFUSAL = st.fixed_dictionaries({"type": st.just("refusal"), "refusal": TEXT})
INPUT_CONTENT = TEXT | st.lists(INPUT_TEXT | INPUT_IMAGE | INPUT_FILE, max_size=3)

ITEM = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "system", "developer"]), "content": INPUT_CONTENT},
        optional={"type": st.just("message")},
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": TEXT}, optional={"type": st.just("message")}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("message"),
            "role": st.just("assistant"),
            "id": IDS,
            "status": STATUS,
            "content": st.lists(OUTPUT_TEXT | REFUSAL, max_size=3),
        },
        optional={"phase": st.sampled_from(["commentary", "final_answer"])},
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": IDS, "name": TEXT, "arguments": ARGUMENTS},
        optional={"id": IDS, "status": STATUS},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("function_call_output"),
            "call_id": IDS,
            "output": TEXT | st.lists(INPUT_TEXT | INPUT_IMAGE, max_size=2),
        },
        optional={"id": IDS, "status": STATUS},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("reasoning"),
            "id": IDS,
            "summary": st.lists(
                st.fixed_dictionaries({"type": st.just("summary_text"), "text": TEXT}), max_size=3
            ),
        },
        optional={
            "encrypted_content": st.none() | TEXT,
            "status": STATUS,
            "content": st.lists(
                st.fixed_dictionaries({"type": st.just("reasoning_text"), "text": TEXT}), max_size=2
            ),
        },
    ),
    st.fixed_dictionaries({"type": st.just("item_reference"), "id": IDS}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ITEM, max_size=6))
def test_property_responses_round_trip_exactly(items: list[dict[str, Any]]) -> None:
    messages = from_responses(valid(items))
    assert valid(to_responses(messages)) == items
    assert [core(m) for m in from_responses(to_responses(messages))] == [core(m) for m in messages]


PARTS = st.one_of(
    st.builds(TextPart, text=TEXT),
    st.builds(ImagePart, url=TEXT, detail=st.none() | st.sampled_from(["auto", "low", "high"])),
    st.builds(FilePart, url=TEXT, name=st.none() | TEXT),
    st.builds(
        ToolCallPart, tool_call_id=IDS, name=TEXT, args=st.dictionaries(TEXT, JSON_VALUES, max_size=2) | TEXT
    ),
    st.builds(ToolResultPart, tool_call_id=IDS, output=JSON_VALUES, is_error=st.booleans()),
    st.builds(ReasoningPart, text=TEXT),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.builds(
            Message,
            role=st.sampled_from(["user", "system", "assistant", "tool"]),
            parts=st.lists(PARTS, max_size=4),
        ),
        max_size=4,
    )
)
def test_property_memvault_messages_write_valid_items(messages: list[Message]) -> None:
    try:
        items = to_responses(messages)
    except ValidationError as exc:  # the documented refusals only
        needles = ("belong in assistant messages", "holds text only", "tool-result parts only")
        assert any(n in str(exc) for n in needles), exc  # noqa: PT017
        return
    valid(items)
    texts = [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]
    assert [p.text for m in from_responses(items) for p in m.parts if isinstance(p, TextPart)] == texts
