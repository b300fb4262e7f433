"""examples/llama_index_chat_store.py runs as a user would run it: a real subprocess, a LlamaIndex
chat engine whose ChatMemoryBuffer keeps the conversation in a SQLite file through memvault."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memvault.sync import Memory

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llama_index_chat_store.py"


def test_the_llama_index_example_keeps_the_conversation(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/llama.db"
    done = subprocess.run([sys.executable, str(EXAMPLE), url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "messages: 4",
        "keys: ['chat-1']",
        "found: Hi, I'm Ada and I like green tea.",
    ]
    with Memory.open(url) as memory:
        stored = memory.get_messages(thread_id="chat-1", resource_id="ada")
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[2].text == "What do I like?"
