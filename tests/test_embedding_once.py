"""Embedding costs once per message (issue 13, point 10), counted with the stand-in embedder of
test_semantic (``Concepts``) on real SQLite files: the catch-up after opening never re-embeds a
message that a save queued, also when saves race it, and a restart embeds nothing twice. A
query without words recalls nothing by meaning either: the recent window only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from memvault import Memory, Message
from memvault.embeddings import FunctionEmbedder
from memvault.recall import RecallOptions
from test_semantic import Concepts, embedder


def _messages(prefix: str, n: int) -> list[Message]:
    return [Message.user(f"{prefix} message {i} about tea", id=f"{prefix}-{i}") for i in range(n)]


async def test_a_bulk_save_right_after_open_embeds_each_message_once(tmp_path: Path) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    await memory.save_messages(_messages("a", 1000), thread_id="t", resource_id="ada")
    await memory.flush()
    assert function.texts == 1000
    assert await memory.store.unembedded_messages() == []
    await memory.close()


class SlowConcepts(Concepts):
    """The stand-in embedder, async and a little slow: the catch-up and the saves interleave."""

    async def slow(self, texts: list[str]) -> np.ndarray:
        await asyncio.sleep(0.002)
        return self(texts)


@pytest.mark.parametrize("slow", [False, True])
async def test_saves_racing_the_catch_up_embed_each_message_once(tmp_path: Path, slow: bool) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    async with await Memory.open(url) as plain:  # saved with no embedder: the catch-up's work
        await plain.save_messages(_messages("old", 300), thread_id="t0", resource_id="ada")

    function = SlowConcepts()
    chosen = FunctionEmbedder(function.slow, model="test/concepts") if slow else embedder(function)
    memory = await Memory.open(url, embedder=chosen)
    saves = [
        memory.save_messages(_messages(f"s{i}", 10), thread_id=f"t{i % 7}", resource_id="ada")
        for i in range(100)
    ]
    await asyncio.gather(*saves)  # 1,000 messages in 100 racing saves, while the catch-up runs
    await memory.flush()
    assert function.texts == 1300  # the 1,000 saved and the 300 caught up, each once
    assert await memory.store.unembedded_messages() == []
    assert len(await memory.store.load_embeddings(limit=2000)) == 1300
    await memory.close()

    again = Concepts()
    reopened = await Memory.open(url, embedder=embedder(again))
    await reopened.save_messages(_messages("new", 10), thread_id="t", resource_id="ada")
    await reopened.flush()
    assert again.texts == 10  # after a restart, only the new messages
    await reopened.close()


async def test_the_catch_up_and_the_queue_never_embed_one_message_twice(tmp_path: Path) -> None:
    """Both orders made deterministic, as Memory.save_messages does them: a catch-up that reads
    messages between the save's commit and its enqueue leaves them to the queue; one that runs
    while they are queued skips them too."""
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    semantic = memory.semantic
    assert semantic is not None
    batch = _messages("a", 250)
    with semantic.saving("ada", "t", batch):
        committed = await memory.store.save_messages("ada", "t", batch)
        assert await semantic.catch_up() == 0  # committed, not enqueued yet: left to the queue
        semantic.enqueue(committed)
    await semantic.flush()
    assert function.texts == 250

    batch = _messages("b", 250)
    with semantic.saving("ada", "t", batch):
        semantic.enqueue(await memory.store.save_messages("ada", "t", batch))
    await semantic.catch_up()  # runs before, during or after the queue's batches
    await semantic.flush()
    assert function.texts == 500
    assert await memory.store.unembedded_messages() == []
    assert await semantic.catch_up() == 0
    await memory.close()


async def test_a_deleted_and_saved_again_message_is_embedded_again(tmp_path: Path) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    message = Message.user("green tea", id="m1")
    await memory.save_messages([message], thread_id="t", resource_id="ada")
    await memory.flush()
    await memory.delete_messages(["m1"], thread_id="t", resource_id="ada")
    await memory.save_messages([message], thread_id="t", resource_id="ada")
    await memory.flush()
    assert function.texts == 2
    assert await memory.store.unembedded_messages() == []
    await memory.close()


async def test_a_message_saved_again_with_other_text_is_embedded_again(tmp_path: Path) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    await memory.save_messages([Message.user("green tea", id="m1")], thread_id="t", resource_id="ada")
    await memory.flush()
    await memory.save_messages([Message.user("black coffee", id="m1")], thread_id="t", resource_id="ada")
    await memory.flush()
    assert function.texts == 2
    await memory.close()


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "?!", "...", "— ,;"])
async def test_a_query_without_words_recalls_the_window_only(tmp_path: Path, query: str) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    older = [Message.user(f"old note {i} about matcha", id=f"o{i}") for i in range(12)]
    await memory.save_messages(older, thread_id="old", resource_id="ada")
    recent = [Message.user("hello", id="r1"), Message.assistant("hi", id="r2")]
    await memory.save_messages(recent, thread_id="now", resource_id="ada")
    await memory.flush()
    embedded = function.texts
    options = RecallOptions(min_vector_score=0.0, relative_threshold=0.0)
    result = await memory.recall(resource_id="ada", query=query, thread_id="now", options=options)
    assert result.hits == []
    assert result.recalled == []
    assert [m.id for m in result.messages] == ["r1", "r2"]
    assert [m.id for m in result.history] == ["r1", "r2"]
    assert function.texts == embedded  # the embedder is not asked about a query without words
    assert result.warnings == []
    # and words and meaning agree: the full-text search finds nothing for it either
    assert await memory.search_messages(resource_id="ada", query=query) == []
    await memory.close()


async def test_a_query_with_words_still_recalls_by_meaning(tmp_path: Path) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    await memory.save_messages([Message.user("I drink matcha", id="m1")], thread_id="old", resource_id="ada")
    await memory.flush()
    result = await memory.recall(resource_id="ada", query="beverage",
                                 options=RecallOptions(message_range=0, min_vector_score=0.5))
    assert [(h.message.id, h.source) for h in result.hits] == [("m1", "vector")]
    await memory.close()
