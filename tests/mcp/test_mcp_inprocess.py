"""``build_server`` over a Memory the caller opened, through the SDK's in-process client: the
working-memory tools keep their meaning (no thread_id: the user's note; a thread_id: that
thread's) whatever scope the memory's own options give."""

from __future__ import annotations

from mcp.client.client import Client
from mcp_helpers import structured

from memvault import Memory
from memvault.mcp.server import build_server
from memvault.options import MemoryOptions
from memvault.rules.working_memory import WorkingMemoryOptions


async def test_working_memory_scopes_do_not_depend_on_the_memory_options(db_url: str) -> None:
    options = MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread"))
    async with await Memory.open(db_url, options=options) as memory:
        async with Client(build_server(memory, "ada")) as client:
            structured(await client.call_tool("save_message", {"thread_id": "t1", "text": "hi"}))
            structured(await client.call_tool("update_working_memory", {"content": "user note"}))
            structured(await client.call_tool("update_working_memory",
                                              {"content": "thread note", "thread_id": "t1"}))
            user = structured(await client.call_tool("get_working_memory", {}))
            thread = structured(await client.call_tool("get_working_memory", {"thread_id": "t1"}))
        assert (user["content"], thread["content"]) == ("user note", "thread note")
        assert await memory.get_working_memory(resource_id="ada", thread_id="t1") == "thread note"
        assert await memory.get_working_memory(resource_id="bob", thread_id="t1") is None
