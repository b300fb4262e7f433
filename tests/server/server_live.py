"""Helpers of the server tests: a real uvicorn server on 127.0.0.1 (a free port) in a background
thread, over a SQLite file, with resource B's distinctive data and keys for B, an admin and fresh
resources (the ``live`` fixture in conftest.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from memvault import Memory, Message
from memvault.model import ToolCallPart, ToolResultPart
from memvault.options import MemoryOptions
from memvault.rules.working_memory import WorkingMemoryOptions
from memvault.server import Keyring
from memvault.server.run import bind, port_of, serve

B = "bob"
B_WORDS = ("quetzal", "xylophone", "bob")
"""Words found only in B's data: no answer to another resource may contain them."""
B_THREAD = "tb"


def run(work: Any) -> Any:
    return asyncio.run(work)


async def seed_b(url: str) -> dict[str, str]:
    """B's thread (title, metadata, text and tool messages), working memories and a state."""
    async with await Memory.open(url) as memory:
        await memory.create_thread(resource_id=B, thread_id=B_THREAD, title="Bob's quetzal plans",
                                   metadata={"codename": "xylophone"})
        saved = await memory.save_messages([
            Message.user("the quetzal hides behind the xylophone", id="mb1"),
            Message(role="assistant", id="mb2", parts=[
                ToolCallPart(tool_call_id="c1", name="find", args={"what": "quetzal"})]),
            Message(role="tool", id="mb3", parts=[
                ToolResultPart(tool_call_id="c1", name="find", output={"where": "xylophone"})]),
        ], thread_id=B_THREAD, resource_id=B)
        await memory.update_working_memory("Bob keeps a quetzal", resource_id=B)
        await memory.set_state({"quetzal": 1}, resource_id=B, key="run1")
        await memory.set_state({"xylophone": 2}, resource_id=B, key="run2", status="suspended",
                               workflow_id="wf-b", thread_id=B_THREAD)
    async with await Memory.open(url, options=MemoryOptions(
            working_memory=WorkingMemoryOptions(scope="thread"))) as memory:
        await memory.update_working_memory("xylophone notes", resource_id=B, thread_id=B_THREAD)
    return {"thread": B_THREAD, "message": saved[0].id}


async def new_key(url: str, resource_id: str | None, name: str | None = None) -> str:
    async with await Memory.open(url) as memory:
        secret, _ = await Keyring(memory).create(resource_id=resource_id, name=name)
        return secret


@dataclass
class Live:
    """The running server: its base URL and store URL, and keys."""

    base: str
    db: str
    app: Any
    b_key: str
    admin_key: str
    server: uvicorn.Server | None = None
    _count: list[int] = field(default_factory=lambda: [0])

    def key(self, resource_id: str | None = None, name: str | None = None) -> str:
        """A new key, for a fresh resource by default."""
        if resource_id is None:
            self._count[0] += 1
            resource_id = f"a{self._count[0]}"
        return str(run(new_key(self.db, resource_id, name)))

    def client(self, key: str | None, **headers: str) -> httpx.Client:
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.base, headers={**auth, **headers}, timeout=30)


@contextmanager
def live_server(db: str) -> Iterator[Live]:
    """A real server over the store at ``db``, seeded with B's data, with keys for B and an admin."""
    run(seed_b(db))
    b_key, admin_key = run(new_key(db, B, "bob's key")), run(new_key(db, None, "root"))
    base, server, thread = start(db)
    try:
        yield Live(base, db, server.config.app, b_key, admin_key, server)
    finally:
        stop(server, thread)


def start(url: str, **options: Any) -> tuple[str, uvicorn.Server, threading.Thread]:
    """Serve the store at ``url`` on a free port in a thread; returns the base URL."""
    sock = bind("127.0.0.1", 0)
    servers: list[uvicorn.Server] = []
    thread = threading.Thread(target=lambda: asyncio.run(serve(
        url, sock, log_level="warning", on_server=servers.append, **options)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (servers and servers[0].started):
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    return f"http://127.0.0.1:{port_of(sock)}", servers[0], thread


def stop(server: uvicorn.Server, thread: threading.Thread) -> None:
    server.should_exit = True
    thread.join(30)


def b_snapshot(live: Live) -> str:
    """Everything B has, as B's key reads it: compared before and after another resource's calls."""
    with live.client(live.b_key) as b:
        parts = [b.get(path, params=params).text for path, params in (
            ("/v1/threads", {}), (f"/v1/threads/{B_THREAD}", {}), (f"/v1/threads/{B_THREAD}/messages", {}),
            ("/v1/working-memory", {}), ("/v1/working-memory", {"thread_id": B_THREAD}),
            ("/v1/stats", {}), ("/v1/states", {}))]
        # BM25 scores follow the whole index's word statistics: compare what is found, not its score
        found = b.get("/v1/search", params={"q": "quetzal"}).json()["hits"]
        parts.append(str([hit["message"] for hit in found]))
    assert "quetzal" in parts[2]
    return "\n".join(parts)


Check = Callable[[httpx.Response], None]


def no_b(response: httpx.Response) -> None:
    """The answer is not a server fault and shows nothing of B's."""
    assert response.status_code < 500, response.text
    text = response.text.lower()
    assert not any(word in text for word in B_WORDS), text
