"""Semantic recall through Memory on a real SQLite file: messages are embedded after their
commit, their vectors survive a restart, follow deletes, refuse another model until a reindex,
and a failing embedder never loses a message or fails a recall."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from pathlib import Path

import numpy as np
import pytest

from memvault import ConfigurationError, Memory, Message
from memvault.embeddings import EmbeddingError, FunctionEmbedder
from memvault.recall import RecallOptions
from memvault.vectors import VectorItem

DIMS = 64
# A stand-in embedder (named as such): words map to fixed random directions, and a few words
# share a concept so that meaning, not spelling, makes them close.
CONCEPTS = {"tea": "drink", "coffee": "drink", "matcha": "drink", "beverage": "drink",
            "kyoto": "japan", "tokyo": "japan", "japan": "japan"}


def _direction(word: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(DIMS)


class Concepts:
    """Counts calls; can be told to fail."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0
        self.failing = False

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.failing:
            raise ConnectionError("embedding server down")
        self.calls += 1
        self.texts += len(texts)
        rows = []
        for text in texts:
            words = [w.strip("?.,!").lower() for w in text.split()]
            rows.append(sum((_direction(CONCEPTS.get(w, w)) for w in words), np.zeros(DIMS)))
        return np.array(rows, dtype=np.float32)


def embedder(function: Concepts, model: str = "test/concepts") -> FunctionEmbedder:
    return FunctionEmbedder(function, model=model, run_in_thread=False)


async def _ids(memory: Memory, query: str, **options: object) -> list[str]:
    options = {"message_range": 0, "min_vector_score": 0.5, **options}
    result = await memory.recall(resource_id="ada", query=query, options=RecallOptions(**options))
    return [hit.message.id for hit in result.hits]


async def test_recall_finds_by_meaning_and_vectors_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    function = Concepts()
    memory = await Memory.open(url, embedder=embedder(function))
    await memory.save_messages([Message.user("I drink matcha every morning", id="m1"),
                                Message.user("The meeting moved to Monday", id="m2")],
                               thread_id="t1", resource_id="ada")
    await memory.flush()
    assert function.texts == 2
    # no word in common with m1: only the vector search can find it
    assert await _ids(memory, "beverage") == ["m1"]
    hits = (await memory.recall(resource_id="ada", query="beverage")).hits
    assert hits[0].source == "vector"
    await memory.close()

    reopened_function = Concepts()
    reopened = await Memory.open(url, embedder=embedder(reopened_function))
    assert await _ids(reopened, "beverage") == ["m1"]
    assert reopened_function.texts == 1  # only the query: stored vectors were loaded
    await reopened.close()


async def test_another_model_is_refused_until_reindex(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    memory = await Memory.open(url, embedder=embedder(Concepts()))
    await memory.save_messages([Message.user("green tea", id="m1")], thread_id="t", resource_id="ada")
    await memory.close()
    with pytest.raises(ConfigurationError, match="reindex"):
        await Memory.open(url, embedder=embedder(Concepts(), model="test/other"))
    # reindex with the new model: a Memory over the same file, vectors dropped and rebuilt
    plain = await Memory.open(url)
    await plain.clear_embeddings()  # what `memvault reindex` does first
    await plain.close()
    other = Concepts()
    memory = await Memory.open(url, embedder=embedder(other, model="test/other"))
    counts = await memory.reindex()
    assert counts == {"search_rows": 1, "vectors": 1}
    assert await memory.store.embedding_model() == ("test/other", DIMS)
    assert await _ids(memory, "beverage") == ["m1"]
    await memory.close()


async def test_reindex_keeps_a_given_vector_index_and_empties_it_of_old_vectors(tmp_path: Path) -> None:
    from memvault.vectors import ExactIndex

    index = ExactIndex(DIMS)
    url = f"sqlite:///{tmp_path}/s.db"
    memory = await Memory.open(url, embedder=embedder(Concepts()), vector_index=index)
    await memory.save_messages([Message.user("green tea", id="m1")], thread_id="t", resource_id="ada")
    await memory.save_messages([Message.user("kyoto", id="m2")], thread_id="t", resource_id="bob")
    await memory.flush()
    await index.upsert([VectorItem("stale", np.ones(DIMS, dtype=np.float32), "bob", "t", "gone")])
    assert await memory.reindex() == {"search_rows": 2, "vectors": 2}
    assert memory.semantic is not None and memory.semantic.index is index
    assert await index.count() == 2 and await index.get(["stale"]) == []
    assert await _ids(memory, "beverage") == ["m1"]
    await memory.close()


async def test_reindex_with_a_failing_embedder_drops_nothing(tmp_path: Path) -> None:
    function = Concepts()
    url = f"sqlite:///{tmp_path}/s.db"
    memory = await Memory.open(url, embedder=embedder(function))
    await memory.save_messages([Message.user("green tea", id="m1")], thread_id="t", resource_id="ada")
    await memory.flush()
    function.failing = True
    with pytest.raises(EmbeddingError, match="embedding server down"):
        await memory.reindex()
    assert len(await memory.store.load_embeddings()) == 1
    function.failing = False
    assert await _ids(memory, "beverage") == ["m1"]
    await memory.close()


async def test_a_given_index_of_other_dimensions_is_refused_before_anything_is_dropped(
        tmp_path: Path) -> None:
    from memvault.vectors import ExactIndex

    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(Concepts()))
    await memory.save_messages([Message.user("green tea", id="m1")], thread_id="t", resource_id="ada")
    await memory.flush()
    assert memory.semantic is not None
    memory.semantic = type(memory.semantic)(memory.semantic.store, memory.semantic.embedder,
                                            ExactIndex(DIMS + 1))
    with pytest.raises(ConfigurationError, match="nothing was dropped"):
        await memory.reindex()
    assert len(await memory.store.load_embeddings()) == 1
    await memory.close()


def test_the_model_mismatch_message_says_how_to_reindex() -> None:
    from memvault.stores.common import embedding_mismatch

    text = embedding_mismatch(("a/old", 3), ("b/new", None))
    assert "(3 dimensions)" in text and "'b/new':" in text and "memvault reindex --embedder" in text
    assert "clear_embeddings" in text


async def test_a_failing_embedder_loses_nothing_and_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    function.failing = True
    with caplog.at_level(logging.WARNING):
        saved = await memory.save_messages([Message.user("I love coffee", id="m1")],
                                           thread_id="t", resource_id="ada")
        await memory.flush()
        result = await memory.recall(resource_id="ada", query="coffee")
    assert [m.id for m in saved] == ["m1"]
    assert [h.message.id for h in result.hits] == ["m1"]  # by words
    assert result.warnings
    assert "embedding 1 message(s) failed" in caplog.text
    assert [m.id for _, m in await memory.store.unembedded_messages()] == ["m1"]

    function.failing = False
    await memory.save_messages([Message.user("tokyo trip", id="m2")], thread_id="t", resource_id="ada")
    await memory.flush()
    assert await memory.store.unembedded_messages() == []  # the next save caught up
    assert await _ids(memory, "beverage") == ["m1"]
    await memory.close()


async def test_deleted_messages_leave_the_vector_index(tmp_path: Path) -> None:
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(Concepts()))
    await memory.save_messages([Message.user("matcha", id="m1")], thread_id="t1", resource_id="ada")
    await memory.save_messages([Message.user("coffee", id="m2")], thread_id="t2", resource_id="ada")
    await memory.save_messages([Message.user("tea", id="b1")], thread_id="t1", resource_id="bob")
    await memory.flush()
    assert sorted(await _ids(memory, "beverage")) == ["m1", "m2"]
    await memory.delete_messages(["m1"], thread_id="t1", resource_id="ada")
    assert await _ids(memory, "beverage") == ["m2"]
    await memory.delete_thread(thread_id="t2", resource_id="ada")
    assert await _ids(memory, "beverage") == []
    stored = memory.semantic.stored  # type: ignore[union-attr]
    assert stored is not None and stored.loaded().get("ada", 0) == 0  # gone from memory too
    found = await memory.recall(resource_id="bob", query="beverage",
                                options=RecallOptions(message_range=0, min_vector_score=0.5))
    assert [hit.message.id for hit in found.hits] == ["b1"] and stored.loaded()["bob"] == 1
    await memory.delete_resource(resource_id="bob")
    assert "bob" not in stored.loaded()
    assert await memory.store.load_embeddings() == []
    await memory.close()


async def test_recall_scores_every_candidate_by_meaning_and_embeds_the_query_once(tmp_path: Path) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    await memory.save_messages([Message.user("I drink tea with friends", id="m1"),
                                Message.user("my friends moved to kyoto", id="m2"),
                                Message.user("weather report", id="m3")],
                               thread_id="t", resource_id="ada")
    await memory.flush()
    before = function.texts
    result = await memory.recall(resource_id="ada", query="friends beverage",
                                 options=RecallOptions(message_range=0, vector_context_window=0))
    assert function.texts == before + 1  # the search and the scoring share one query vector
    by_id = {h.message.id: h for h in result.hits}
    assert by_id["m1"].source == "both"  # found by "friends" and scored by meaning
    assert by_id["m2"].vector_score is not None  # a lexical hit, scored although not matched
    assert by_id["m1"].vector_score > by_id["m2"].vector_score  # type: ignore[operator]
    await memory.close()


async def test_a_slow_embedder_times_out_into_words_only(tmp_path: Path) -> None:
    function = Concepts()
    memory = await Memory.open(f"sqlite:///{tmp_path}/s.db", embedder=embedder(function))
    await memory.save_messages([Message.user("I love coffee", id="m1")], thread_id="t", resource_id="ada")
    await memory.flush()
    assert memory.semantic is not None
    memory.semantic.query_timeout = 0.05

    async def stuck(texts: list[str]) -> np.ndarray:
        await asyncio.sleep(10)
        raise AssertionError("not reached")

    memory.semantic.embedder = FunctionEmbedder(stuck, model="test/concepts")
    started = time.perf_counter()
    result = await memory.recall(resource_id="ada", query="coffee")
    assert time.perf_counter() - started < 5
    assert [(h.message.id, h.source) for h in result.hits] == [("m1", "lexical")]
    assert result.warnings and "TimeoutError" in result.warnings[0]
    await memory.close()
