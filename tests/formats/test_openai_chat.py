"""Tests of the OpenAI Chat Completions converter (memvault.formats.openai_chat)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.errors import ValidationError
from memvault.formats import from_openai, to_openai
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
    UnreadablePart,
)

from .support import assert_refused, core, json_values, text_strategy


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# A realistic agent transcript: developer prompt, names, an image, a file, parallel tool calls
# (one with spaced JSON, one with invalid JSON), list-shaped tool output, a refusal, reasoning.
TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "developer", "content": "You are a travel agent. Answer in French."},
    {"role": "system", "content": [{"type": "text", "text": "Today is 2025-03-01."}]},
    {"role": "user", "name": "alice", "content": "Book me a flight to Lyon, and what is this?"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "this picture"},
            {"type": "image_url", "image_url": {"url": "https://img.example/a.png", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
            {"type": "file", "file": {"file_id": "file-abc123"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Need flights and weather; call both at once.",
        "refusal": None,
        "tool_calls": [
            call("call_1", "search_flights", '{"to":"LYS","date":"2025-03-02"}'),
            call("call_2", "weather", '{"city": "Lyon", "unit": "C"}'),
            call("call_3", "broken", '{"city": "Lyon",'),
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '[{"flight":"AF7642","price":89}]'},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "12°C"}]},
    {"role": "tool", "tool_call_id": "call_3", "content": "error: invalid JSON arguments"},
    {"role": "assistant", "tool_calls": [call("call_4", "book", '{"flight":"AF7642"}')]},
    {"role": "tool", "tool_call_id": "call_4", "name": "book", "content": ""},
    {"role": "assistant", "content": "Vol AF7642 réservé. Il fait 12°C.", "name": "agent"},
    {"role": "user", "content": "Now book a hotel with my card 4111..."},
    {"role": "assistant", "content": None, "refusal": "I can't handle card numbers."},
    {"role": "assistant", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]},
]


def test_transcript_round_trips_exactly() -> None:
    messages = from_openai(TRANSCRIPT)
    assert len(messages) == len(TRANSCRIPT)
    assert to_openai(messages) == TRANSCRIPT


def test_transcript_maps_to_parts() -> None:
    m = from_openai(TRANSCRIPT)
    assert m[0].role == "system"
    assert m[0].metadata == {"openai": {"role": "developer"}}
    assert m[1].metadata == {"openai": {"content_format": "parts"}}
    assert m[2].metadata == {"openai": {"name": "alice"}}
    assert m[2].text.startswith("Book")
    assert m[3].parts[1] == ImagePart(url="https://img.example/a.png", detail="high")
    assert m[3].parts[3] == FilePart(url="data:application/pdf;base64,JVBE", name="a.pdf")
    assert m[3].parts[4] == FilePart(url="openai-file:file-abc123")
    assert m[3].metadata == {}
    assistant = m[4]
    assert assistant.parts[0] == ReasoningPart(text="Need flights and weather; call both at once.")
    assert [c.args for c in assistant.tool_calls] == [
        {"to": "LYS", "date": "2025-03-02"},
        {"city": "Lyon", "unit": "C"},
        '{"city": "Lyon",',
    ]
    assert assistant.metadata == {
        "openai": {"raw_arguments": {"call_2": '{"city": "Lyon", "unit": "C"}'}, "refusal": None}
    }
    assert m[5].parts == [
        ToolResultPart(
            tool_call_id="call_1", output='[{"flight":"AF7642","price":89}]', name="search_flights"
        )
    ]
    assert m[6].tool_results[0].output == "12°C"
    assert m[8].metadata == {"openai": {"content_format": "omitted"}}
    assert m[9].tool_results[0].name == "book"
    assert m[9].metadata == {"openai": {"name": "book"}}
    assert m[12].parts == []
    assert m[12].metadata["openai"]["refusal"].startswith("I can't")
    assert m[13].metadata == {}


def test_messages_round_trip_through_openai() -> None:
    messages = [
        Message.system("Be brief."),
        Message(role="system", parts=[TextPart(text="dev")], metadata={"openai": {"role": "developer"}}),
        Message(
            role="user",
            parts=[
                TextPart(text="look"),
                ImagePart(url="https://x.example/i.png", detail="auto"),
                FilePart(url="data:text/plain;base64,aGk=", name="hi.txt"),
            ],
            metadata={"openai": {"name": "bob"}},
        ),
        Message(
            role="assistant",
            parts=[
                ReasoningPart(text="hmm"),
                TextPart(text="Calling."),
                ToolCallPart(tool_call_id="a", name="f", args={"x": [1, 2.5, None], "é": "ü"}),
                ToolCallPart(tool_call_id="b", name="g", args="not json"),
                ToolCallPart(tool_call_id="c", name="h"),
            ],
        ),
        Message(role="tool", parts=[ToolResultPart(tool_call_id="a", output="ok", name="f")]),
        Message(role="tool", parts=[ToolResultPart(tool_call_id="b", output="", name="g")]),
        Message(role="assistant", parts=[]),
        Message(role="user", parts=[]),
        Message(role="user", parts=[TextPart(text="a"), TextPart(text="b")]),
    ]
    wire = to_openai(messages)
    assert wire[3]["tool_calls"][0]["function"]["arguments"] == '{"x":[1,2.5,null],"é":"ü"}'
    assert wire[3]["tool_calls"][2]["function"]["arguments"] == "{}"
    assert wire[6] == {"role": "assistant", "content": None}
    assert wire[7] == {"role": "user", "content": []}
    back = from_openai(wire)
    assert [core(m) for m in back] == [core(m) for m in messages]


def test_what_openai_cannot_carry_is_dropped_as_documented() -> None:
    original = Message(
        id="m1",
        role="assistant",
        parts=[
            ReasoningPart(text="one", signature="sig"),
            ReasoningPart(text="two"),
            ImagePart(url="https://x.example/i.png", media_type="image/png"),
        ],
        thread_id="t",
        resource_id="r",
        created_at=datetime(2020, 1, 1, tzinfo=UTC),
        seq=7,
        metadata={"app": 1, "openai": {"name": "bot"}},
    )
    [back] = from_openai(to_openai([original]))
    assert back.id != "m1"
    assert back.seq is None
    assert back.thread_id is None
    assert back.created_at.year > 2020
    assert back.metadata == {"openai": {"name": "bot"}}
    assert back.parts == [
        ReasoningPart(text="one\ntwo"),
        ImagePart(url="https://x.example/i.png"),
    ]


def test_tool_results_split_and_flatten() -> None:
    message = Message(
        role="tool",
        parts=[
            ToolResultPart(tool_call_id="a", output={"rows": [1, 2]}, is_error=True, name="q"),
            ToolResultPart(tool_call_id="b", output=None),
        ],
    )
    wire = to_openai([message])
    assert wire == [
        {"role": "tool", "tool_call_id": "a", "content": '{"rows":[1,2]}'},
        {"role": "tool", "tool_call_id": "b", "content": "null"},
    ]
    a, b = from_openai(wire)
    assert a.parts == [ToolResultPart(tool_call_id="a", output='{"rows":[1,2]}')]
    assert b.parts == [ToolResultPart(tool_call_id="b", output="null")]


def test_tool_results_in_a_user_message_come_first() -> None:
    message = Message(
        role="user",
        parts=[TextPart(text="and then?"), ToolResultPart(tool_call_id="a", output="42")],
    )
    assert to_openai([message]) == [
        {"role": "tool", "tool_call_id": "a", "content": "42"},
        {"role": "user", "content": "and then?"},
    ]
    only = Message(role="user", parts=[ToolResultPart(tool_call_id="a", output="42")])
    assert to_openai([only]) == [{"role": "tool", "tool_call_id": "a", "content": "42"}]


def test_tool_list_content_shapes_round_trip() -> None:
    for texts in ([], ["x"], ["x", "y"]):
        wire = [
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": t} for t in texts]}
        ]
        [message] = from_openai(wire)
        assert message.tool_results[0].output == (texts[0] if len(texts) == 1 else texts)
        assert to_openai([message]) == wire


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a": 1}',
        '{"a":1,"a":2}',
        '{"a":"\\u00e9"}',
        '{"a": 1e5}',
        '{"a":"\\u0000"}',
        '{"a":"\\ud800"}',
        '{"a": NaN}',
        "[1, 2]",
        '"text"',
        "",
        "null",
        "{",
    ],
)
def test_arguments_text_is_kept_verbatim(arguments: str) -> None:
    wire = [{"role": "assistant", "content": None, "tool_calls": [call("c", "f", arguments)]}]
    [message] = from_openai(wire)
    assert isinstance(message.tool_calls[0].args, dict | str)
    assert to_openai([message]) == wire


def test_edited_args_win_over_the_raw_text() -> None:
    wire = [{"role": "assistant", "tool_calls": [call("c", "f", '{"a": 1}')]}]
    [message] = from_openai(wire)
    for args, expected in (({"a": 2}, '{"a":2}'), ({"a": True}, '{"a":true}'), ({"a": 1}, '{"a": 1}')):
        edited = message.model_copy(update={"parts": [ToolCallPart(tool_call_id="c", name="f", args=args)]})
        assert to_openai([edited])[0]["tool_calls"][0]["function"]["arguments"] == expected


def test_response_message_dump_is_accepted() -> None:
    dumped = {
        "role": "assistant",
        "content": "Hi",
        "refusal": None,
        "annotations": [],
        "audio": None,
        "function_call": None,
        "tool_calls": None,
    }
    [message] = from_openai([dumped])
    assert message.text == "Hi"
    assert to_openai([message]) == [dumped]
    empty = {"role": "assistant", "content": "Hi", "tool_calls": []}
    assert to_openai(from_openai([empty])) == [empty]


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        ({"role": "user", "content": "hi"}, "wrap one message in a list"),
        (["hi"], "OpenAI message [0]: must be a mapping"),
        ([{"content": "hi"}], "role None is not supported"),
        ([{"role": "function", "name": "f", "content": "x"}], "role 'function'"),
        (
            [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}],
            "[1]: a tool message is missing 'tool_call_id'",
        ),
        ([{"role": "tool", "tool_call_id": 5, "content": "x"}], "tool_call_id must be a string"),
        ([{"role": "tool", "tool_call_id": "", "content": "x"}], "non-empty"),
        ([{"role": "tool", "tool_call_id": "c", "content": None}], "content must be a string or a list"),
        ([{"role": "user", "content": None}], "needs 'content'"),
        ([{"role": "user"}], "needs 'content'"),
        ([{"role": "user", "content": "x", "tool_call": []}], "unsupported field(s) 'tool_call'"),
        ([{"role": "user", "content": "x", "name": 3}], "name must be a string"),
        ([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}], "'input_audio'"),
        ([{"role": "user", "content": ["hi"]}], "content part type None"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "u", "detail": "max"}}],
                }
            ],
            "detail",
        ),
        (
            [
                {
                    "role": "tool",
                    "tool_call_id": "c",
                    "content": [{"type": "image_url", "image_url": {"url": "u"}}],
                }
            ],
            "'image_url' is not allowed",
        ),
        (
            [{"role": "user", "content": [{"type": "file", "file": {"file_data": "JVBE"}}]}],
            "must be a data: URL",
        ),
        ([{"role": "user", "content": [{"type": "file", "file": {}}]}], "exactly one of"),
        ([{"role": "assistant", "tool_calls": "call_1"}], "tool_calls must be a list"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "function": {}}]}],
            "only 'function'",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}],
            "tool_calls[0] is missing 'function'",
        ),
        (
            [{"role": "assistant", "tool_calls": [call("c", "f", {"a": 1})]}],
            "arguments (a JSON text) must be a string, got dict",
        ),
        ([{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}], "use tool_calls"),
        (
            [{"role": "assistant", "content": "x", "reasoning_content": None}],
            "reasoning_content must be a string",
        ),
        ([{"role": "user", "content": "bad \x00"}], "NUL"),
    ],
)
def test_from_openai_rejects_bad_input(items: Any, needle: str) -> None:
    assert_refused(from_openai, items, needle)


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        (Message.user("hi"), "wrap one Message in a list"),
        ([{"role": "user", "content": "hi"}], "is a dict, not a Message"),
        ([Message(role="user", parts=[DataPart(data={"k": 1})])], "cannot carry data parts"),
        (
            [Message(role="user", parts=[ToolCallPart(tool_call_id="c", name="f")])],
            "'tool-call' parts in user",
        ),
        ([Message(role="system", parts=[ReasoningPart(text="r")])], "'reasoning' parts in system"),
        (
            [Message(role="system", parts=[ToolResultPart(tool_call_id="c")])],
            "tool results cannot be in a system",
        ),
        ([Message(role="tool", parts=[TextPart(text="x")])], "tool-result parts only"),
        ([Message(role="tool", parts=[])], "tool-result parts only"),
        ([Message(role="user", parts=[FilePart(url="https://x.example/a.pdf")])], "download or upload"),
        ([Message(role="user", parts=[], metadata={"openai": "x"})], 'metadata["openai"] must be a dict'),
    ],
)
def test_to_openai_rejects_what_openai_cannot_hold(messages: Any, needle: str) -> None:
    assert_refused(to_openai, messages, needle)


def test_an_assistant_message_holding_its_results_becomes_the_openai_sequence() -> None:
    """The runtime buffer keeps each result right after its call in one assistant message."""
    merged = Message(role="assistant", parts=[
        TextPart(text="Let me check."),
        ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Oslo"}),
        ToolCallPart(tool_call_id="c2", name="weather", args={"city": "Rome"}),
        ToolResultPart(tool_call_id="c1", output="snow"),
        ToolResultPart(tool_call_id="c2", output={"sky": "clear"}),
        TextPart(text="Snow in Oslo, clear in Rome."),
    ])
    assert to_openai([merged]) == [
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}},
            {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Rome"}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "snow"},
        {"role": "tool", "tool_call_id": "c2", "content": '{"sky":"clear"}'},
        {"role": "assistant", "content": "Snow in Oslo, clear in Rome."},
    ]


def test_to_openai_error_names_the_message() -> None:
    bad = Message(id="m2", role="user", parts=[DataPart(data=1)])
    with pytest.raises(ValidationError, match=r"message \[1\] \(id 'm2'\)"):
        to_openai([Message.user("ok"), bad])


# ---------------------------------------------------------------- property tests

TEXT = text_strategy(max_size=12)
IDS = TEXT.filter(lambda s: bool(s.strip()))
JSON_VALUES = json_values(TEXT)
ARGUMENTS = st.one_of(
    st.dictionaries(TEXT, JSON_VALUES, max_size=4).map(
        lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False)
    ),
    st.dictionaries(TEXT, JSON_VALUES, max_size=4).map(json.dumps),
    JSON_VALUES.map(json.dumps),
    TEXT,
)
TEXT_PART = st.fixed_dictionaries({"type": st.just("text"), "text": TEXT})
IMAGE_PART = st.fixed_dictionaries(
    {
        "type": st.just("image_url"),
        "image_url": st.fixed_dictionaries(
            {"url": TEXT}, optional={"detail": st.sampled_from(["auto", "low", "high"])}
        ),
    }
)
FILE_PART = st.fixed_dictionaries(
    {
        "type": st.just("file"),
        "file": st.one_of(
            st.fixed_dictionaries({"file_data": TEXT.map("data:".__add__)}, optional={"filename": TEXT}),
            st.fixed_dictionaries({"file_id": TEXT}, optional={"filename": TEXT}),
        ),
    }
)
TOOL_CALL = st.builds(call, IDS, TEXT, ARGUMENTS)
TEXT_CONTENT = TEXT | st.lists(TEXT_PART, max_size=3)

OPENAI_MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer"]), "content": TEXT_CONTENT},
        optional={"name": TEXT},
    ),
    st.fixed_dictionaries(
        {"role": st.just("user"), "content": TEXT | st.lists(TEXT_PART | IMAGE_PART | FILE_PART, max_size=4)},
        optional={"name": TEXT},
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant")},
        optional={
            "content": st.none() | TEXT_CONTENT,
            "name": TEXT,
            "reasoning_content": TEXT,
            "refusal": st.none() | TEXT,
            "annotations": st.just([]),
            "tool_calls": st.none() | st.lists(TOOL_CALL, max_size=4, unique_by=lambda c: c["id"]),
        },
    ),
    st.fixed_dictionaries(
        {"role": st.just("tool"), "tool_call_id": IDS, "content": TEXT_CONTENT},
        optional={"name": TEXT},
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(OPENAI_MESSAGE, max_size=6))
def test_property_openai_round_trips_exactly(items: list[dict[str, Any]]) -> None:
    messages = from_openai(items)
    assert to_openai(messages) == items
    assert [core(m) for m in from_openai(to_openai(messages))] == [core(m) for m in messages]


# parts this memvault cannot read


def test_unknown_and_unreadable_parts_are_left_out() -> None:
    newer = UnknownPart(raw={"type": "hologram", "v": 2, "frames": [1, 2]})
    mixed = Message(role="user", parts=[TextPart(text="look"), newer])
    only_newer = Message(role="assistant", parts=[newer])
    placeholder = Message(role="tool", parts=[UnreadablePart(reason="parts is not JSON", raw={"parts": "["})])
    after = Message.assistant("done")
    assert to_openai([mixed, only_newer, placeholder, after]) == [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "done"},
    ]
    assert mixed.parts[1] is newer  # the message itself is not changed
