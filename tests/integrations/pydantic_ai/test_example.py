"""examples/pydantic_ai_history.py runs as a user would run it: a real subprocess, a Pydantic AI
agent keeping its history in a SQLite file, recall bringing back an older conversation."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from memvault import Memory

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "pydantic_ai_history.py"


def test_the_pydantic_ai_example_keeps_and_recalls_the_conversation(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/pydantic_ai.db"
    done = subprocess.run([sys.executable, str(EXAMPLE), url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the first run recalled the older thread's cat; the second was given the first run's messages
    assert lines[0] == "It is snow in Oslo. (I was given 3 messages; recalled the cat: True.)"
    assert lines[1].startswith("It is snow in Rome. (I was given 7 messages;")
    assert lines[2] == "stored: user, assistant, tool, assistant, user, assistant, tool, assistant"

    async def stored() -> list[str]:
        async with await Memory.open(url) as memory:
            return [m.text for m in await memory.get_messages(thread_id="chat-1", resource_id="ada")]

    texts = asyncio.run(stored())
    assert texts[0] == "What is the weather in Oslo?" and texts[4] == "And in Rome?"
