"""examples/agents_sdk_loopback.py runs as a user would run it: a real subprocess, an Agents SDK
agent against its loopback model server, memvault keeping the conversation in a SQLite file."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import Memory

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agents_sdk_loopback.py"


def test_the_agents_sdk_example_keeps_the_conversation(tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="the example needs the agents extra: pip install 'memvault[agents]'")
    url = f"sqlite:///{tmp_path}/agents.db"
    done = subprocess.run([sys.executable, str(EXAMPLE), url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # the second run was sent the first run's exchange: the session fed the history back
    assert "I was sent 2 messages" in done.stdout and "I was sent 4 messages" in done.stdout

    async def stored() -> list[tuple[int | None, str, str]]:
        async with await Memory.open(url) as memory:
            return [(m.seq, m.role, m.text) for m in
                    await memory.get_messages(thread_id="chat-1", resource_id="ada")]

    rows = asyncio.run(stored())
    assert [(seq, role) for seq, role, _ in rows] == [(1, "user"), (2, "assistant"), (3, "user"),
                                                     (4, "assistant")]
    assert rows[0][2] == "Hi, I'm Ada and I like green tea." and rows[2][2] == "What do I like?"
