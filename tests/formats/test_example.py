"""examples/formats_round_trip.py runs as a user would run it: a real subprocess, an Anthropic
conversation kept in a SQLite file and written back in three formats."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from memvault import Memory

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "formats_round_trip.py"


def test_the_formats_example_keeps_the_conversation_and_writes_it_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/formats.db"
    done = subprocess.run([sys.executable, str(EXAMPLE), url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "stored: user, assistant, tool, assistant",
        "anthropic round trip exact: True",
        'responses: ["message", "function_call", "function_call_output", "message"]',
        'chat: ["user", "assistant", "tool", "assistant"]',
    ]

    async def stored() -> list[str]:
        async with await Memory.open(url) as memory:
            return [m.text for m in await memory.get_messages(thread_id="oslo", resource_id="ada")]

    texts = asyncio.run(stored())
    assert texts[0] == "Weather in Oslo?" and texts[-1] == "It is snowing in Oslo."
