"""Sentences embedded beside their message (:mod:`memvault.recall.sentences`): how a text is
split, what is stored and dropped with the message, and that recall scores a long message by
the sentence that answers (``RecallOptions.sentence_weight``), on the memory and SQLite stores
with a deterministic embedder (hashed words: real vectors, no model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import Memory, MemoryOptions, Message, ValidationError
from memvault.bench.locomo import hash_vectors
from memvault.embeddings import FunctionEmbedder
from memvault.recall import RecallOptions
from memvault.recall.sentences import MAX_SENTENCES, best_similarities, pack, sentence_texts, split_sentences
from memvault.stores.capabilities import supports_sentence_vectors

MODEL = "test/hashed-words"
LONG = ("Hey Tim, good to see you again after all this time! So much has happened on and off the court "
        "lately. Last week I scored forty points against the Hawks, my highest ever.")
OTHERS = [
    "The weather was rainy all week and we stayed at home playing board games.",
    "My sister visited from Boston and we cooked pasta together on Sunday.",
    "I am reading a novel about sailors crossing the Atlantic in winter.",
]
QUESTION = "how many points did John score against the Hawks"


class Counting:
    """Hashed-word vectors (:func:`memvault.bench.locomo.hash_vectors`), counting the texts."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return hash_vectors(texts, 64)


def said(message_id: str, text: str, name: str = "John") -> Message:
    return Message.parse({"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}],
                          "metadata": {"name": name}})


async def opened(url: str, embedder: Counting | None = None, **options: Any) -> Memory:
    embedder = embedder or Counting()
    return await Memory.open(url, embedder=FunctionEmbedder(embedder, model=MODEL, dimensions=64,
                                                            run_in_thread=False),
                             options=MemoryOptions(**options))


@pytest.fixture(params=["memory", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'sentences.db'}"


async def fill(memory: Memory) -> None:
    await memory.save_messages([said("long", LONG), *(said(f"o{i}", t) for i, t in enumerate(OTHERS))],
                               thread_id="t", resource_id="r")
    await memory.flush()


async def stored(memory: Memory, resource_id: str = "r") -> list[str]:
    store = memory.store
    assert supports_sentence_vectors(store)
    keys = [("t", m) for m in ("long", "o0", "o1", "o2", "x")]
    return [m for _, m, _ in await store.sentence_embeddings_of(resource_id, keys)]


def test_split_examples() -> None:
    assert split_sentences("Hey Tim! Last week I scored 40 points. [image: a court]") == [
        "Hey Tim!", "Last week I scored 40 points.", "[image: a court]"]
    cjk = "我喜欢猫\u3002你呢\uff1f好的"  # the ideographic full stop, the full-width question mark
    assert split_sentences(cjk) == ["我喜欢猫\u3002", "你呢\uff1f", "好的"]
    assert split_sentences("one\n\ntwo ... !!") == ["one", "two ..."]
    assert split_sentences("") == [] and split_sentences("?! ...") == []
    assert sentence_texts("Only one sentence here.", "Ana") == []
    assert sentence_texts("First. Second!", "Ana") == ["Ana: First.", "Ana: Second!"]
    assert sentence_texts("First. Second!") == ["First.", "Second!"]


@given(st.text(st.characters(codec="utf-8"), max_size=400))
def test_splitting_keeps_every_letter_and_digit_in_order(text: str) -> None:
    pieces = split_sentences(text)
    assert all(piece and piece == piece.strip() for piece in pieces)
    letters = [ch for ch in text if ch.isalnum()]
    assert [ch for piece in pieces for ch in piece if ch.isalnum()] == letters
    runs = sentence_texts(text)
    assert len(runs) <= MAX_SENTENCES
    if runs:  # runs of sentences past the cap lose nothing either
        assert [ch for run in runs for ch in run if ch.isalnum()] == letters


def test_a_huge_message_costs_at_most_max_sentences_vectors() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(1000))
    runs = sentence_texts(text, "Ana")
    assert len(runs) == MAX_SENTENCES
    assert runs[0].startswith("Ana: Sentence number 0 is here.") and runs[-1].endswith("number 999 is here.")


def test_packed_sentences_score_as_their_unit_vectors() -> None:
    rng = np.random.default_rng(7)
    messages = [rng.normal(size=(n, 8)).astype(np.float32) for n in (3, 1, 5)]
    query = rng.normal(size=8).astype(np.float32)
    query /= np.linalg.norm(query)
    expected = [max(float(r @ query / np.linalg.norm(r)) for r in rows) for rows in messages]
    blobs = [pack(rows) for rows in messages]
    assert len(blobs[0]) == 3 * 8 * 2  # half precision
    found = best_similarities([blobs[0], blobs[1][:-1], b"", blobs[1], blobs[2]], query, 8)
    assert found[1] is None and found[2] is None  # not whole vectors: left out, the rest in order
    assert [found[0], found[3], found[4]] == pytest.approx(expected, abs=2e-3)
    assert best_similarities([b"", blobs[0][:3]], query, 8) == [None, None]
    assert best_similarities([], query, 8) == []


@given(st.lists(st.integers(min_value=0, max_value=6), max_size=12),
       st.integers(min_value=0, max_value=2**32 - 1))
def test_batched_best_similarity_is_each_messages_own(counts: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    query = rng.normal(size=4).astype(np.float32)
    query /= np.linalg.norm(query)
    blobs = [pack(rng.normal(size=(n, 4)).astype(np.float32)) if n else b"" for n in counts]
    found = best_similarities(blobs, query, 4)
    for blob, score in zip(blobs, found, strict=True):
        if not blob:
            assert score is None
        else:
            rows = np.frombuffer(blob, dtype="<f2").reshape(-1, 4).astype(np.float32)
            assert score == pytest.approx(float((rows @ query).max()), abs=1e-5)


async def test_sentences_are_stored_for_messages_of_several(url: str) -> None:
    counting = Counting()
    memory = await opened(url, counting)
    try:
        await fill(memory)
        assert await stored(memory) == ["long"]  # the others are one sentence each
        assert sentence_texts(LONG, "John")[2] in counting.texts
        # an edit to one sentence drops them; saved again with several, they are back
        await memory.save_messages([said("long", "Just one now.")], thread_id="t", resource_id="r")
        await memory.flush()
        assert await stored(memory) == []
        await memory.save_messages([said("long", LONG)], thread_id="t", resource_id="r")
        await memory.flush()
        assert await stored(memory) == ["long"]
        assert await stored(memory, "someone-else") == []
        await memory.delete_messages(["long"], thread_id="t", resource_id="r")
        assert await stored(memory) == []
    finally:
        await memory.close()


async def test_a_long_message_is_found_by_the_sentence_that_answers(url: str) -> None:
    memory = await opened(url)
    try:
        await fill(memory)
        scores = {}
        for weight in (0.0, 0.5, 1.0):
            options = RecallOptions(sentence_weight=weight, top_k=4, message_range=0, last_n=0,
                                    vector_context_window=0, working_memory=False)
            result = await memory.recall(resource_id="r", query=QUESTION, options=options)
            scores[weight] = {h.message.id: h.vector_score for h in result.hits}
        vector = np.asarray(hash_vectors([QUESTION], 64)[0], dtype=np.float32)
        vector /= np.linalg.norm(vector)
        whole, *parts = (np.asarray(v, dtype=np.float32) for v in
                         hash_vectors([f"John: {LONG}", *sentence_texts(LONG, "John")], 64))
        own = float(whole @ vector / np.linalg.norm(whole))
        best = max(float(p @ vector / np.linalg.norm(p)) for p in parts)
        assert best > own  # the premise: one sentence is nearer than the whole turn
        assert scores[0.0]["long"] == pytest.approx(own, abs=1e-5)
        assert scores[1.0]["long"] == pytest.approx(best, abs=2e-3)
        assert scores[0.5]["long"] == pytest.approx((own + best) / 2, abs=2e-3)
        for other in ("o0", "o1", "o2"):  # one sentence each: their own similarity, whatever the weight
            if other in scores[0.0]:
                assert scores[1.0][other] == pytest.approx(scores[0.0][other], abs=1e-6)
    finally:
        await memory.close()


async def test_without_embed_sentences_nothing_more_is_embedded(url: str) -> None:
    counting = Counting()
    memory = await opened(url, counting, embed_sentences=False)
    try:
        await fill(memory)
        assert await stored(memory) == []
        assert len(counting.texts) == 1 + len(OTHERS)
        result = await memory.recall(resource_id="r", query=QUESTION)
        assert result.hits  # recall by the messages' own vectors, as before
    finally:
        await memory.close()


async def test_reindex_adds_the_sentences_of_a_store_embedded_without_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'older.db'}"
    memory = await opened(url, embed_sentences=False)
    try:
        await fill(memory)
    finally:
        await memory.close()
    memory = await opened(url)
    try:
        assert await stored(memory) == []  # opens and recalls on the messages' own vectors
        assert (await memory.recall(resource_id="r", query=QUESTION)).hits
        await memory.reindex()
        assert await stored(memory) == ["long"]
    finally:
        await memory.close()


def test_the_options_are_checked() -> None:
    for bad in (-0.1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValidationError, match="sentence_weight"):
            RecallOptions(sentence_weight=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="embed_sentences"):
        MemoryOptions(embed_sentences="yes")  # type: ignore[arg-type]
