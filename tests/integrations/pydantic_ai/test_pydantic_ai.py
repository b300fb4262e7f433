"""memvault.integrations.pydantic_ai with real Pydantic AI agents (TestModel, FunctionModel: no
network) over memory://, a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

import asyncio
import sys
import warnings
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from memvault import Memory
from memvault.errors import MissingExtraError, ValidationError
from memvault.integrations.pydantic_ai import (
    MemvaultHistory,
    memory_instructions,
    memory_toolset,
    to_memvault,
    to_pydantic_ai,
)
from memvault.model import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

ADAPTER = pm.ModelMessagesTypeAdapter


def as_pydantic_ai_keeps_it(messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
    """What Pydantic AI's own JSON persistence gives back for ``messages``."""
    return ADAPTER.validate_python(ADAPTER.dump_python(messages, mode="json"))


def weather(city: str) -> str:
    """The weather in a city."""
    return f"snow in {city}"


def scripted(seen: list[list[pm.ModelMessage]]) -> FunctionModel:
    """A model that calls ``weather`` once per run, then answers with what it returned."""

    def reply(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        seen.append(list(messages))
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, pm.ToolReturnPart)]
        if returns:
            return pm.ModelResponse(parts=[pm.TextPart(f"It is {returns[0].content}.")])
        prompt = next(p for p in last.parts if isinstance(p, pm.UserPromptPart)).content
        return pm.ModelResponse(
            parts=[
                pm.ThinkingPart("The user wants weather.", signature="sig-1"),
                pm.ToolCallPart(
                    "weather", {"city": str(prompt).split()[-1]}, tool_call_id=f"call-{len(seen)}"
                ),
            ]
        )

    return FunctionModel(reply)


async def test_a_run_is_saved_and_the_next_run_continues_from_it(any_memory: Memory) -> None:
    seen: list[list[pm.ModelMessage]] = []
    agent = Agent(scripted(seen), tools=[weather], instructions="Be brief.")
    history = MemvaultHistory(any_memory, thread_id="chat-1", resource_id="ada")
    first = await agent.run("Weather in Oslo", message_history=await history.load())
    assert first.output == "It is snow in Oslo."
    await history.save(first.new_messages())

    stored = await any_memory.get_messages(thread_id="chat-1", resource_id="ada")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[0].text == "Weather in Oslo"
    assert stored[1].parts[0] == ReasoningPart(text="The user wants weather.", signature="sig-1")
    assert stored[1].tool_calls == [
        ToolCallPart(tool_call_id="call-1", name="weather", args={"city": "Oslo"})
    ]
    assert stored[2].parts == [ToolResultPart(tool_call_id="call-1", output="snow in Oslo", name="weather")]
    assert stored[3].text == "It is snow in Oslo."

    loaded = await history.load()
    assert loaded == as_pydantic_ai_keeps_it(first.all_messages())

    second = await agent.run("And in Rome", message_history=loaded)
    assert second.output == "It is snow in Rome."
    assert seen[-2][: len(loaded)] == loaded  # the model saw the first run
    await history.save(second.new_messages())
    assert len(await history.load()) == 8
    assert await history.load(last_n=4) == as_pydantic_ai_keeps_it(second.all_messages())[4:]
    assert await history.load(last_n=3) == []  # it would start with a tool return without its call


async def test_test_model_runs_with_a_loaded_history(any_memory: Memory) -> None:
    history = MemvaultHistory(any_memory, thread_id="t", resource_id="ada")
    agent = Agent(TestModel(), tools=[weather], system_prompt="Be brief.")
    result = await agent.run("hello")
    await history.save(result.new_messages())
    first = (await any_memory.get_messages(thread_id="t", resource_id="ada"))[0]
    assert (first.role, first.text) == ("user", "hello")  # the system prompt is not the user's words
    again = await agent.run("again", message_history=await history.load())
    assert again.all_messages()[: len(result.all_messages())] == as_pydantic_ai_keeps_it(
        result.all_messages()
    )


async def test_recall_finds_an_older_message_for_the_instructions(any_memory: Memory) -> None:
    old = MemvaultHistory(any_memory, thread_id="old", resource_id="ada")
    echo = Agent(TestModel(custom_output_text="Noted."))
    await old.save((await echo.run("My cat is called Bartholomew")).new_messages())
    other = MemvaultHistory(any_memory, thread_id="old", resource_id="eve")
    await other.save((await echo.run("Eve's cat is called Zanzibar")).new_messages())

    given: list[str | None] = []

    def reply(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        given.append(info.instructions)
        return pm.ModelResponse(parts=[pm.TextPart("ok")])

    for resource, thread in (("ada", "new"), ("eve", "new")):
        await any_memory.update_working_memory("Prefers short answers.", resource_id=resource)
        agent = Agent(
            FunctionModel(reply),
            instructions=memory_instructions(any_memory, resource_id=resource, thread_id=thread),
        )
        await agent.run("what is my cat called?")
    ada, eve = given
    assert ada is not None and eve is not None
    assert "Bartholomew" in ada and "earlier conversation" in ada and "Prefers short answers." in ada
    assert "Zanzibar" not in ada
    assert "Zanzibar" in eve and "Bartholomew" not in eve


async def test_the_toolset_searches_and_updates_memory(any_memory: Memory) -> None:
    old = MemvaultHistory(any_memory, thread_id="old", resource_id="ada")
    await old.save(
        (await Agent(TestModel(custom_output_text="ok")).run("I was born in Trondheim")).new_messages()
    )
    await MemvaultHistory(any_memory, thread_id="old", resource_id="eve").save(
        (await Agent(TestModel(custom_output_text="ok")).run("Eve was born in Trondheim too")).new_messages()
    )
    outputs: list[str] = []

    def reply(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        returns = [p for p in messages[-1].parts if isinstance(p, pm.ToolReturnPart)]
        if returns:
            outputs.extend(str(p.content) for p in returns)
            return pm.ModelResponse(parts=[pm.TextPart("done")])
        assert {t.name for t in info.function_tools} == {"search_memory", "update_working_memory"}
        return pm.ModelResponse(
            parts=[
                pm.ToolCallPart("search_memory", {"query": "where was I born"}, tool_call_id="a"),
                pm.ToolCallPart("update_working_memory", {"memory": "Born in Trondheim."}, tool_call_id="b"),
            ]
        )

    agent = Agent(
        FunctionModel(reply), toolsets=[memory_toolset(any_memory, resource_id="ada", thread_id="new")]
    )
    assert (await agent.run("where was I born?")).output == "done"
    assert "I was born in Trondheim" in outputs[0] and "Eve" not in outputs[0]
    assert "Born in Trondheim." in outputs[1]
    assert "Born in Trondheim." in (await any_memory.get_working_memory(resource_id="ada") or "")
    assert await any_memory.get_working_memory(resource_id="eve") is None


async def test_another_resources_thread_reads_as_missing(any_memory: Memory) -> None:
    ada = MemvaultHistory(any_memory, thread_id="shared-name", resource_id="ada")
    await ada.save((await Agent(TestModel(custom_output_text="secret")).run("ada's note")).new_messages())
    eve = MemvaultHistory(any_memory, thread_id="shared-name", resource_id="eve")
    assert await eve.load() == []
    assert await eve.clear() == 0
    await eve.save((await Agent(TestModel(custom_output_text="hi")).run("eve's note")).new_messages())
    ada_texts = [m.text for m in await any_memory.get_messages(thread_id="shared-name", resource_id="ada")]
    assert ada_texts == ["ada's note", "secret"]
    assert [getattr(p, "content", None) for m in await eve.load() for p in m.parts][:1] == ["eve's note"]


async def test_messages_other_code_saved_read_as_the_closest_pydantic_ai_messages(any_memory: Memory) -> None:
    await any_memory.save_messages(
        [
            Message.system("Be kind."),
            Message.user("hi"),
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(text="hm"),
                    TextPart(text="Calling."),
                    ToolCallPart(tool_call_id="c", name="weather", args={"city": "Oslo"}),
                ],
            ),
            Message(role="tool", parts=[ToolResultPart(tool_call_id="c", output="snow", name="weather")]),
            Message.assistant("Snow."),
        ],
        thread_id="foreign",
        resource_id="ada",
    )
    loaded = await MemvaultHistory(any_memory, thread_id="foreign", resource_id="ada").load()
    kinds = [[p.part_kind for p in m.parts] for m in loaded]
    assert kinds == [
        ["system-prompt"],
        ["user-prompt"],
        ["thinking", "text", "tool-call"],
        ["tool-return"],
        ["text"],
    ]
    result = await Agent(TestModel(custom_output_text="ok")).run("next", message_history=loaded)
    assert result.output == "ok"


async def test_bad_input_writes_nothing(any_memory: Memory) -> None:
    history = MemvaultHistory(any_memory, thread_id="t", resource_id="ada")
    good = pm.ModelRequest(parts=[pm.UserPromptPart("hi")])
    with pytest.raises(ValidationError, match="ModelRequest or ModelResponse"):
        await history.save([good, {"role": "user", "content": "x"}])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="a list of Pydantic AI messages"):
        await history.save(good)  # type: ignore[arg-type]
    assert await history.load() == []
    for bad in ("", "x" * 300, 5):
        with pytest.raises(ValidationError):
            MemvaultHistory(any_memory, thread_id=bad, resource_id="ada")  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            MemvaultHistory(any_memory, thread_id="t", resource_id=bad)  # type: ignore[arg-type]


def test_without_pydantic_ai_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    with pytest.raises(MissingExtraError, match=r"memvault\[pydantic-ai\]"):
        MemvaultHistory(Memory.__new__(Memory), thread_id="t", resource_id="ada")
    with pytest.raises(MissingExtraError, match="pydantic-ai-slim"):
        to_pydantic_ai([])


# ---------------------------------------------------------------- property: lossless histories

TEXT = st.text(max_size=12) | st.sampled_from(["a\x00b", "\ud800", "x\udfff\x00"])  # NUL, lone surrogates
SAFE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=8)
IDS = SAFE.filter(lambda s: bool(s.strip()))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
STAMP = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
USER_CONTENT = TEXT | st.lists(
    TEXT
    | st.builds(pm.ImageUrl, url=SAFE)
    | st.builds(pm.BinaryContent, data=st.binary(max_size=8), media_type=st.just("image/png")),
    max_size=3,
)
REQUEST_PART = st.one_of(
    st.builds(pm.SystemPromptPart, content=TEXT, timestamp=STAMP),
    st.builds(pm.UserPromptPart, content=USER_CONTENT, timestamp=STAMP),
    st.builds(
        pm.ToolReturnPart,
        tool_name=SAFE,
        content=JSON,
        tool_call_id=IDS,
        timestamp=STAMP,
        outcome=st.sampled_from(["success", "failed", "retried"]),
    ),
)
RESPONSE_PART = st.one_of(
    st.builds(pm.TextPart, content=TEXT),
    st.builds(pm.ThinkingPart, content=TEXT, signature=st.none() | TEXT),
    st.builds(
        pm.ToolCallPart,
        tool_name=SAFE,
        args=st.none() | st.dictionaries(SAFE, JSON, max_size=3) | TEXT,
        tool_call_id=IDS,
    ),
)
MODEL_MESSAGE = st.one_of(
    st.builds(
        pm.ModelRequest,
        parts=st.lists(REQUEST_PART, max_size=3),
        timestamp=STAMP,
        instructions=st.none() | TEXT,
    ),
    st.builds(
        pm.ModelResponse,
        parts=st.lists(RESPONSE_PART, max_size=3),
        model_name=st.none() | SAFE,
        timestamp=STAMP,
        provider_response_id=st.none() | SAFE,
    ),
)


def test_property_histories_round_trip_exactly_through_a_thread(
    looped_memory: tuple[asyncio.Runner, Memory],
) -> None:
    runner, memory = looped_memory
    count = 0

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(MODEL_MESSAGE, max_size=5))
    def check(messages: list[pm.ModelMessage]) -> None:
        nonlocal count
        count += 1
        history = MemvaultHistory(memory, thread_id=f"t{count}", resource_id="ada")
        try:
            ADAPTER.dump_python(messages, mode="json")
        except UnicodeError:  # Pydantic AI itself cannot persist it: refused, nothing written
            with pytest.raises(ValidationError, match="cannot write this message as JSON"):
                runner.run(history.save(messages))
            assert runner.run(history.load()) == []
            return
        runner.run(history.save(messages))
        loaded = runner.run(history.load())
        assert loaded == as_pydantic_ai_keeps_it(messages)
        assert ADAPTER.dump_python(loaded, mode="json") == ADAPTER.dump_python(messages, mode="json")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check()


def test_texts_are_stored_once() -> None:
    big = "x" * 50_000
    message = to_memvault(pm.ModelResponse(parts=[pm.TextPart(big)]))
    assert message.text == big
    assert big not in message.metadata["pydantic_ai"]
    assert to_pydantic_ai([message])[0].parts[0] == pm.TextPart(big)
