"""ScriptedModel: answers from a script, records its calls, streams word-sized pieces."""

from __future__ import annotations

from typing import Any

import pytest

from memvault.errors import ConfigurationError, ModelError
from memvault.llm import (
    ChatMessage,
    Finish,
    Model,
    ModelEvent,
    ModelResponse,
    ReasoningDelta,
    ScriptedModel,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallEvent,
    Usage,
)
from memvault.rules.tokens import MESSAGE_OVERHEAD, estimate_tokens

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
CALL = ToolCall("call_1", "get_weather", {"city": "Paris"})


async def collect(
    model: ScriptedModel, messages: list[ChatMessage] = USER, **options: Any
) -> list[ModelEvent]:
    return [event async for event in model.stream(messages, **options)]


async def test_replies_are_used_in_order_and_calls_are_recorded() -> None:
    def from_the_tool_result(messages: list[ChatMessage], tools: list[Tool] | None) -> str:
        return f"It is {messages[-1]['content']} (tools: {tools is not None})."

    model = ScriptedModel(
        ["Let me check.", ModelResponse(tool_calls=(CALL,), finish_reason="tool_calls"), from_the_tool_result]
    )
    first = await model.complete(USER, tools=[TOOL])
    second = await model.complete(USER, tools=[TOOL], max_tokens=10)
    third = await model.complete([*USER, {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}])
    assert (first.text, first.finish_reason, first.model) == ("Let me check.", "stop", "scripted")
    assert second.tool_calls == (CALL,) and second.finish_reason == "tool_calls"
    assert third.text == "It is sunny (tools: False)."
    assert [tools for _, tools in model.calls] == [[TOOL], [TOOL], None]
    assert model.calls[2][0][-1]["content"] == "sunny"


async def test_an_exhausted_script_raises_and_a_cycling_one_starts_over() -> None:
    model = ScriptedModel(["only one"])
    await model.complete(USER)
    with pytest.raises(ModelError, match=r"1 replies and all were used.*cycle=True"):
        await model.complete(USER)
    assert len(model.calls) == 2  # the refused call is recorded too

    cycling = ScriptedModel(["a", "b"], cycle=True)
    assert [(await cycling.complete(USER)).text for _ in range(5)] == ["a", "b", "a", "b", "a"]


async def test_a_single_function_answers_every_call() -> None:
    model = ScriptedModel(lambda messages, tools: f"you said: {messages[-1]['content']}")
    for word in ["one", "two", "three"]:
        assert (await model.complete([{"role": "user", "content": word}])).text == f"you said: {word}"
    assert len(model.calls) == 3


async def test_calls_are_recorded_as_copies() -> None:
    model = ScriptedModel(["ok"])
    messages: list[ChatMessage] = [{"role": "user", "content": "original"}]
    await model.complete(messages)
    messages[0]["content"] = "changed later"
    messages.append({"role": "user", "content": "appended"})
    assert model.calls[0][0] == [{"role": "user", "content": "original"}]


async def test_usage_is_estimated_unless_the_reply_states_it() -> None:
    text = "Paris is sunny, 21 degrees."
    model = ScriptedModel(
        [text, ModelResponse(text="x", usage=Usage(100, 7)), ModelResponse(tool_calls=(CALL,))]
    )
    estimated = (await model.complete(USER)).usage
    assert estimated.input_tokens == MESSAGE_OVERHEAD + estimate_tokens(USER[0]["content"])
    assert estimated.output_tokens == estimate_tokens(text)
    assert (await model.complete(USER)).usage == Usage(100, 7)
    assert (await model.complete(USER)).usage.output_tokens > 0  # tool calls cost tokens too


async def test_stream_yields_word_sized_pieces_then_tool_calls_then_finish() -> None:
    response = ModelResponse(
        text="  Checking the weather\nfor you now. ",
        reasoning="The user wants weather.",
        tool_calls=(CALL, ToolCall("call_2", "get_time", {})),
        finish_reason="tool_calls",
    )
    model = ScriptedModel([response])
    events = await collect(model, tools=[TOOL])
    reasoning = [event for event in events if isinstance(event, ReasoningDelta)]
    texts = [event for event in events if isinstance(event, TextDelta)]
    calls = [event.call for event in events if isinstance(event, ToolCallEvent)]
    assert "".join(event.text for event in reasoning) == response.reasoning
    assert "".join(event.text for event in texts) == response.text
    assert [event.text for event in texts] == [
        "  ",
        "Checking ",
        "the ",
        "weather\n",
        "for ",
        "you ",
        "now. ",
    ]
    assert calls == [CALL, ToolCall("call_2", "get_time", {})]
    kinds = ["reasoning"] * 4 + ["text"] * 7 + ["tool-call"] * 2 + ["finish"]
    assert [event.type for event in events] == kinds
    finish = events[-1]
    assert isinstance(finish, Finish)
    assert finish.response.text == response.text and finish.response.tool_calls == response.tool_calls
    assert finish.response.usage.output_tokens > 0
    assert model.calls == [(USER, [TOOL])]


async def test_stream_of_an_empty_reply_is_just_finish() -> None:
    events = await collect(ScriptedModel([""]))
    assert len(events) == 1 and isinstance(events[0], Finish)


def test_it_is_a_model_with_a_name() -> None:
    model = ScriptedModel(["x"], name="offline")
    assert isinstance(model, Model)
    assert model.name == "offline"
    assert "1 replies" in repr(model)


@pytest.mark.parametrize(
    ("replies", "options", "pattern"),
    [
        ("just a string", {}, r"pass a list of replies"),
        (["fine", 42], {}, r"got 42"),
        ([], {"cycle": True}, r"cycle=True needs at least one reply"),
    ],
)
def test_bad_scripts_are_configuration_errors(replies: Any, options: dict[str, Any], pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        ScriptedModel(replies, **options)


async def test_a_reply_function_returning_something_else_is_a_model_error() -> None:
    model = ScriptedModel([lambda messages, tools: 42])  # type: ignore[list-item,return-value]
    with pytest.raises(ModelError, match=r"returned 42"):
        await model.complete(USER)
