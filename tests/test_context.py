"""Context assembly over a real SQLite memory: system text with working memory, the summary
once under its marker, recalled messages marked with where and when, the history after the
summary, all within the token budget and never splitting a tool exchange."""

from __future__ import annotations

from datetime import UTC, datetime

from memvault import Memory, Message, ToolCallPart, ToolResultPart
from memvault.runtime.context import RECALL_MARKER, SUMMARY_MARKER, ContextOptions, assemble

OLD = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


async def _talk(memory: Memory, thread: str, texts: list[str], **fields: object) -> None:
    await memory.save_messages(
        [Message(role="user" if i % 2 == 0 else "assistant", id=f"{thread}-{i}",
                 parts=[{"type": "text", "text": t}], **fields)  # type: ignore[arg-type]
         for i, t in enumerate(texts)],
        thread_id=thread, resource_id="ada")


def contents(messages: list[dict[str, object]]) -> list[str]:
    return [str(m.get("content")) for m in messages]


async def test_system_working_memory_and_history(memory: Memory) -> None:
    await memory.update_working_memory("- Name: Ada", resource_id="ada")
    await _talk(memory, "now", ["hello", "hi Ada", "what's new?"])
    context = await assemble(memory, thread_id="now", resource_id="ada", query="what's new?",
                             options=ContextOptions(instructions="Be brief."))
    first = context.messages[0]
    assert first["role"] == "system"
    assert str(first["content"]).startswith("Be brief.") and "- Name: Ada" in str(first["content"])
    assert context.messages[1:] == [{"role": "user", "content": "hello"},
                                    {"role": "assistant", "content": "hi Ada"},
                                    {"role": "user", "content": "what's new?"}]
    assert context.working_memory == "- Name: Ada"
    assert context.recalled == []


async def test_the_summary_is_fed_once_and_the_history_starts_after_it(memory: Memory) -> None:
    await _talk(memory, "now", [f"turn {i} about nothing" for i in range(8)])
    await memory.save_summary("Ada and the assistant chatted (turns 0-4).", thread_id="now",
                              resource_id="ada", through_message_id="now-4", expected_version=None)
    context = await assemble(memory, thread_id="now", resource_id="ada", query="turn 7 about nothing",
                             options=ContextOptions(recall=False))
    texts = contents(context.messages)
    assert sum(SUMMARY_MARKER in t for t in texts) == 1
    assert texts[1].endswith("Ada and the assistant chatted (turns 0-4).")
    assert [m.id for m in context.history] == ["now-5", "now-6", "now-7"]


async def test_recalled_messages_say_where_and_when(memory: Memory) -> None:
    await _talk(memory, "old", ["I adopted a cat named Mochi", "Lovely name!", *["filler"] * 12],
                created_at=OLD)
    await _talk(memory, "now", ["what is my cat called?"])
    context = await assemble(memory, thread_id="now", resource_id="ada", query="what is my cat called?")
    recalled = [t for t in contents(context.messages) if RECALL_MARKER in t]
    assert len(recalled) == 1
    assert "(earlier conversation, 2023-05-08)" in recalled[0]
    assert "I adopted a cat named Mochi" in recalled[0]
    assert context.messages[-1] == {"role": "user", "content": "what is my cat called?"}
    assert context.recalled and context.recalled[0].thread_id == "old"


async def test_the_budget_is_kept_newest_history_first(memory: Memory) -> None:
    await _talk(memory, "old", ["my cat Mochi likes tuna " * 20], created_at=OLD)
    await _talk(memory, "now", [f"message {i} " + "word " * 40 for i in range(10)] + ["cat Mochi?"])
    for budget in (400, 800, 2_000, 10_000):
        context = await assemble(memory, thread_id="now", resource_id="ada", query="cat Mochi?",
                                 options=ContextOptions(instructions="x", max_tokens=budget,
                                                        working_memory=False))
        assert context.tokens <= budget
        assert context.history[-1].text == "cat Mochi?"  # the newest messages stay
        ids = [m.id for m in context.history]
        assert ids == sorted(ids, key=lambda i: int(i.split("-")[1]))
        assert context.dropped["history"] == 10 - len(context.history)  # the window is last_n=10
    small = await assemble(memory, thread_id="now", resource_id="ada", query="cat Mochi?",
                           options=ContextOptions(instructions="x", max_tokens=120, working_memory=False))
    large = await assemble(memory, thread_id="now", resource_id="ada", query="cat Mochi?",
                           options=ContextOptions(instructions="x", max_tokens=10_000, working_memory=False))
    assert len(small.history) < len(large.history)
    assert large.recalled and not small.recalled  # a whole hit or nothing
    assert small.dropped["recalled"] == len(large.recalled)


async def test_a_tight_budget_never_splits_a_tool_exchange(memory: Memory) -> None:
    await memory.save_messages([
        Message.user("weather in Oslo? " + "please " * 30, id="u1"),
        Message(role="assistant", id="a1",
                parts=[ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Oslo"})]),
        Message(role="tool", id="t1", parts=[ToolResultPart(tool_call_id="c1", output="snow " * 50)]),
        Message.assistant("It snows in Oslo.", id="a2"),
        Message.user("thanks", id="u2"),
    ], thread_id="now", resource_id="ada")
    for budget in range(20, 200, 10):
        context = await assemble(memory, thread_id="now", resource_id="ada", query="thanks",
                                 options=ContextOptions(instructions="x", max_tokens=budget,
                                                        working_memory=False, recall=False))
        ids = [m.id for m in context.history]
        assert ("a1" in ids) == ("t1" in ids), (budget, ids)
