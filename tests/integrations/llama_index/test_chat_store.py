"""memvault.integrations.llama_index: the chat store against LlamaIndex's own SimpleChatStore
(the same calls give the same results), inside LlamaIndex's ChatMemoryBuffer and a chat engine,
over memory://, a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore

from memvault.errors import MissingExtraError, ValidationError
from memvault.integrations.llama_index import MemvaultChatStore, to_llama_index, to_memvault
from memvault.model import ImagePart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from memvault.sync import Memory
from store_urls import drop_store, store_url


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A synchronous Memory over each store."""
    url, base, schema = store_url(request.param, tmp_path, "the LlamaIndex chat store over PostgreSQL")
    with Memory.open(url) as opened:
        yield opened
    asyncio.run(drop_store(base, schema))


def words(text: str) -> list[str]:
    """An offline tokenizer (LlamaIndex's default downloads tiktoken's encodings)."""
    return text.split()


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


# ---------------------------------------------------------------- the BaseChatStore methods


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.sampled_from("ab"), st.lists(st.text(max_size=5), max_size=3)),
        st.tuples(st.just("add"), st.sampled_from("ab"), st.text(max_size=5), st.none() | st.integers(-3, 4)),
        st.tuples(st.just("delete_messages"), st.sampled_from("ab")),
        st.tuples(st.just("delete_message"), st.sampled_from("ab"), st.integers(-4, 4)),
        st.tuples(st.just("delete_last_message"), st.sampled_from("ab")),
    ),
    max_size=8,
)


def apply(store: Any, op: tuple[Any, ...]) -> Any:
    """Run one operation; an IndexError (SimpleChatStore popping past the end) reads as None,
    which is what the memvault store returns there."""
    kind, key, *args = op
    try:
        if kind == "set":
            return store.set_messages(key, [user(t) for t in args[0]])
        if kind == "add":
            return store.add_message(key, user(args[0]), idx=args[1])
        return getattr(store, kind)(key, *args)
    except IndexError:
        return None


def test_the_same_calls_give_what_simple_chat_store_gives(memory: Memory) -> None:
    runs = 0

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(OPS)
    def check(ops: list[tuple[Any, ...]]) -> None:
        nonlocal runs
        runs += 1
        reference = SimpleChatStore()
        ours = MemvaultChatStore(memory=memory, resource_id=f"r{runs}")
        for op in ops:
            assert apply(ours, op) == apply(reference, op), op
            for key in "ab":
                assert ours.get_messages(key) == reference.get_messages(key)
        assert ours.get_keys() == reference.get_keys()

    check()


async def test_the_async_twins(memory: Memory) -> None:
    store = MemvaultChatStore(memory=memory, resource_id="ada")
    await store.aset_messages("k", [user("one"), user("two")])
    await store.async_add_message("k", user("three"))
    assert [m.content for m in await store.aget_messages("k")] == ["one", "two", "three"]
    assert (await store.adelete_message("k", 0)).content == "one"  # type: ignore[union-attr]
    assert (await store.adelete_last_message("k")).content == "three"  # type: ignore[union-attr]
    assert await store.aget_keys() == ["k"]
    assert [m.content for m in await store.adelete_messages("k") or []] == ["two"]
    assert await store.adelete_messages("k") is None
    assert await store.aget_keys() == []


# ---------------------------------------------------------------- LlamaIndex's own memory classes


def test_chat_memory_buffer_keeps_the_conversation_in_memvault(memory: Memory) -> None:
    store = MemvaultChatStore(memory=memory, resource_id="ada")
    buffer = ChatMemoryBuffer.from_defaults(
        chat_store=store, chat_store_key="chat-1", token_limit=6, tokenizer_fn=words
    )
    for text in ("my cat is called Bartholomew", "noted", "what else?", "tell me more"):
        buffer.put(user(text))
    assert [m.content for m in buffer.get_all()] == [
        "my cat is called Bartholomew",
        "noted",
        "what else?",
        "tell me more",
    ]
    assert [m.content for m in buffer.get()] == ["noted", "what else?", "tell me more"]  # within 6 words
    hits = memory.search_messages(resource_id="ada", query="Bartholomew")
    assert [h.message.text for h in hits] == ["my cat is called Bartholomew"]
    again = ChatMemoryBuffer.from_defaults(
        chat_store=MemvaultChatStore(memory=memory, resource_id="ada"),
        chat_store_key="chat-1",
        tokenizer_fn=words,
    )
    assert len(again.get_all()) == 4  # a new buffer (another process) reads the same thread
    buffer.reset()
    assert buffer.get_all() == []
    assert memory.get_thread(thread_id="chat-1", resource_id="ada") is None


def test_chat_summary_memory_buffer_rewrites_the_thread_with_its_summary(memory: Memory) -> None:
    store = MemvaultChatStore(memory=memory, resource_id="ada")
    buffer = ChatSummaryMemoryBuffer.from_defaults(
        chat_store=store,
        chat_store_key="chat-1",
        llm=MockLLM(max_tokens=3),
        token_limit=8,
        tokenizer_fn=words,
    )
    for text in ("my cat is called Bartholomew", "noted that well", "what else is new", "tell me more now"):
        buffer.put(user(text))
    fed = buffer.get()  # summarises the older messages with the LLM and stores the result
    assert [m.role.value for m in fed] == ["system", "user", "user"]
    assert [m.content for m in fed][1:] == ["what else is new", "tell me more now"]
    stored = memory.get_messages(thread_id="chat-1", resource_id="ada")
    assert [(m.role, m.text) for m in stored] == [(m.role.value, m.content) for m in fed]


async def test_a_chat_engine_with_a_buffer_over_memvault(memory: Memory) -> None:
    store = MemvaultChatStore(memory=memory, resource_id="ada")
    buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="engine", tokenizer_fn=words)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=4), memory=buffer)
    engine.chat("hello there")
    await engine.achat("and again")
    stored = memory.get_messages(thread_id="engine", resource_id="ada")
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert [stored[0].text, stored[2].text] == ["hello there", "and again"]


# ---------------------------------------------------------------- isolation and bad input


def test_another_resources_key_reads_as_missing(memory: Memory) -> None:
    ada = MemvaultChatStore(memory=memory, resource_id="ada")
    eve = MemvaultChatStore(memory=memory, resource_id="eve")
    ada.set_messages("chat-1", [user("ada's secret")])
    assert eve.get_messages("chat-1") == []
    assert eve.get_keys() == []
    assert eve.delete_messages("chat-1") is None
    assert eve.delete_message("chat-1", 0) is None
    assert eve.delete_last_message("chat-1") is None
    eve.add_message("chat-1", user("eve's own"))
    assert [m.content for m in ada.get_messages("chat-1")] == ["ada's secret"]
    assert [m.content for m in eve.get_messages("chat-1")] == ["eve's own"]
    assert memory.search_messages(resource_id="eve", query="secret") == []


def test_bad_input_is_refused_and_writes_nothing(memory: Memory) -> None:
    store = MemvaultChatStore(memory=memory, resource_id="ada")
    for key in ("", "x" * 300, 5, None):
        with pytest.raises(ValidationError):
            store.get_messages(key)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="a LlamaIndex ChatMessage"):
        store.set_messages("k", [user("fine"), {"role": "user", "content": "x"}])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="a list of ChatMessages"):
        store.set_messages("k", user("x"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="idx must be an integer"):
        store.delete_message("k", "0")  # type: ignore[arg-type]
    assert store.get_keys() == []
    with pytest.raises(ValidationError, match="resource_id"):
        MemvaultChatStore(memory=memory, resource_id="")
    with pytest.raises(ValidationError, match="synchronous memvault Memory"):
        MemvaultChatStore(memory=memory.aio, resource_id="ada")


def test_without_llama_index_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "llama_index" or n.startswith("llama_index.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    import memvault.integrations.llama_index as module

    with pytest.raises(MissingExtraError, match=r"memvault\[llama-index\]"):
        module.__getattr__("MemvaultChatStore")


# ---------------------------------------------------------------- messages, exactly

TEXT = st.text(max_size=10) | st.sampled_from(["a\x00b", "\ud800", "x\udfff"])  # NUL, lone surrogates
SAFE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | SAFE,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(SAFE, inner, max_size=2),
    max_leaves=5,
)
BLOCK = st.one_of(
    st.builds(TextBlock, text=TEXT),
    st.builds(ThinkingBlock, content=st.none() | TEXT),
    st.builds(ImageBlock, url=st.sampled_from(["https://x.example/a.png", "https://x.example/b.jpg"])),
    st.builds(
        ToolCallBlock, tool_call_id=SAFE, tool_name=SAFE, tool_kwargs=st.dictionaries(SAFE, JSON, max_size=2)
    ),
)
CHAT_MESSAGE = st.builds(
    ChatMessage,
    role=st.sampled_from(
        ["system", "developer", "user", "assistant", "tool", "function", "chatbot", "model"]
    ),
    blocks=st.lists(BLOCK, max_size=3),
    additional_kwargs=st.fixed_dictionaries({}, optional={"tool_call_id": SAFE, "name": SAFE}),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(CHAT_MESSAGE, max_size=4))
def test_property_messages_come_back_exactly(messages: list[ChatMessage]) -> None:
    converted = [to_memvault(m) for m in messages]
    assert [to_llama_index(m) for m in converted] == messages


def test_property_messages_through_a_store(memory: Memory) -> None:
    store = MemvaultChatStore(memory=memory, resource_id="ada")

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(CHAT_MESSAGE, max_size=4))
    def check(messages: list[ChatMessage]) -> None:
        store.set_messages("k", messages)
        assert store.get_messages("k") == messages

    check()


def test_the_readable_view() -> None:
    message = to_memvault(
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(content="hm"),
                TextBlock(text="Checking."),
                ImageBlock(url="https://x.example/a.png"),
                ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Oslo"}),
            ],
        )
    )
    assert message.role == "assistant"
    assert message.parts == [
        ReasoningPart(text="hm"),
        TextPart(text="Checking."),
        ImagePart(url="https://x.example/a.png"),
        ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Oslo"}),
    ]
    assert "Checking." not in message.metadata["llama_index"]  # stored once
    result = to_memvault(ChatMessage(role="tool", content="snow", additional_kwargs={"tool_call_id": "c1"}))
    assert (result.role, result.parts) == ("tool", [ToolResultPart(tool_call_id="c1", output="snow")])
