"""Recall tests run over the reference in-memory store and SQLite, through ``Memory``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.recall import RecallResult


@pytest.fixture(params=["memory", "sqlite"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'recall.db'}"
    opened = await Memory.open(url)
    try:
        yield opened
    finally:
        await opened.close()


BASE = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


async def save_thread(
    memory: Memory,
    thread_id: str,
    texts: list[str],
    *,
    resource_id: str = "ada",
    start: datetime = BASE,
    names: list[str] | None = None,
) -> list[Message]:
    """Save alternating user/assistant messages with ids ``<thread>-<i>``, a minute apart."""
    messages = [
        Message(
            id=f"{thread_id}-{i}",
            role="user" if i % 2 == 0 else "assistant",
            parts=[{"type": "text", "text": text}],
            created_at=start + timedelta(minutes=i),
            metadata={"name": names[i % len(names)]} if names else {},
        )
        for i, text in enumerate(texts)
    ]
    return await memory.save_messages(messages, thread_id=thread_id, resource_id=resource_id)


FILLER = [
    "The weather was grey all morning.",
    "I repainted the fence on Saturday.",
    "We watched a film about mountains.",
    "My sister called about the holidays.",
    "The bakery on the corner closed early.",
    "I need to renew my passport soon.",
    "The train was late again today.",
    "We cooked a big pot of soup.",
]


def hit_ids(result: RecallResult) -> list[str]:
    """The ids of a recall's hits, best first."""
    return [h.message.id for h in result.hits]
