"""The demo: facts taught in one thread reach the model in a new thread."""

from __future__ import annotations

from pathlib import Path

from memvault import Memory, MemoryOptions
from memvault.demo import run as script


async def test_facts_from_the_first_thread_reach_the_model_in_a_new_thread(tmp_path: Path) -> None:
    options = MemoryOptions(working_memory=script.PROFILE)
    async with await Memory.open(f"sqlite:///{tmp_path}/demo.db", options=options) as memory:
        turns = await script.run(memory)
        note = await memory.get_working_memory(resource_id=script.RESOURCE)
        first = await memory.get_messages(thread_id="first-visit", resource_id=script.RESOURCE)
        thread = await memory.get_thread(thread_id="first-visit", resource_id=script.RESOURCE)

    assert thread is not None and thread.title == "Hi! I'm Ada. I prefer"  # made in the background

    assert note is not None
    assert "Ada" in note and "green tea" in note and "Kyoto" in note
    # the first thread holds the tool calls paired with their results, in order
    calls = [c.tool_call_id for m in first for c in m.tool_calls]
    results = [r.tool_call_id for m in first for r in m.tool_results]
    assert len(calls) == 2 and calls == results
    assert [m.seq for m in first] == list(range(1, len(first) + 1))

    last = turns[-1]
    assert last.thread_id == "weeks-later"
    system, recalled, *rest = last.model_input
    assert system["role"] == "system"
    assert "Name: Ada" in system["content"] and "green tea" in system["content"]
    assert recalled["role"] == "system" and "(earlier conversation, " in recalled["content"]
    assert "Kyoto" in recalled["content"]
    assert rest == [{"role": "user", "content": script.CONVERSATIONS[-1][1]}]
    assert {h.thread_id for h in last.recalled} == {"first-visit"}
    assert [kind for kind, _ in script.describe(last)] == ["user", "assistant"]
