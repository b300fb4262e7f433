"""``memvault mcp`` over a real stdio subprocess, driven by the SDK's own client: the tools and
their schemas, a round trip whose data is then read back from the SQLite file directly, and
the working memory (the resource's and a thread's)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from mcp_helpers import server_args, stdio_session, structured, text

from memvault import Memory

TOOLS = {"save_message", "list_threads", "read_thread", "search", "recall", "get_working_memory",
         "update_working_memory"}


async def test_tools_are_listed_with_described_typed_schemas(db_url: str) -> None:
    async with stdio_session(db_url) as session:
        listed = (await session.list_tools()).tools
    tools = {tool.name: tool for tool in listed}
    assert set(tools) == TOOLS
    for tool in listed:
        assert tool.description and len(tool.description) > 30, tool.name
        assert tool.output_schema is not None, tool.name
        properties = tool.input_schema["properties"]
        assert not any("resource" in name for name in properties), tool.name  # never an argument
        for name, schema in properties.items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
    save = tools["save_message"].input_schema
    assert set(save["required"]) == {"thread_id", "text"}
    assert save["properties"]["role"]["enum"] == ["user", "assistant", "system"]
    assert save["properties"]["text"]["type"] == "string"
    assert tools["recall"].input_schema["properties"]["top_k"]["maximum"] == 20
    assert tools["recall"].input_schema["required"] == ["query"]
    update = tools["update_working_memory"].input_schema
    assert update["properties"]["mode"]["enum"] == ["append", "replace"]
    assert update["properties"]["mode"]["default"] == "append"
    assert tools["list_threads"].input_schema.get("required", []) == []


async def test_round_trip_lands_in_the_store_for_the_resource(db_url: str) -> None:
    async with stdio_session(db_url) as session:
        first = structured(await session.call_tool(
            "save_message", {"thread_id": "t1", "text": "I love green tea, especially sencha."}))
        second = structured(await session.call_tool(
            "save_message", {"thread_id": "t1", "text": "Noted: sencha it is.", "role": "assistant"}))
        assert (first["seq"], second["seq"]) == (1, 2)
        assert first["thread_id"] == "t1" and first["id"] != second["id"]
        structured(await session.call_tool(
            "save_message", {"thread_id": "t2", "text": "My cat is called Turing."}))

        threads = structured(await session.call_tool("list_threads", {}))
        assert [t["id"] for t in threads["threads"]] == ["t2", "t1"]  # most recently active first
        page = structured(await session.call_tool("list_threads", {"limit": 1}))
        assert [t["id"] for t in page["threads"]] == ["t2"] and page["next_cursor"]
        rest = structured(await session.call_tool("list_threads", {"limit": 1,
                                                                   "cursor": page["next_cursor"]}))
        assert [t["id"] for t in rest["threads"]] == ["t1"]

        read = structured(await session.call_tool("read_thread", {"thread_id": "t1"}))
        assert [(m["seq"], m["role"], m["text"]) for m in read["messages"]] == [
            (1, "user", "I love green tea, especially sencha."), (2, "assistant", "Noted: sencha it is.")]
        last = structured(await session.call_tool("read_thread", {"thread_id": "t1", "last_n": 1}))
        assert [m["seq"] for m in last["messages"]] == [2]

        found = structured(await session.call_tool("search", {"query": "sencha"}))
        assert {h["message"]["id"] for h in found["hits"]} == {first["id"], second["id"]}
        assert all(h["score"] >= 0 for h in found["hits"])
        only_t2 = structured(await session.call_tool("search", {"query": "sencha", "thread_id": "t2"}))
        assert only_t2["hits"] == []

        recalled = structured(await session.call_tool(
            "recall", {"query": "What is the name of my cat?", "thread_id": "t1", "top_k": 3}))
        best = recalled["hits"][0]
        assert best["message"]["text"] == "My cat is called Turing."
        assert best["thread_id"] == "t2" and best["other_thread"] is True
        assert best["source"] == "lexical" and best["score"] > 0 and best["created_at"]
        assert len(recalled["hits"]) <= 3

        empty = structured(await session.call_tool("get_working_memory", {}))
        assert empty == {"thread_id": None, "content": None}
        structured(await session.call_tool("update_working_memory", {"content": "Likes sencha."}))
        note = structured(await session.call_tool("update_working_memory", {"content": "Cat: Turing."}))
        assert note["content"] == "Likes sencha.\nCat: Turing."  # append is the default
        assert structured(await session.call_tool("get_working_memory", {}))["content"] == note["content"]
        per_thread = structured(await session.call_tool(
            "update_working_memory", {"content": "Talking about tea.", "thread_id": "t1"}))
        assert per_thread == {"thread_id": "t1", "content": "Talking about tea."}
        assert structured(await session.call_tool("get_working_memory", {"thread_id": "t1"})) == per_thread
        replaced = structured(await session.call_tool(
            "update_working_memory", {"content": "Likes matcha.", "mode": "replace"}))
        assert replaced["content"] == "Likes matcha."

    async with await Memory.open(db_url) as memory:  # the file, read directly
        saved = await memory.get_messages(thread_id="t1", resource_id="ada")
        assert [(m.id, m.role, m.text) for m in saved] == [
            (first["id"], "user", "I love green tea, especially sencha."),
            (second["id"], "assistant", "Noted: sencha it is.")]
        assert [m.text for m in await memory.get_messages(thread_id="t2", resource_id="ada")] == [
            "My cat is called Turing."]
        assert await memory.get_working_memory(resource_id="ada") == "Likes matcha."
        assert await memory.get_working_memory(resource_id="bob") == "Bob likes zeppelins"
        threads = await memory.list_threads(resource_id="ada")
        assert {t.id for t in threads.threads} == {"t1", "t2"}


async def test_results_carry_text_content_too(db_url: str) -> None:
    """Clients that ignore structured content still get the result as JSON text."""
    async with stdio_session(db_url) as session:
        result = await session.call_tool("save_message", {"thread_id": "t1", "text": "hello"})
    assert json.loads(text(result)) == result.structured_content


def test_stdout_carries_nothing_but_the_protocol(db_url: str) -> None:
    """Raw JSON-RPC over the pipes: every line on stdout is a JSON-RPC message, even when tools
    fail; logs (if any) go to stderr."""
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "save_message", "arguments": {"thread_id": "t1", "text": ""}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "read_thread", "arguments": {"thread_id": "bob-t"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "save_message", "arguments": {"thread_id": "t1", "text": "hello"}}},
    ]
    process = subprocess.Popen([sys.executable, *server_args("ada", db_url)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    try:
        for request in requests:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            if "id" in request:
                line = process.stdout.readline()
                answer = json.loads(line)
                assert answer["jsonrpc"] == "2.0"
                answers[answer["id"]] = answer
        rest, _ = process.communicate(timeout=30)  # closes stdin
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0  # it stops cleanly when its client closes stdin
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines() if line.strip())
    assert answers[1]["result"]["serverInfo"]["name"] == "memvault"
    assert answers[2]["result"]["isError"] is True and answers[3]["result"]["isError"] is True
    assert answers[4]["result"]["structuredContent"]["seq"] == 1
