"""Incremental summaries over a real SQLite memory with a scripted model: triggered by tokens,
the last messages kept verbatim, the next call fed only the previous summary and the new
messages, boundaries that never split a tool exchange, and the summary surviving a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import Memory, Message, ToolCallPart, ToolResultPart
from memvault.llm import ModelResponse, ScriptedModel
from memvault.runtime.summaries import SummaryOptions, boundary, summarize_if_needed, transcript

OPTIONS = SummaryOptions(trigger_tokens=200, keep_messages=2)


async def _say(memory: Memory, first: int, last: int) -> None:
    await memory.save_messages(
        [Message(role="user" if i % 2 == 0 else "assistant", id=f"m{i}",
                 parts=[{"type": "text", "text": f"message {i}: " + "words " * 20}])
         for i in range(first, last)],
        thread_id="t", resource_id="ada")


async def test_incremental_summaries_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    model = ScriptedModel(["summary one", "summary two"])
    memory = await Memory.open(url)
    await _say(memory, 0, 4)  # about 100 tokens: under the trigger
    assert await summarize_if_needed(memory, model, thread_id="t", resource_id="ada", options=OPTIONS) is None
    assert model.calls == []
    await _say(memory, 4, 10)
    first = await summarize_if_needed(memory, model, thread_id="t", resource_id="ada", options=OPTIONS)
    assert first is not None and first.text == "summary one" and first.through_message_id == "m7"
    prompt = model.calls[0][0][1]["content"]
    assert "Previous summary" not in prompt
    assert "message 0:" in prompt and "message 7:" in prompt and "message 8:" not in prompt
    await memory.close()

    memory = await Memory.open(url)  # the summary is in its own table: it survives
    assert (await memory.get_summary(thread_id="t", resource_id="ada")) == first
    await _say(memory, 10, 16)
    second = await summarize_if_needed(memory, model, thread_id="t", resource_id="ada", options=OPTIONS)
    assert second is not None and second.version == 2 and second.through_message_id == "m13"
    prompt = model.calls[1][0][1]["content"]
    assert prompt.startswith("Previous summary:\nsummary one")
    assert "message 7:" not in prompt  # only the messages since the previous summary
    assert "message 8:" in prompt and "message 13:" in prompt and "message 14:" not in prompt
    await memory.close()


async def test_a_failing_or_empty_model_writes_nothing(tmp_path: Path) -> None:
    memory = await Memory.open(f"sqlite:///{tmp_path / 's.db'}")
    await _say(memory, 0, 10)
    assert await summarize_if_needed(memory, ScriptedModel(["   "]), thread_id="t", resource_id="ada",
                                     options=OPTIONS) is None
    with pytest.raises(Exception, match="script"):
        await summarize_if_needed(memory, ScriptedModel([]), thread_id="t", resource_id="ada",
                                  options=OPTIONS)
    assert await memory.get_summary(thread_id="t", resource_id="ada") is None
    await memory.close()


def _exchange(call_id: str, first: int) -> list[Message]:
    return [
        Message(role="assistant", id=f"m{first}",
                parts=[ToolCallPart(tool_call_id=call_id, name="lookup", args={})]),
        Message(role="tool", id=f"m{first + 1}", parts=[ToolResultPart(tool_call_id=call_id, output="x")]),
    ]


def test_the_boundary_never_splits_a_tool_exchange() -> None:
    plain = [Message.user(f"u{i}", id=f"m{i}") for i in range(4)]
    messages = [*plain, *_exchange("c1", 4), Message.assistant("done", id="m6")]
    assert boundary(messages, keep=2) == 4  # m5 (the result) would be kept without its call m4
    assert boundary(messages, keep=1) == 6
    assert boundary(messages, keep=3) == 4
    assert boundary(messages, keep=7) == 0
    assert boundary(_exchange("c1", 0), keep=1) == 0  # nothing can be cut


async def test_a_summary_boundary_keeps_the_exchange_together(tmp_path: Path) -> None:
    memory = await Memory.open(f"sqlite:///{tmp_path / 's.db'}")
    await _say(memory, 0, 8)
    await memory.save_messages([*_exchange("c1", 8), Message.assistant("found it " * 20, id="m10")],
                               thread_id="t", resource_id="ada")
    model = ScriptedModel([ModelResponse(text="the summary")])
    saved = await summarize_if_needed(memory, model, thread_id="t", resource_id="ada",
                                      options=SummaryOptions(trigger_tokens=100, keep_messages=2))
    assert saved is not None and saved.through_message_id == "m7"  # not m8: its result is kept
    await memory.close()


def test_transcript_names_speakers_and_tools() -> None:
    messages = [Message.user("hi", metadata={"name": "Ada"}), *_exchange("c1", 1)]
    assert transcript(messages) == 'user (Ada): hi\n\nassistant: → lookup({})\n\ntool: ← x'
