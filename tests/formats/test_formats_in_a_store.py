"""Anthropic and Responses conversations saved to a real SQLite file (and PostgreSQL) and read
back: what the converters keep in metadata survives the store, and the history window feeds
them back whole."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memvault import Memory
from memvault.formats import from_anthropic, from_responses, to_anthropic, to_responses
from store_urls import drop_store, store_url

ANTHROPIC = [
    {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    },
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Use the tool.", "signature": "EqQBCgIYAhIM"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow", "is_error": False}],
    },
    {"role": "assistant", "content": "Snow in Oslo."},
]
RESPONSES = [
    {"role": "developer", "content": "Be brief."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Use the tool."}],
        "encrypted_content": "gAAAA",
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Oslo"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "snow"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Snow in Oslo.", "annotations": []}],
    },
]


@pytest.fixture(params=["sqlite", "postgres"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    url, base, schema = store_url(request.param, tmp_path, "the formats over PostgreSQL")
    try:
        async with await Memory.open(url) as opened:
            yield opened
    finally:
        await drop_store(base, schema)


async def test_conversations_come_back_from_the_store_exactly(memory: Memory) -> None:
    await memory.save_messages(from_anthropic(ANTHROPIC), thread_id="claude", resource_id="ada")
    await memory.save_messages(from_responses(RESPONSES), thread_id="gpt", resource_id="ada")
    assert to_anthropic(await memory.get_messages(thread_id="claude", resource_id="ada")) == ANTHROPIC
    assert to_responses(await memory.get_messages(thread_id="gpt", resource_id="ada")) == RESPONSES
    window = await memory.get_history(thread_id="claude", resource_id="ada", last_n=3)
    assert to_anthropic(window) == ANTHROPIC[2:]  # the call and its result stay together
    hits = await memory.search_messages(resource_id="ada", query="Oslo")
    assert {h.message.thread_id for h in hits} == {"claude", "gpt"}
