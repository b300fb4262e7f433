"""The turn helper over a real SQLite memory with a scripted model: the user's message saved
before the model runs, the context assembled, memory tools executed, output buffered and
persisted, a retried turn replacing its failed attempt, titles and summaries in the background."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, Message, ToolResultPart
from memvault.llm import ModelResponse, ScriptedModel, ToolCall
from memvault.runtime import Runtime, Turn, TurnOptions
from memvault.runtime.summaries import SummaryOptions
from memvault.runtime.titles import TITLE_INSTRUCTIONS


def call(name: str, call_id: str = "c1", **args: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(call_id, name, dict(args)),), finish_reason="tool_calls")


async def stored(memory: Memory, thread: str = "t1") -> list[Message]:
    return await memory.get_messages(thread_id=thread, resource_id="ada")


async def test_a_turn_saves_runs_tools_and_flushes(memory: Memory) -> None:
    model = ScriptedModel([call("update_working_memory", memory="- Name: Ada"), "Nice to meet you, Ada!"])
    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="Hi, I'm Ada", model=model,
                           options=TurnOptions(titles=False)) as turn:
        assert [m.text for m in await stored(memory)] == ["Hi, I'm Ada"]  # durable before the model
        assert turn.messages[-1] == {"role": "user", "content": "Hi, I'm Ada"}
        answer = await turn.run()
    assert answer == "Nice to meet you, Ada!"
    saved = await stored(memory)
    assert [m.role for m in saved] == ["user", "assistant"]
    assert [p.type for p in saved[1].parts] == ["tool-call", "tool-result", "text"]
    assert saved[1].id == f"{turn.turn_id}-a0" and saved[1].metadata["turn_id"] == turn.turn_id
    assert await memory.get_working_memory(resource_id="ada") == "- Name: Ada"
    # the second model call saw the tool exchange, in OpenAI order
    second = model.calls[1][0]
    assert [m["role"] for m in second[-3:]] == ["user", "assistant", "tool"]
    assert {t["function"]["name"] for t in model.calls[0][1] or []} == {
        "update_working_memory", "get_working_memory", "search_memory"}


async def test_the_next_turn_is_fed_the_history_and_the_working_memory(memory: Memory) -> None:
    await memory.update_working_memory("- Likes: matcha", resource_id="ada")
    for text, reply in [("first question", "first answer"), ("second question", "second answer")]:
        async with Turn(memory, thread_id="t1", resource_id="ada", user_message=text,
                               model=ScriptedModel([reply]), options=TurnOptions(titles=False)) as turn:
            await turn.run()
    fed = turn.messages
    assert "- Likes: matcha" in fed[0]["content"]
    assert [m["content"] for m in fed[1:]] == ["first question", "first answer", "second question",
                                               "second answer"]


async def test_your_tools_run_through_execute_and_failures_become_error_results(memory: Memory) -> None:
    model = ScriptedModel([call("weather", city="Oslo"), call("weather", "c2", city="Nowhere"), "Snow."])

    async def execute(tool: ToolCall) -> Any:
        if tool.args["city"] == "Nowhere":
            raise LookupError("no such city")
        return {"sky": "snow"}

    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="weather?", model=model,
                           options=TurnOptions(titles=False)) as turn:
        assert await turn.run(tools=[{"type": "function", "function": {"name": "weather"}}],
                              execute=execute) == "Snow."
    results = [p for m in await stored(memory) for p in m.parts if isinstance(p, ToolResultPart)]
    assert [(r.output, r.is_error) for r in results] == [({"sky": "snow"}, False),
                                                         ("LookupError: no such city", True)]


async def test_a_call_nobody_can_run_ends_the_stream_and_is_never_stored_dangling(memory: Memory) -> None:
    model = ScriptedModel([call("weather", city="Oslo")])
    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="weather?", model=model,
                           options=TurnOptions(titles=False)) as turn:
        await turn.run()
        assert [c.tool_call_id for c in turn.buffer.pending_tool_calls()] == ["c1"]
    for message in await stored(memory):
        assert not message.tool_calls  # the turn ended without a result: the call is not stored


async def test_a_retried_turn_replaces_its_failed_attempt(memory: Memory) -> None:
    user = Message.user("tell me a story")

    async def crashing_attempt() -> None:
        async with Turn(memory, thread_id="t1", resource_id="ada", user_message=user,
                               options=TurnOptions(titles=False)) as turn:
            turn.append_text("Once upon a ")
            turn.add_step(Message.assistant("[sub-agent notes]"), agent_id="researcher")
            raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError, match="model crashed"):
        await crashing_attempt()
    first = await stored(memory)
    assert [m.text for m in first] == ["tell me a story", "Once upon a ", "[sub-agent notes]"]

    async with Turn(memory, thread_id="t1", resource_id="ada", user_message=user,
                           model=ScriptedModel(["Once upon a time, the end."]),
                           options=TurnOptions(titles=False)) as turn:
        await turn.run()
    again = await stored(memory)
    assert [m.text for m in again] == ["tell me a story", "Once upon a time, the end."]
    assert len({m.id for m in again}) == len(again)


async def test_sub_agent_output_carries_its_id_and_name(memory: Memory) -> None:
    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="research this",
                           options=TurnOptions(titles=False)) as turn:
        turn.add_step(Message.assistant("found 3 papers"), agent_id="r1", agent_name="Researcher")
        turn.append_text("Here is the summary.")
    saved = await stored(memory)
    assert [(m.metadata.get("agent_id"), m.metadata.get("agent_name"), m.text) for m in saved[1:]] == [
        ("r1", "Researcher", "found 3 papers"), (None, None, "Here is the summary.")]


async def test_a_cancelled_turn_is_flushed(memory: Memory) -> None:
    started = asyncio.Event()

    async def agent() -> None:
        async with Turn(memory, thread_id="t1", resource_id="ada", user_message="go",
                               options=TurnOptions(titles=False, debounce=60)) as turn:
            turn.append_text("partial answer")
            started.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(agent())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m.text for m in await stored(memory)] == ["go", "partial answer"]


def _background(messages: list[dict[str, Any]], tools: Any) -> str:
    if messages[0]["content"] == TITLE_INSTRUCTIONS:
        return "A trip to Kyoto"
    return "Summary: Ada plans a Kyoto trip."


async def test_title_and_summary_come_in_the_background(memory: Memory) -> None:
    background = ScriptedModel(_background)
    options = TurnOptions(summaries=SummaryOptions(trigger_tokens=30, keep_messages=2))
    runtime = Runtime(memory, summary_model=background, options=options)
    for text in ["I plan a trip to Kyoto in April " * 3, "What should I pack?"]:
        async with runtime.turn(thread_id="t1", resource_id="ada", user_message=text,
                                model=ScriptedModel(["Noted, pack light."])) as turn:
            await turn.run()
    await runtime.flush()
    thread = await memory.get_thread(thread_id="t1", resource_id="ada")
    assert thread is not None and thread.title == "A trip to Kyoto"
    titles = [c for c in background.calls if c[0][0]["content"] == TITLE_INSTRUCTIONS]
    assert len(titles) == 1  # only for the thread's first user message
    summary = await memory.get_summary(thread_id="t1", resource_id="ada")
    assert summary is not None and summary.text == "Summary: Ada plans a Kyoto trip."
    assert await memory.get_working_memory(resource_id="ada") is None  # titles never touch it


async def test_a_failing_title_model_never_fails_the_turn(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="hello",
                    model=ScriptedModel(["hi"]), summary_model=ScriptedModel([]),
                    options=TurnOptions(summaries=None)) as turn:
        await turn.run()
    await turn.tasks.flush()
    assert "background title failed" in caplog.text
    assert [m.text for m in await stored(memory)] == ["hello", "hi"]


def test_the_sync_twin_runs_a_turn(tmp_path: Path) -> None:
    from memvault.llm import Finish, TextDelta
    from memvault.sync import Memory as SyncMemory
    from memvault.sync import Runtime as SyncRuntime

    with SyncMemory.open(f"sqlite:///{tmp_path / 'sync.db'}") as memory:
        model = ScriptedModel([call("update_working_memory", memory="- Name: Ada"), "Hello Ada!", "Again!"])
        runtime = SyncRuntime(memory)
        with runtime.turn(thread_id="t1", resource_id="ada", user_message="I'm Ada", model=model,
                         options=TurnOptions(titles=False)) as turn:
            assert turn.messages[-1] == {"role": "user", "content": "I'm Ada"}
            assert turn.run() == "Hello Ada!"
        with runtime.turn(thread_id="t1", resource_id="ada", user_message="again", model=model,
                         options=TurnOptions(titles=False)) as turn:
            events = list(turn.stream())
            turn.append_text(" (edited by hand)")
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Again!"
        assert isinstance(events[-1], Finish)
        saved = memory.get_messages(thread_id="t1", resource_id="ada")
        assert [m.text for m in saved] == ["I'm Ada", "Hello Ada!", "again", "Again! (edited by hand)"]
        assert memory.get_working_memory(resource_id="ada") == "- Name: Ada"


async def test_working_memory_disabled_removes_the_note_and_its_tools(memory: Memory) -> None:
    """``WorkingMemoryOptions(enabled=False)`` (Mastra's default): the turn feeds no note and
    offers only ``search_memory``; a call to a note tool is not run (nobody runs it: the stream
    ends) and the stored note is untouched."""
    from memvault import MemoryOptions, WorkingMemoryOptions

    await memory.update_working_memory("- Likes: matcha", resource_id="ada")
    off = Memory(memory.store, MemoryOptions(working_memory=WorkingMemoryOptions(enabled=False)))
    model = ScriptedModel([call("update_working_memory", memory="- Name: Mallory")])
    async with Turn(off, thread_id="t1", resource_id="ada", user_message="hi", model=model,
                    options=TurnOptions(titles=False)) as turn:
        await turn.run()
    fed = model.calls[0][0]
    assert "matcha" not in str(fed) and "working memory" not in str(fed[0]).lower()
    assert {t["function"]["name"] for t in model.calls[0][1] or []} == {"search_memory"}
    assert await memory.get_working_memory(resource_id="ada") == "- Likes: matcha"


@pytest.mark.parametrize("earlier", [0, 3, 6, 9, 12, 30])
async def test_a_young_thread_is_fed_its_whole_window(memory: Memory, earlier: int) -> None:
    """The history a turn feeds is the thread's window, however many messages the thread has
    (a thread shorter than the window once lost its oldest messages)."""
    await memory.save_messages([Message.user(f"said {i}", id=f"m{i}") for i in range(earlier)],
                               thread_id="t1", resource_id="ada")
    async with Turn(memory, thread_id="t1", resource_id="ada", user_message="and now?",
                    model=ScriptedModel(["ok"]), options=TurnOptions(titles=False)) as turn:
        window = await memory.get_history(thread_id="t1", resource_id="ada")
        assert [m.id for m in turn.context.history] == [m.id for m in window]
        assert len(window) == min(earlier + 1, memory.options.history.last_n)
        await turn.run()
