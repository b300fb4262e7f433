"""A conversation in Anthropic's Messages format kept in memvault and fed back in three formats.

Run: python examples/formats_round_trip.py [STORE_URL]   (default: sqlite:///formats.db)

It reads an Anthropic conversation with a thinking block and a tool call, saves it in a thread,
reads the thread back, and writes it as Anthropic messages (exactly what was read), as OpenAI
Responses items and as OpenAI Chat Completions messages. No model and no network.
"""

from __future__ import annotations

import asyncio
import json
import sys

from memvault import Memory
from memvault.formats import from_anthropic, to_anthropic, to_openai, to_responses

CONVERSATION = [
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Use the tool.", "signature": "EqQBCgIYAhIM"},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
    ]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It is snowing in Oslo."}]},
]


async def main(url: str) -> None:
    async with await Memory.open(url) as memory:
        await memory.save_messages(from_anthropic(CONVERSATION), thread_id="oslo", resource_id="ada")
        stored = await memory.get_messages(thread_id="oslo", resource_id="ada")
    print("stored:", ", ".join(message.role for message in stored))
    print("anthropic round trip exact:", to_anthropic(stored) == CONVERSATION)
    print("responses:", json.dumps([item.get("type") for item in to_responses(stored)]))
    print("chat:", json.dumps([message["role"] for message in to_openai(stored)]))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///formats.db"))
