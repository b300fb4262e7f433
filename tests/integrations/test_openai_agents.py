"""MemvaultSession: the OpenAI Agents SDK's Session protocol over a memvault thread (real SQLite file)."""

from __future__ import annotations

import builtins
import copy
import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, Message
from memvault.errors import MissingExtraError, ValidationError
from memvault.integrations import openai_agents
from memvault.integrations.openai_agents import (
    ITEM_KEY,
    ItemNotJSONError,
    MemvaultSession,
    message_to_items,
)
from memvault.model import DataPart, ImagePart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

agents = pytest.importorskip("agents")


def _load_chat_server() -> Any:
    """tests/llm/chat_server.py, imported by file path (no package import needed)."""
    path = Path(__file__).resolve().parent.parent / "llm" / "chat_server.py"
    spec = importlib.util.spec_from_file_location("memvault_tests_chat_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    async with await Memory.open(f"sqlite:///{tmp_path}/agents.db") as opened:
        yield opened


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


MANY_KINDS: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Use metric units."}]},
    user("What's the weather in Paris?"),
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "and this picture?"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
            {"type": "input_image", "file_id": "file-abc", "detail": "auto"},
            {"type": "input_file", "file_id": "file-xyz", "filename": "notes.pdf"},
        ],
    },
    {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
        "encrypted_content": "gAAAA...",
    },
    {"id": "rs_2", "type": "reasoning", "summary": []},
    {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris", "units": ["C"]}',
        "status": "completed",
    },
    {"type": "function_call", "call_id": "call_2", "name": "echo", "arguments": "not json"},
    {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21.5, "sky": "clear"}'},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "not json"}],
    },
    {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "paris weather"},
    },
    {"type": "item_reference", "id": "msg_0"},
    {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    assistant("It is 21.5 °C and clear in Paris. 🌤", "msg_2"),
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    },
    {"role": "assistant", "content": "easy input message from the assistant"},
    {"type": "some_future_item", "payload": {"nested": [1, 2.5, None, True, "ü"]}},
]


async def test_is_an_sdk_session_and_keeps_settings(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    assert isinstance(session, agents.memory.Session)
    assert session.session_id == "s1"
    assert isinstance(session.session_settings, agents.memory.SessionSettings)
    assert session.session_settings.limit is None
    limited = MemvaultSession("s1", memory, resource_id="ada", session_settings={"limit": 2})
    assert limited.session_settings is not None and limited.session_settings.limit == 2


async def test_add_and_get_keep_order(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    assert await session.get_items() == []
    await session.add_items([user("one"), assistant("two")])
    await session.add_items([])
    await session.add_items([user("three")])
    assert await session.get_items() == [user("one"), assistant("two"), user("three")]


async def test_limit_returns_latest_in_order(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    items = [user(f"m{i}") for i in range(5)]
    await session.add_items(items)
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=1) == items[-1:]
    assert await session.get_items(limit=10) == items
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == items  # as SQLiteSession: negative means all
    limited = MemvaultSession("s1", memory, resource_id="ada", session_settings={"limit": 3})
    assert await limited.get_items() == items[-3:]
    assert await limited.get_items(limit=4) == items[-4:]  # an explicit limit wins


async def test_pop_returns_latest_and_removes_it(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    assert await session.pop_item() is None
    await session.add_items([user("one"), assistant("two"), user("three")])
    assert await session.pop_item() == user("three")
    assert await session.get_items() == [user("one"), assistant("two")]
    assert await session.pop_item() == assistant("two")
    assert await session.pop_item() == user("one")
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_clear(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    await session.clear_session()  # nothing there yet: harmless
    await session.add_items([user("one"), assistant("two")])
    await session.clear_session()
    assert await session.get_items() == []
    assert await memory.get_messages(thread_id="s1", resource_id="ada") == []
    await session.add_items([user("again")])
    assert await session.get_items() == [user("again")]


async def test_sessions_are_isolated(memory: Memory) -> None:
    first = MemvaultSession("s1", memory, resource_id="ada")
    second = MemvaultSession("s2", memory, resource_id="ada")
    other_owner = MemvaultSession("s1", memory, resource_id="bob")
    await first.add_items([user("ada s1")])
    await second.add_items([user("ada s2")])
    await other_owner.add_items([user("bob s1")])
    assert await first.get_items() == [user("ada s1")]
    assert await second.get_items() == [user("ada s2")]
    assert await other_owner.get_items() == [user("bob s1")]
    assert await other_owner.pop_item() == user("bob s1")
    await second.clear_session()
    assert await first.get_items() == [user("ada s1")]
    assert await other_owner.get_items() == []


async def test_many_kinds_round_trip_exactly(memory: Memory, tmp_path: Path) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    original = copy.deepcopy(MANY_KINDS)
    await session.add_items(MANY_KINDS)
    assert original == MANY_KINDS  # the caller's items are not changed
    assert await session.get_items() == original
    assert await session.get_items(limit=3) == original[-3:]
    # ... and from another process's view of the same file
    async with await Memory.open(f"sqlite:///{tmp_path}/agents.db") as reopened:
        again = MemvaultSession("s1", reopened, resource_id="ada")
        assert await again.get_items() == original
    for item in reversed(original):
        assert await session.pop_item() == item
    assert await session.pop_item() is None


async def test_thread_is_readable_by_memvault(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    await session.add_items(MANY_KINDS)
    messages = await memory.get_messages(thread_id="s1", resource_id="ada")
    assert [m.seq for m in messages] == sorted(m.seq for m in messages if m.seq is not None)
    by_item = {i: m for i, m in enumerate(messages)}
    assert all(message_to_items(m) == [item] for m, item in zip(messages, MANY_KINDS, strict=True))
    assert (by_item[0].role, by_item[0].text) == ("system", "Be brief.")
    assert (by_item[1].role, by_item[1].text) == ("system", "Use metric units.")
    assert (by_item[2].role, by_item[2].text) == ("user", "What's the weather in Paris?")
    picture = by_item[3].parts
    assert picture[0] == TextPart(text="and this picture?")
    assert picture[1] == ImagePart(url="data:image/png;base64,iVBORw0KGgo=", detail="low")
    assert isinstance(picture[2], DataPart) and picture[2].name == "input_image"
    assert isinstance(picture[3], DataPart) and picture[3].name == "input_file"
    assert by_item[4].parts == [ReasoningPart(text="The user wants the weather.")]
    assert isinstance(by_item[5].parts[0], DataPart) and by_item[5].parts[0].name == "reasoning"
    assert by_item[6].tool_calls == [
        ToolCallPart(tool_call_id="call_1", name="get_weather", args={"city": "Paris", "units": ["C"]})
    ]
    assert by_item[7].tool_calls[0].args == "not json"
    assert by_item[8].role == "tool"
    assert by_item[8].tool_results == [
        ToolResultPart(tool_call_id="call_1", output='{"temp": 21.5, "sky": "clear"}')
    ]
    assert by_item[10].role == "assistant" and by_item[10].parts[0] == DataPart(
        data=MANY_KINDS[10], name="web_search_call"
    )
    assert by_item[13].role == "assistant" and by_item[13].text == "It is 21.5 °C and clear in Paris. 🌤"
    hits = await memory.search_messages(resource_id="ada", query="clear Paris")
    assert by_item[13].id in {hit.message.id for hit in hits}


async def test_foreign_messages_read_as_items(memory: Memory) -> None:
    await memory.save_messages(
        [
            Message.user("hello from memvault"),
            Message(role="assistant", parts=[TextPart(text="calling"),
                                             ToolCallPart(tool_call_id="c1", name="f", args={"a": 1})]),
            Message(role="tool", parts=[ToolResultPart(tool_call_id="c1", output={"ok": True})]),
            Message(role="assistant", parts=[DataPart(data={"x": 1})]),  # no item: skipped
        ],
        thread_id="s1",
        resource_id="ada",
    )
    session = MemvaultSession("s1", memory, resource_id="ada")
    expected = [
        {"role": "user", "content": "hello from memvault"},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": '{"ok": true}'},
    ]
    assert await session.get_items() == expected
    assert await session.get_items(limit=3) == expected[-3:]  # the window widens past the skipped one
    assert await session.pop_item() == expected[-1]  # the data message is dropped on the way
    assert await session.get_items() == expected[:-1]


async def test_bad_input_is_refused_as_the_sdk_refuses_it_and_writes_nothing(memory: Memory) -> None:
    session = MemvaultSession("s1", memory, resource_id="ada")
    for bad in (b"bytes", {1, 2}, object()):
        with pytest.raises(TypeError, match="JSON-serialisable") as caught:  # as SQLiteSession
            await session.add_items([user("fine"), {"role": "user", "content": bad}])  # type: ignore[list-item]
        assert isinstance(caught.value, ItemNotJSONError) and isinstance(caught.value, ValidationError)
    with pytest.raises(ValidationError, match="4300 digits"):  # a ValueError, as SQLiteSession
        await session.add_items([user("fine"), {"role": "user", "content": 10**5000}])  # type: ignore[list-item]
    circular: dict[str, Any] = {"role": "user"}
    circular["content"] = circular
    with pytest.raises(ValidationError, match=r"[Cc]ircular"):
        await session.add_items([circular])  # type: ignore[list-item]
    assert await session.get_items() == []
    with pytest.raises(ValidationError, match="session_id"):
        MemvaultSession(3, memory, resource_id="ada")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="resource_id"):
        MemvaultSession("s1", memory, resource_id=3)  # type: ignore[arg-type]


async def test_a_message_saved_by_memvault_0x_still_reads_as_its_item(memory: Memory) -> None:
    legacy = Message(role="user", parts=[TextPart(text="hi")], metadata={ITEM_KEY: user("hi")})
    await memory.save_messages([legacy], thread_id="s1", resource_id="ada")
    session = MemvaultSession("s1", memory, resource_id="ada")
    assert await session.get_items() == [user("hi")]


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_agents(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "agents" or name.startswith("agents."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_agents)
    with pytest.raises(MissingExtraError, match=r"memvault\[agents\]") as caught:
        openai_agents.MemvaultSession("s1", None, resource_id="ada")  # type: ignore[arg-type]
    assert caught.value.extra == "agents"
    assert "openai-agents" in str(caught.value)


async def test_runner_end_to_end_over_http(memory: Memory) -> None:
    from openai import AsyncOpenAI

    chat_server = _load_chat_server()
    session = MemvaultSession("chat-1", memory, resource_id="ada")
    with chat_server.running_server() as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0)
        model = agents.OpenAIChatCompletionsModel(model="test-model", openai_client=client)
        agent = agents.Agent(name="helper", instructions="Be brief.", model=model)
        config = agents.RunConfig(tracing_disabled=True)
        server.reply("Hello Ada!")
        first = await agents.Runner.run(agent, "hi, I'm Ada", session=session, run_config=config)
        assert first.final_output == "Hello Ada!"
        server.reply("You are Ada.")
        second = await agents.Runner.run(agent, "who am I?", session=session, run_config=config)
        assert second.final_output == "You are Ada."
        await client.close()

    assert len(server.requests) == 2
    sent = [(m["role"], m["content"]) for m in server.requests[1].body["messages"]]
    texts = [(role, c if isinstance(c, str) else "".join(p.get("text", "") for p in c)) for role, c in sent]
    assert texts == [
        ("system", "Be brief."),
        ("user", "hi, I'm Ada"),
        ("assistant", "Hello Ada!"),
        ("user", "who am I?"),
    ]
    messages = await memory.get_messages(thread_id="chat-1", resource_id="ada")
    assert [(m.role, m.text) for m in messages] == [
        ("user", "hi, I'm Ada"),
        ("assistant", "Hello Ada!"),
        ("user", "who am I?"),
        ("assistant", "You are Ada."),
    ]
    items = await session.get_items()
    assert items[0] == {"role": "user", "content": "hi, I'm Ada"}
    assert [item for m in messages for item in message_to_items(m)] == items
