"""``memvault mcp --transport http``: a real subprocess serving streamable HTTP on 127.0.0.1,
driven by the SDK's streamable HTTP client with a key of the served resource (no key, an
unknown key, an admin key and another resource's key are refused)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import BOB_SECRET, dump, server_args, structured, text

from memvault import Memory
from memvault.server.keys import Keyring
from processes import free_port, stop


def _wait_for(port: int, process: subprocess.Popen[bytes], stderr: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited: {stderr.read_text()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"the server did not listen within 30 s: {stderr.read_text()}")


async def _key(db_url: str, resource_id: str | None) -> str:
    async with await Memory.open(db_url) as memory:
        secret, _ = await Keyring(memory).create(resource_id=resource_id)
        return secret


def _client(key: str | None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"} if key else {},
                              timeout=httpx2.Timeout(30, read=300))


@pytest.fixture
def http_server(db_url: str, tmp_path: Path) -> Iterator[str]:
    """The URL of ``memvault mcp --transport http`` for ada, running as a subprocess."""
    port = free_port()
    stderr = tmp_path / "http.stderr"
    with stderr.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, *server_args("ada", db_url, "--transport", "http", "--port", str(port))],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    try:
        _wait_for(port, process, stderr)
        assert f"http://127.0.0.1:{port}/mcp" in stderr.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


async def test_tools_over_streamable_http(http_server: str, db_url: str) -> None:
    ada = _client(await _key(db_url, "ada"))
    async with streamable_http_client(http_server, http_client=ada) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"save_message", "search", "recall", "list_threads"} <= names
        saved = structured(await session.call_tool(
            "save_message", {"thread_id": "web", "text": "Ada prefers oolong over HTTP"}))
        assert saved["seq"] == 1
        hits = structured(await session.call_tool("search", {"query": "oolong"}))["hits"]
        assert [h["message"]["id"] for h in hits] == [saved["id"]]
        threads = structured(await session.call_tool("list_threads", {}))["threads"]
        assert [t["id"] for t in threads] == ["web"]
        leak = await session.call_tool("recall", {"query": "zeppelin secret plans"})
        assert BOB_SECRET not in dump(leak)
        missing = await session.call_tool("read_thread", {"thread_id": "bob-t"})
        assert missing.is_error and "was not found" in text(missing)
    ada2 = _client(await _key(db_url, "ada"))
    async with streamable_http_client(http_server, http_client=ada2) as (read, write), \
            ClientSession(read, write) as session:  # a second session, with another key of ada
        await session.initialize()
        threads = structured(await session.call_tool("list_threads", {}))["threads"]
        assert [t["id"] for t in threads] == ["web"]
    async with await Memory.open(db_url) as memory:
        assert [m.text for m in await memory.get_messages(thread_id="web", resource_id="ada")] == [
            "Ada prefers oolong over HTTP"]


@pytest.mark.parametrize("whose", ["none", "unknown", "bob", "admin"])
async def test_a_caller_without_a_key_of_the_resource_is_refused(
    http_server: str, db_url: str, whose: str
) -> None:
    key = {"none": None, "unknown": "mv_0000_notakey", "bob": await _key(db_url, "bob"),
           "admin": await _key(db_url, None)}[whose]
    async with _client(key) as raw:  # the transport's own endpoint, as any HTTP client sees it
        answer = await raw.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Accept": "application/json, text/event-stream"})
        assert (answer.status_code, answer.headers["www-authenticate"]) == (401, "Bearer")
    with pytest.raises(Exception):  # noqa: B017, PT011 - the official client cannot start a session
        async with streamable_http_client(http_server, http_client=_client(key)) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
    async with await Memory.open(db_url) as memory:  # nothing was written for ada
        assert (await memory.list_threads(resource_id="ada")).threads == []


async def test_message_limits_agree_with_stdio(http_server: str, db_url: str) -> None:
    """Over HTTP as over stdio: a 6 MiB message is saved, one over memvault's 10 MiB limit is a
    tool error naming the limit (not the transport's HTTP 413), and nothing is written."""
    ada = _client(await _key(db_url, "ada"))
    async with streamable_http_client(http_server, http_client=ada) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        big = structured(await session.call_tool("save_message",
                                                 {"thread_id": "big", "text": "x" * (6 << 20)}))
        assert big["seq"] == 1
        refused = await session.call_tool("save_message", {"thread_id": "big", "text": "y" * (11 << 20)})
        assert refused.is_error and "max_message_bytes" in text(refused), text(refused)[:300]
    async with await Memory.open(db_url) as memory:
        assert await memory.count_messages(thread_id="big", resource_id="ada") == 1


async def test_results_fit_a_default_client(http_server: str, db_url: str) -> None:
    """A thread of large messages is read within the result budget: each message's text cut to
    64 KiB (``truncated``), older messages left out and counted (``omitted``), so the result
    fits the official client's default limit; the stored messages are whole."""
    from memvault.mcp.server import MAX_MESSAGE_BYTES, MAX_RESULT_BYTES

    ada = _client(await _key(db_url, "ada"))
    async with streamable_http_client(http_server, http_client=ada) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        for i in range(12):
            structured(await session.call_tool("save_message", {"thread_id": "long",
                                                                "text": f"{i} " + "北" * 40_000}))
        shown = structured(await session.call_tool("read_thread", {"thread_id": "long", "last_n": 12}))
        sizes = [len(m["text"].encode()) for m in shown["messages"]]
        assert all(m["truncated"] for m in shown["messages"]) and max(sizes) <= MAX_MESSAGE_BYTES
        assert sum(sizes) <= MAX_RESULT_BYTES and shown["omitted"] == 12 - len(sizes) > 0
        assert shown["messages"][-1]["text"].startswith("11 ")  # the newest are kept
        hits = structured(await session.call_tool("search", {"query": "北", "limit": 12}))
        assert len(hits["hits"]) + hits["omitted"] == 12
    async with await Memory.open(db_url) as memory:
        stored = await memory.get_messages(thread_id="long", resource_id="ada")
        assert [len(m.text) for m in stored] == [len(f"{i} ") + 40_000 for i in range(12)]
