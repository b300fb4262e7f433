"""Bad input gets an error result (``isError``) with a message the model can act on, writes
nothing, and the server keeps answering. Bad command lines exit with a message on stderr."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from mcp_helpers import server_args, stdio_session, structured, text

from memvault import Memory
from memvault.options import DEFAULT_MAX_MESSAGE_BYTES

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("save_message", {"thread_id": "t1", "text": ""}, "text is empty"),
    ("save_message", {"thread_id": "t1", "text": "  \n "}, "text is empty"),
    ("save_message", {"thread_id": "t1", "text": "nul \x00 byte"}, "NUL byte"),
    ("save_message", {"thread_id": "", "text": "hi"}, "thread_id"),
    ("save_message", {"thread_id": "x" * 300, "text": "hi"}, "thread_id"),
    ("save_message", {"thread_id": "t1", "text": "hi", "role": "tool"}, "role"),
    ("save_message", {"text": "hi"}, "thread_id"),
    ("read_thread", {"thread_id": "nope"}, "'nope' was not found"),
    ("read_thread", {"thread_id": "t1", "last_n": 0}, "last_n"),
    ("search", {"query": "   "}, "query is empty"),
    ("search", {"query": "tea", "thread_id": "nope"}, "'nope' was not found"),
    ("recall", {"query": "tea", "top_k": 500}, "top_k"),
    ("recall", {"query": ""}, "query is empty"),
    ("list_threads", {"cursor": "not-a-cursor"}, "cursor"),
    ("list_threads", {"limit": 0}, "limit"),
    ("update_working_memory", {"content": "x", "mode": "merge"}, "mode"),
    ("update_working_memory", {"content": "a\x00b"}, "NUL byte"),
    ("update_working_memory", {"content": ""}, "content is empty"),
    ("get_working_memory", {"thread_id": "nope"}, "'nope' was not found"),
    ("no_such_tool", {}, "no_such_tool"),
]


async def test_bad_calls_are_error_results_and_the_server_keeps_going(db_url: str) -> None:
    async with stdio_session(db_url) as session:
        structured(await session.call_tool("save_message", {"thread_id": "t1", "text": "tea first"}))
        for tool, args, expected in BAD_CALLS:
            result = await session.call_tool(tool, args)
            assert result.is_error, (tool, args)
            assert expected in text(result), (tool, args, text(result))
        saved = structured(await session.call_tool("save_message", {"thread_id": "t1", "text": "tea again"}))
        assert saved["seq"] == 2  # nothing bad was written in between
    async with await Memory.open(db_url) as memory:
        assert [m.text for m in await memory.get_messages(thread_id="t1", resource_id="ada")] == [
            "tea first", "tea again"]
        assert await memory.get_working_memory(resource_id="ada") is None


async def test_a_message_over_the_size_limit_is_refused(db_url: str) -> None:
    async with stdio_session(db_url) as session:
        huge = "a" * (DEFAULT_MAX_MESSAGE_BYTES + 1)
        result = await session.call_tool("save_message", {"thread_id": "t1", "text": huge})
        assert result.is_error
        assert "over the limit" in text(result) and len(text(result)) < 1000
        assert structured(await session.call_tool("list_threads", {}))["threads"] == []


@pytest.mark.parametrize(("extra", "message"), [
    (["--transport", "carrier-pigeon"], "--transport must be stdio or http"),
])
def test_bad_command_lines_fail_with_a_message(db_url: str, extra: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, *server_args("ada", db_url, *extra)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and message in done.stderr and done.stdout == ""


def test_a_bad_resource_id_fails_with_a_message(db_url: str) -> None:
    done = subprocess.run([sys.executable, *server_args("x" * 300, db_url)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "--resource" in done.stderr and done.stdout == ""
