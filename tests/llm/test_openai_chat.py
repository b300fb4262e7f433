"""The OpenAI-compatible chat model against a real HTTP server on 127.0.0.1 (see chat_server.py)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from sleep_recorder import SleepRecorder

pytest.importorskip("httpx", reason="httpx is not installed: pip install 'memvault[openai]'")

from memvault.errors import ConfigurationError, ModelError
from memvault.llm import (
    Finish,
    Model,
    ModelEvent,
    OpenAIChatModel,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
)

from .chat_server import DROP, ChatServer, running_server

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TWO_CALLS = [
    ("call_a", "get_weather", '{"city": "Paris", "unit": "celsius"}'),
    ("call_b", "get_weather", '{"city": "Tōkyō", "days": [1, 2, 3]}'),
]
EXPECTED_CALLS = (
    ToolCall("call_a", "get_weather", {"city": "Paris", "unit": "celsius"}),
    ToolCall("call_b", "get_weather", {"city": "Tōkyō", "days": [1, 2, 3]}),
)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with running_server() as running:
        yield running


def make(server: ChatServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("api_key", "sk-test")
    options.setdefault("sleep", SleepRecorder())
    return OpenAIChatModel("gpt-test", base_url=server.url, **options)


async def collect(model: OpenAIChatModel, **options: Any) -> list[ModelEvent]:
    return [event async for event in model.stream(MESSAGES, **options)]


def finish_of(events: list[ModelEvent]) -> Finish:
    assert isinstance(events[-1], Finish)
    assert sum(isinstance(event, Finish) for event in events) == 1
    return events[-1]


# -- whole answers ------------------------------------------------------------------------------


async def test_complete_sends_the_conversation_and_reads_text_usage_and_model(server: ChatServer) -> None:
    server.reply("Hi! How can I help?", usage=(21, 6))
    async with make(server) as model:
        response = await model.complete(MESSAGES)
    assert response.text == "Hi! How can I help?"
    assert response.usage == Usage(input_tokens=21, output_tokens=6)
    assert response.finish_reason == "stop"
    assert response.tool_calls == ()
    assert response.model == "gpt-test"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body == {"model": "gpt-test", "messages": MESSAGES}  # no tools, max_tokens, stream
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"


async def test_complete_with_tools_and_max_tokens_decodes_two_parallel_calls(server: ChatServer) -> None:
    server.reply("", tool_calls=TWO_CALLS)
    async with make(server) as model:
        response = await model.complete(MESSAGES, tools=[WEATHER_TOOL], max_tokens=50)
    assert response.tool_calls == EXPECTED_CALLS
    assert response.finish_reason == "tool_calls"
    assert response.text == ""
    body = server.requests[0].body
    assert body["tools"] == [WEATHER_TOOL]
    assert body["max_tokens"] == 50


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_complete_reads_reasoning_from_either_field(server: ChatServer, field: str) -> None:
    server.reply("42", reasoning="Six times seven.", reasoning_field=field)
    async with make(server) as model:
        response = await model.complete(MESSAGES)
    assert (response.text, response.reasoning) == ("42", "Six times seven.")


@pytest.mark.parametrize(
    ("arguments", "args"),
    [
        ('{"city": "Par', {"_raw": '{"city": "Par'}),  # cut JSON
        ("[1, 2]", {"_raw": "[1, 2]"}),  # JSON, but not an object
        ("", {}),  # no arguments at all
    ],
)
async def test_arguments_that_are_not_a_json_object_are_kept_raw(
    server: ChatServer, arguments: str, args: dict[str, Any]
) -> None:
    server.reply(tool_calls=[("call_x", "get_weather", arguments)])
    server.reply(tool_calls=[("call_x", "get_weather", arguments)])
    async with make(server) as model:
        whole = await model.complete(MESSAGES)
        streamed = finish_of(await collect(model)).response
    assert whole.tool_calls == streamed.tool_calls == (ToolCall("call_x", "get_weather", args),)


@pytest.mark.parametrize(
    ("reason", "mapped"),
    [("length", "length"), ("content_filter", "content_filter"), ("eos_token", "other")],
)
async def test_finish_reasons_are_mapped(server: ChatServer, reason: str, mapped: str) -> None:
    server.reply("cut", finish_reason=reason)
    server.reply("cut", finish_reason=reason)
    async with make(server) as model:
        assert (await model.complete(MESSAGES)).finish_reason == mapped
        assert finish_of(await collect(model)).response.finish_reason == mapped


async def test_extra_body_fields_are_sent_and_a_calls_max_tokens_wins(server: ChatServer) -> None:
    async with make(server, extra_body={"temperature": 0.2, "max_tokens": 500}) as model:
        await model.complete(MESSAGES)
        await model.complete(MESSAGES, max_tokens=20)
    assert server.requests[0].body == {
        "model": "gpt-test",
        "messages": MESSAGES,
        "temperature": 0.2,
        "max_tokens": 500,
    }
    assert server.requests[1].body["max_tokens"] == 20


@pytest.mark.parametrize("field", ["model", "stream", "tools"])
def test_extra_body_cannot_set_the_fields_memvault_sets(field: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"extra_body cannot set {field}"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", extra_body={field: True})


# -- streams ------------------------------------------------------------------------------------


async def test_stream_yields_text_in_pieces_then_one_finish_with_usage(server: ChatServer) -> None:
    text = "Streaming works, one small piece at a time."
    server.reply(text, usage=(30, 11))
    async with make(server) as model:
        events = await collect(model, max_tokens=64)
    deltas = [event for event in events[:-1] if isinstance(event, TextDelta)]
    assert len(deltas) == len(events) - 1 > 5, "text must arrive as many deltas"
    assert "".join(delta.text for delta in deltas) == text
    response = finish_of(events).response
    assert response.text == text
    assert response.usage == Usage(30, 11)
    assert response.finish_reason == "stop"
    assert response.model == "gpt-test"
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 64
    assert body["messages"] == MESSAGES


@pytest.mark.parametrize("interleave", [False, True])
async def test_stream_assembles_parallel_tool_calls_from_fragments(
    server: ChatServer, interleave: bool
) -> None:
    server.reply("Checking both.", tool_calls=TWO_CALLS, piece=4, interleave=interleave)
    async with make(server) as model:
        events = await collect(model, tools=[WEATHER_TOOL])
    calls = [event.call for event in events if isinstance(event, ToolCallEvent)]
    assert tuple(calls) == EXPECTED_CALLS  # each call once, in index order, arguments whole
    first_call = next(i for i, event in enumerate(events) if isinstance(event, ToolCallEvent))
    assert all(isinstance(event, TextDelta) for event in events[:first_call])
    response = finish_of(events).response
    assert response.tool_calls == EXPECTED_CALLS
    assert response.text == "Checking both."
    assert response.finish_reason == "tool_calls"
    assert server.requests[0].body["tools"] == [WEATHER_TOOL]


async def test_stream_yields_reasoning_before_text(server: ChatServer) -> None:
    server.reply("Paris.", reasoning="The capital of France is Paris.", reasoning_field="reasoning")
    async with make(server) as model:
        events = await collect(model)
    kinds = [event.type for event in events]
    assert kinds.index("text") > kinds.index("reasoning") and "reasoning" not in kinds[kinds.index("text") :]
    reasoning = "".join(event.text for event in events if isinstance(event, ReasoningDelta))
    assert reasoning == "The capital of France is Paris."
    assert finish_of(events).response.reasoning == reasoning


async def test_a_stream_without_usage_reports_zero_usage(server: ChatServer) -> None:
    server.reply("ok", usage=None)
    async with make(server) as model:
        assert finish_of(await collect(model)).response.usage == Usage()


async def test_a_stream_cut_midway_is_a_model_error_and_is_not_retried(server: ChatServer) -> None:
    server.reply("This answer will never be finished by the server.", cut_after=400)
    received: list[ModelEvent] = []

    async def consume(model: OpenAIChatModel) -> None:
        async for event in model.stream(MESSAGES):
            received.append(event)

    async with make(server) as model:
        with pytest.raises(ModelError, match=r"broke in the middle of a streamed answer"):
            await consume(model)
    assert received and all(isinstance(event, TextDelta) for event in received)
    assert len(server.requests) == 1


async def test_a_stream_that_just_stops_is_a_model_error(server: ChatServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Half an"}, "finish_reason": None}]}
    server.fail_next(200, f"data: {json.dumps(chunk)}\n\n".encode(), sse=True)
    async with make(server) as model:
        with pytest.raises(ModelError, match=r"ended before its finish_reason or \[DONE\]"):
            await collect(model)


async def test_a_stream_without_done_but_with_a_finish_reason_is_complete(server: ChatServer) -> None:
    server.reply("fine", done=False)
    async with make(server) as model:
        assert finish_of(await collect(model)).response.text == "fine"


async def test_an_error_event_in_a_stream_is_a_model_error_with_its_message(server: ChatServer) -> None:
    server.fail_next(200, b'data: {"error": {"message": "model overloaded mid-answer"}}\n\n', sse=True)
    async with make(server) as model:
        with pytest.raises(ModelError, match=r"model overloaded mid-answer"):
            await collect(model)


async def test_a_stream_event_that_is_not_json_is_a_model_error(server: ChatServer) -> None:
    server.fail_next(200, b"data: {not json\n\n", sse=True)
    async with make(server) as model:
        with pytest.raises(ModelError, match=r"not a JSON object.*OpenAI-compatible"):
            await collect(model)


async def test_leaving_a_stream_early_releases_the_connection(server: ChatServer) -> None:
    server.reply("one two three four five six seven eight nine ten")
    async with make(server) as model:
        stream = model.stream(MESSAGES)
        first = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        assert isinstance(first, TextDelta)
        assert (await model.complete(MESSAGES)).text == "echo: Hello there"


# -- retries and errors -------------------------------------------------------------------------


async def test_a_429_is_retried_after_its_retry_after(server: ChatServer) -> None:
    server.fail_next(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "2"})
    server.reply("after the wait")
    sleep = SleepRecorder()
    async with make(server, sleep=sleep) as model:
        response = await model.complete(MESSAGES)
    assert response.text == "after the wait"
    assert sleep.delays == [2.0]
    assert len(server.requests) == 2 and server.requests[0].body == server.requests[1].body


async def test_a_503_before_a_stream_starts_is_retried_with_backoff(server: ChatServer) -> None:
    server.fail_next(503, {"error": {"message": "overloaded"}})
    server.reply("streamed after a retry")
    sleep = SleepRecorder()
    async with make(server, sleep=sleep, backoff_base=0.5) as model:
        events = await collect(model)
    assert finish_of(events).response.text == "streamed after a retry"
    assert len(sleep.delays) == 1 and 0.25 <= sleep.delays[0] <= 0.5  # 0.5 * 2**0, jitter in [0.5, 1]
    assert len(server.requests) == 2


async def test_a_dropped_connection_is_retried(server: ChatServer) -> None:
    server.fail_next(DROP)
    server.reply("second try")
    async with make(server) as model:
        assert (await model.complete(MESSAGES)).text == "second try"
    assert len(server.requests) == 2


async def test_gives_up_after_max_retries_with_a_clear_error(server: ChatServer) -> None:
    for _ in range(3):
        server.fail_next(503, {"error": {"message": "the engine is overloaded"}})
    sleep = SleepRecorder()
    async with make(server, sleep=sleep, max_retries=2) as model:
        with pytest.raises(
            ModelError, match=r"503 after 3 attempts: the engine is overloaded.*try again later"
        ):
            await model.complete(MESSAGES)
    assert len(server.requests) == 3 and len(sleep.delays) == 2


async def test_a_400_is_not_retried_and_carries_the_servers_message(server: ChatServer) -> None:
    message = "Invalid parameter: messages with role 'tool' must be a response to a preceding tool_calls"
    server.fail_next(400, {"error": {"message": message}})
    sleep = SleepRecorder()
    async with make(server, sleep=sleep) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(MESSAGES)
    text = str(caught.value)
    assert "400" in text and message in text and server.url in text
    assert "tool_call_id" in text  # the hint
    assert len(server.requests) == 1 and sleep.delays == []


async def test_a_401_says_to_check_the_api_key(server: ChatServer) -> None:
    server.fail_next(401, {"error": {"message": "Incorrect API key provided"}})
    async with make(server) as model:
        with pytest.raises(ModelError, match=r"401.*Incorrect API key.*API key.*OPENAI_API_KEY"):
            await model.complete(MESSAGES)


async def test_a_wrong_base_url_gets_a_404_hint(server: ChatServer) -> None:
    async with OpenAIChatModel("gpt-test", base_url=server.url.removesuffix("/v1"), api_key="k") as model:
        with pytest.raises(ModelError, match=r"404.*check base_url.*/v1.*'gpt-test'"):
            await model.complete(MESSAGES)
        with pytest.raises(ModelError, match=r"404.*check base_url"):
            await collect(model)
    assert [request.path for request in server.requests] == ["/chat/completions"] * 2


async def test_connection_errors_are_retried_then_reported() -> None:
    with socket.socket() as probe:  # a loopback port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleep = SleepRecorder()
    async with OpenAIChatModel(
        "m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, sleep=sleep
    ) as model:
        with pytest.raises(ModelError, match=r"could not reach .* after 3 attempts.*check base_url"):
            await model.complete(MESSAGES)
    assert len(sleep.delays) == 2


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        (b"<html>proxy error</html>", r"not JSON.*OpenAI-compatible"),
        ({"object": "list", "data": []}, r"without choices"),
        ({"error": {"message": "quota exceeded"}}, r"answered with an error: quota exceeded"),
        ({"choices": [{"index": 0, "text": "legacy completion"}]}, r'without a "message"'),
    ],
)
async def test_malformed_answers_are_model_errors(server: ChatServer, body: Any, pattern: str) -> None:
    server.fail_next(200, body)
    async with make(server) as model:
        with pytest.raises(ModelError, match=pattern):
            await model.complete(MESSAGES)


# -- configuration ------------------------------------------------------------------------------


async def test_key_and_base_url_come_from_the_environment(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/")
    async with OpenAIChatModel("gpt-test", headers={"OpenAI-Organization": "org-1"}) as model:
        assert model.base_url == server.url
        await model.complete(MESSAGES)
        assert "sk-from-env" not in repr(model)
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-from-env"
    assert headers["openai-organization"] == "org-1"


async def test_a_local_server_needs_no_key(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAIChatModel("gpt-test", base_url=server.url) as model:
        await model.complete(MESSAGES)
    assert "authorization" not in server.requests[0].headers


def test_api_openai_com_without_a_key_is_refused_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match=r"OPENAI_API_KEY.*base_url"):
        OpenAIChatModel("gpt-4o-mini")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("model", ""),
        ("base_url", "localhost:8080/v1"),
        ("max_retries", -1),
        ("timeout", 0),
        ("extra_body", [1]),
    ],
)
def test_bad_options_are_configuration_errors(option: str, value: object) -> None:
    options: dict[str, Any] = {
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "k",
        option: value,
    }
    with pytest.raises(ConfigurationError, match=option):
        OpenAIChatModel(**options)


async def test_it_is_a_model_and_leaves_an_external_client_open(server: ChatServer) -> None:
    import httpx

    async with httpx.AsyncClient() as client:
        model = make(server, client=client)
        assert isinstance(model, Model)
        assert model.name == "gpt-test"
        await model.complete(MESSAGES)
        await model.aclose()
        assert not client.is_closed
