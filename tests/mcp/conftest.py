"""The MCP server tests' store: a SQLite file where resource bob already has data."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp_helpers import BOB_SECRET

from memvault import Memory, Message


@pytest.fixture
async def db_url(tmp_path: Path) -> str:
    """A SQLite store where resource bob already has a thread ``bob-t``, a thread ``shared``
    (an id ada will use too) and a working memory."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    async with await Memory.open(url) as memory:
        await memory.save_messages([Message.user(BOB_SECRET), Message.assistant("zeppelin noted")],
                                   thread_id="bob-t", resource_id="bob")
        await memory.save_messages([Message.user("bob in the shared thread about zeppelin")],
                                   thread_id="shared", resource_id="bob")
        await memory.update_working_memory("Bob likes zeppelins", resource_id="bob")
    return url
