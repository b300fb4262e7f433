"""``RecallOptions.author_key`` is the one source of the author's name: lexical recall reads it,
and the vectors are embedded with it (a function embedder records what it was given)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memvault import Memory, MemoryOptions, Message
from memvault.recall import RecallOptions

pytest.importorskip("numpy")


@pytest.mark.parametrize("key", ["name", "speaker"])
async def test_the_vectors_carry_the_name_under_author_key(key: str) -> None:
    embedded: list[str] = []

    def embed(texts: Sequence[str]) -> list[list[float]]:
        embedded.extend(texts)
        return [[1.0, float(len(t)), 0.5] for t in texts]

    options = MemoryOptions(recall=RecallOptions(author_key=key))
    async with await Memory.open("memory://", options=options, embedder=embed) as memory:
        saved = Message.user("I started cello lessons", metadata={key: "Ana", "other": "Bo"})
        await memory.save_messages([saved], thread_id="t", resource_id="ada")
        await memory.flush()
    assert "Ana: I started cello lessons" in embedded
