"""MemvaultSession under the SDK's Runner with a scripted model (no network), on memory://,
SQLite and PostgreSQL: the behaviours the SDK's own session tests check for SQLiteSession
(history fed back, sessions kept apart, list input appended, the input callback, a settings
override), each for ``Runner.run`` and ``Runner.run_streamed``, and a tool call's items."""

from __future__ import annotations

from typing import Any

import pytest

from memvault import Memory
from memvault.integrations.openai_agents import MemvaultSession

agents = pytest.importorskip("agents")
from .scripted_model import ScriptedModel, function_call, text_message  # noqa: E402

CONFIG = agents.RunConfig(tracing_disabled=True)


async def run(method: str, agent: Any, given: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("run_config", CONFIG)
    if method == "run":
        return await agents.Runner.run(agent, given, **kwargs)
    result = agents.Runner.run_streamed(agent, given, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


METHODS = pytest.mark.parametrize("method", ["run", "run_streamed"])


def contents(items: list[Any]) -> list[Any]:
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(piece.get("text", "") for piece in content)
        out.append((item.get("role"), content))
    return out


@METHODS
async def test_the_history_is_fed_back(any_memory: Memory, method: str) -> None:
    model = ScriptedModel().then(text_message("San Francisco")).then(text_message("California"))
    agent = agents.Agent(name="test", model=model)
    session = MemvaultSession("s1", any_memory, resource_id="ada")
    first = await run(method, agent, "What city is the Golden Gate Bridge in?", session=session)
    assert first.final_output == "San Francisco"
    second = await run(method, agent, "What state is it in?", session=session)
    assert second.final_output == "California"
    assert contents(model.last_input) == [
        ("user", "What city is the Golden Gate Bridge in?"),
        ("assistant", "San Francisco"),
        ("user", "What state is it in?"),
    ]
    assert contents(await session.get_items()) == [*contents(model.last_input), ("assistant", "California")]


@METHODS
async def test_sessions_keep_their_own_history(any_memory: Memory, method: str) -> None:
    model = ScriptedModel().then(text_message("cats")).then(text_message("dogs")).then(text_message("cats!"))
    agent = agents.Agent(name="test", model=model)
    one = MemvaultSession("session_1", any_memory, resource_id="ada")
    two = MemvaultSession("session_2", any_memory, resource_id="ada")
    await run(method, agent, "I like cats", session=one)
    await run(method, agent, "I like dogs", session=two)
    await run(method, agent, "What did I say I like?", session=one)
    assert contents(model.last_input) == [
        ("user", "I like cats"), ("assistant", "cats"), ("user", "What did I say I like?")
    ]
    assert contents(await two.get_items()) == [("user", "I like dogs"), ("assistant", "dogs")]


@METHODS
async def test_list_input_is_appended_to_the_history(any_memory: Memory, method: str) -> None:
    session = MemvaultSession("s1", any_memory, resource_id="ada")
    history = [{"role": "user", "content": "Earlier message"},
               {"role": "assistant", "content": "Saved reply"}]
    await session.add_items(history)
    model = ScriptedModel().then(text_message("This should run"))
    agent = agents.Agent(name="test", model=model)
    given = [{"role": "user", "content": "Test message"}]
    await run(method, agent, given, session=session)
    assert model.last_input == history + given


@METHODS
async def test_the_session_input_callback_shapes_the_input(any_memory: Memory, method: str) -> None:
    session = MemvaultSession("s1", any_memory, resource_id="ada")
    history = [{"role": "user", "content": "Hello there."},
               {"role": "assistant", "content": "Hi, I'm here to assist you."}]
    await session.add_items(history)

    def only_users(past: list[Any], new: list[Any]) -> list[Any]:
        return [item for item in past if item["role"] == "user"] + new

    model = ScriptedModel().then(text_message("I'm a model"))
    agent = agents.Agent(name="test", model=model)
    given = [{"role": "user", "content": "What's your name?"}]
    config = agents.RunConfig(tracing_disabled=True, session_input_callback=only_users)
    await run(method, agent, given, session=session, run_config=config)
    assert model.last_input == [history[0], given[0]]


async def test_run_config_settings_override_the_session_limit(any_memory: Memory) -> None:
    session = MemvaultSession("s1", any_memory, resource_id="ada", session_settings={"limit": 100})
    await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
    model = ScriptedModel().then(text_message("Got it"))
    agent = agents.Agent(name="test", model=model)
    config = agents.RunConfig(tracing_disabled=True,
                              session_settings=agents.memory.SessionSettings(limit=2))
    await agents.Runner.run(agent, "New question", session=session, run_config=config)
    assert contents(model.last_input) == [("user", "Turn 8"), ("user", "Turn 9"), ("user", "New question")]


@METHODS
async def test_a_tool_call_and_its_output_are_kept_and_fed_back(any_memory: Memory, method: str) -> None:
    @agents.function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}, nul \x00 and all"

    model = (ScriptedModel()
             .then(function_call("weather", '{"city": "Lyon"}'))
             .then(text_message("It is sunny."))
             .then(text_message("You asked about Lyon.")))
    agent = agents.Agent(name="test", model=model, tools=[weather])
    session = MemvaultSession("s1", any_memory, resource_id="ada")
    assert (await run(method, agent, "Weather in Lyon?", session=session)).final_output == "It is sunny."
    await run(method, agent, "What did I ask?", session=session)
    kinds = [item.get("type", "message") for item in model.last_input]
    assert kinds == ["message", "function_call", "function_call_output", "message", "message"]
    output = model.last_input[2]
    assert output["call_id"] == "call_1" and output["output"] == "sunny in Lyon, nul \x00 and all"
    messages = await any_memory.get_messages(thread_id="s1", resource_id="ada")
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert messages[2].tool_results[0].output == "sunny in Lyon, nul   and all"  # cleaned for search
