"""An OpenAI Agents SDK agent whose conversation memvault keeps, against a model server on
loopback: run ``python examples/agents_sdk_loopback.py`` (needs ``pip install
'memvault[agents]'``; nothing leaves this machine).

The "model" is a tiny OpenAI-compatible chat-completions server started on 127.0.0.1 in this
process: it answers each request by quoting the first user message it was sent and counting the
messages, so the second run shows that the session fed the first run's history back. Point
``base_url`` at a real server (and drop ``serve_model``) to use a real model.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI

from memvault import Memory
from memvault.integrations.openai_agents import MemvaultSession


class ChatCompletions(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``, answered whole (no streaming)."""

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        said = [m["content"] for m in request["messages"] if m["role"] == "user"]
        text = f"You first said {said[0]!r}; I was sent {len(request['messages'])} messages."
        body = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # keep the example's output clean
        pass


def serve_model() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def main(db: str) -> None:
    server = serve_model()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="unused")
    agent = Agent(name="assistant", instructions="Be brief.",
                  model=OpenAIChatCompletionsModel(model="loopback", openai_client=client))
    config = RunConfig(tracing_disabled=True)
    try:
        async with await Memory.open(db) as memory:
            session = MemvaultSession("chat-1", memory, resource_id="ada")
            for said in ("Hi, I'm Ada and I like green tea.", "What do I like?"):
                result = await Runner.run(agent, said, session=session, run_config=config)
                print(f"user: {said}\nagent: {result.final_output}")
            print("stored in memvault:")
            for message in await memory.get_messages(thread_id="chat-1", resource_id="ada"):
                print(f"  {message.seq} {message.role}: {message.text}")
    finally:
        server.shutdown()


if __name__ == "__main__":
    folder = tempfile.mkdtemp(prefix="memvault-example-")
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else f"sqlite:///{Path(folder) / 'agents.db'}"))
