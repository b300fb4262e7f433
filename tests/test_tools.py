"""Memory tools run against a real SQLite memory: definitions a model can take, an executor
that applies updates, reads and searches, and turns the model's mistakes into error results."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memvault import Memory, Message
from memvault.llm import ToolCall
from memvault.runtime.tools import MemoryTools


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(id=f"call-{name}", name=name, args=dict(args))


def test_definitions_are_openai_function_tools(memory: Memory) -> None:
    tools = MemoryTools(memory, resource_id="ada", thread_id="t1")
    names = [d["function"]["name"] for d in tools.definitions()]
    assert names == ["update_working_memory", "get_working_memory", "search_memory"]
    for definition in tools.definitions():
        assert definition["type"] == "function"
        assert definition["function"]["parameters"]["type"] == "object"
    update = tools.definitions()[0]["function"]["parameters"]["properties"]["mode"]
    assert update["default"] == "append" and "dangerous" in update["description"]
    assert all(tools.handles(n) for n in names) and not tools.handles("weather")


async def test_update_appends_by_default_and_get_reads_it(memory: Memory) -> None:
    tools = MemoryTools(memory, resource_id="ada", thread_id="t1")
    empty = await tools.execute(call("get_working_memory"))
    assert empty.output == "(the working memory is empty)" and not empty.is_error
    first = await tools.execute(call("update_working_memory", memory="- Name: Ada"))
    second = await tools.execute(call("update_working_memory", memory="- Likes: matcha"))
    assert not first.is_error and not second.is_error
    assert second.tool_call_id == "call-update_working_memory"
    note = await memory.get_working_memory(resource_id="ada")
    assert note is not None and "Name: Ada" in note and "Likes: matcha" in note
    read = await tools.execute(call("get_working_memory"))
    assert read.output == note
    replaced = await tools.execute(call("update_working_memory", memory="- Name: Ada L.", mode="replace"))
    assert not replaced.is_error
    assert await memory.get_working_memory(resource_id="ada") == "- Name: Ada L."


async def test_search_memory_finds_other_threads_with_their_date(memory: Memory) -> None:
    when = datetime(2024, 5, 8, 13, 0, tzinfo=UTC)
    await memory.save_messages([Message.user("I adopted a cat named Mochi", created_at=when),
                                Message.assistant("What a lovely name!", created_at=when)],
                               thread_id="old", resource_id="ada")
    await memory.save_messages([Message.user("bob's cat is Tom")], thread_id="old", resource_id="bob")
    tools = MemoryTools(memory, resource_id="ada", thread_id="now")
    result = await tools.execute(call("search_memory", query="what is my cat called?", top_k=3))
    assert not result.is_error
    assert isinstance(result.output, list) and result.output
    first = result.output[0]
    assert first["thread_id"] == "old" and first["other_conversation"] is True
    assert first["date"].startswith("2024-05-08")
    texts = [m["text"] for hit in result.output for m in hit["messages"]]
    assert "I adopted a cat named Mochi" in texts and not any("Tom" in t for t in texts)


@pytest.mark.parametrize(("name", "args", "says"), [
    ("update_working_memory", {}, "needs `memory`"),
    ("update_working_memory", {"memory": "x", "mode": "erase"}, "mode must be"),
    ("update_working_memory", {"memory": "nul\x00byte"}, "NUL"),
    ("search_memory", {}, "non-empty `query`"),
    ("search_memory", {"query": "   "}, "non-empty `query`"),
    ("search_memory", {"query": "cat", "top_k": 0}, "top_k"),
    ("search_memory", {"query": "cat", "top_k": "5"}, "top_k"),
    ("search_memory", {"query": "cat", "top_k": True}, "top_k"),
    ("weather", {"city": "Oslo"}, "unknown tool"),
])
async def test_the_models_mistakes_are_error_results(
    memory: Memory, name: str, args: dict[str, object], says: str
) -> None:
    tools = MemoryTools(memory, resource_id="ada", thread_id="t1")
    result = await tools.execute(ToolCall(id="c1", name=name, args=dict(args)))
    assert result.is_error and result.tool_call_id == "c1"
    assert says in str(result.output)
    assert await memory.get_working_memory(resource_id="ada") is None  # nothing written
