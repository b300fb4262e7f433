"""The stores keep message vectors as derived data: saved and loaded by cursor, dropped with
their message (delete, clear, thread, resource) or when its text changes, one model at a time;
and, where the store has :class:`~memvault.stores.capabilities.SentenceVectors`, each message's
sentences' vectors beside its own, which go the same way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from memvault import ConfigurationError, Memory, Message
from memvault.stores.capabilities import EmbeddingStore, SentenceVectors, supports_sentence_vectors

pytestmark = pytest.mark.capability("embeddings")

V = b"\x00\x00\x80?" * 2  # float32 [1.0, 1.0]


async def _seed(memory: Memory) -> None:
    await memory.save_messages([Message.user("a", id="a"), Message.user("b", id="b")],
                               thread_id="t1", resource_id="r")
    await memory.save_messages([Message.user("c", id="c")], thread_id="t2", resource_id="r")
    await memory.save_messages([Message.user("x", id="x")], thread_id="t1", resource_id="other")


def _store(memory: Memory) -> EmbeddingStore:
    assert isinstance(memory.store, EmbeddingStore)
    return memory.store


async def _ids(memory: Memory) -> list[str]:
    return [row[3] for row in await _store(memory).load_embeddings()]


async def test_vectors_round_trip_in_cursor_order(memory: Memory) -> None:
    await _seed(memory)
    store = _store(memory)
    assert await store.embedding_model() is None
    pending = await store.unembedded_messages()
    assert [m.id for _, m in pending] == ["a", "b", "c", "x"]
    saved = await store.save_embeddings("test/model", 2, [
        ("r", "t1", "b", V), ("r", "t1", "a", V), ("r", "t2", "c", b""), ("r", "t9", "zz", V),
    ])
    assert saved == 3  # the missing message is skipped
    assert await store.embedding_model() == ("test/model", 2)
    loaded = await store.load_embeddings()
    assert [(r[1], r[2], r[3], r[4]) for r in loaded] == [
        ("r", "t1", "a", V), ("r", "t1", "b", V), ("r", "t2", "c", b"")]
    cursors = [r[0] for r in loaded]
    assert cursors == sorted(cursors)
    assert [r[3] for r in await store.load_embeddings(after=cursors[0])] == ["b", "c"]
    assert [m.id for _, m in await store.unembedded_messages()] == ["x"]


async def test_another_model_is_refused_until_cleared(memory: Memory) -> None:
    await _seed(memory)
    store = _store(memory)
    await store.save_embeddings("test/model", 2, [("r", "t1", "a", V)])
    with pytest.raises(ConfigurationError, match="reindex"):
        await store.save_embeddings("other/model", 2, [("r", "t1", "b", V)])
    assert await store.clear_embeddings() == 1
    assert await store.embedding_model() is None
    await store.save_embeddings("other/model", 3, [("r", "t1", "b", V)])
    assert await store.embedding_model() == ("other/model", 3)


@pytest.mark.parametrize(
    ("change", "left"),
    [
        (lambda m: m.delete_messages(["a"], thread_id="t1", resource_id="r"), ["b", "c", "x"]),
        (lambda m: m.clear_thread(thread_id="t1", resource_id="r"), ["c", "x"]),
        (lambda m: m.delete_thread(thread_id="t1", resource_id="r"), ["c", "x"]),
        (lambda m: m.delete_resource(resource_id="r"), ["x"]),
        (lambda m: m.save_messages([Message.user("new text", id="a")], thread_id="t1",
                                   resource_id="r"), ["b", "c", "x"]),
        (lambda m: m.save_messages([Message.user("a", id="a")], thread_id="t1", resource_id="r"),
         ["a", "b", "c", "x"]),
    ],
    ids=["delete", "clear", "delete-thread", "delete-resource", "text-changed", "same-text"],
)
async def test_vectors_go_with_their_message(
    memory: Memory, change: Callable[[Memory], Awaitable[object]], left: list[str]
) -> None:
    await _seed(memory)
    await _store(memory).save_embeddings("test/model", 2, [
        ("r", "t1", "a", V), ("r", "t1", "b", V), ("r", "t2", "c", V), ("other", "t1", "x", V)])
    await change(memory)
    assert await _ids(memory) == left


S = b"\x00<" * 4  # float16 [1.0, 1.0, 1.0, 1.0]: two sentences of two dimensions


def _sentences(memory: Memory) -> SentenceVectors:
    if not supports_sentence_vectors(memory.store):
        pytest.skip("the store keeps no sentences' vectors (SentenceVectors)")
    return memory.store


async def _with_sentences(memory: Memory) -> list[tuple[str, str, str]]:
    store = _sentences(memory)
    found = []
    for resource_id, keys in (("r", [("t1", "a"), ("t1", "b"), ("t2", "c")]), ("other", [("t1", "x")])):
        found += [(resource_id, t, m) for t, m, _ in await store.sentence_embeddings_of(resource_id, keys)]
    return sorted(found)


async def test_sentences_round_trip_beside_their_vector(memory: Memory) -> None:
    await _seed(memory)
    store = _sentences(memory)
    await store.save_embeddings("test/model", 2, [  # type: ignore[attr-defined]
        ("r", "t1", "a", V, S), ("r", "t1", "b", V, None), ("r", "t2", "c", V), ("other", "t1", "x", V, S)])
    assert await store.sentence_embeddings_of("r", [("t1", "a"), ("t1", "b"), ("t2", "c"), ("t9", "zz")]) == [
        ("t1", "a", S)]
    assert await store.sentence_embeddings_of("r", [("t1", "x")]) == []  # another resource's message
    assert await store.sentence_embeddings_of("r", []) == []
    # a row of four (a message embedded again without sentences) drops the old sentences
    await store.save_embeddings("test/model", 2, [("other", "t1", "x", V)])  # type: ignore[attr-defined]
    assert await store.sentence_embeddings_of("other", [("t1", "x")]) == []
    assert [r[4] for r in await store.load_embeddings()] == [V, V, V, V]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "left"),
    [
        (lambda m: m.delete_messages(["a"], thread_id="t1", resource_id="r"), ["b", "c", "x"]),
        (lambda m: m.delete_thread(thread_id="t1", resource_id="r"), ["c", "x"]),
        (lambda m: m.delete_resource(resource_id="r"), ["x"]),
        (lambda m: m.save_messages([Message.user("new text", id="a")], thread_id="t1",
                                   resource_id="r"), ["b", "c", "x"]),
        (lambda m: m.store.clear_embeddings(), []),
    ],
    ids=["delete", "delete-thread", "delete-resource", "text-changed", "clear-embeddings"],
)
async def test_sentences_go_with_their_message(
    memory: Memory, change: Callable[[Memory], Awaitable[object]], left: list[str]
) -> None:
    await _seed(memory)
    await _sentences(memory).save_embeddings("test/model", 2, [  # type: ignore[attr-defined]
        ("r", "t1", "a", V, S), ("r", "t1", "b", V, S), ("r", "t2", "c", V, S), ("other", "t1", "x", V, S)])
    await change(memory)
    assert sorted(m for _, _, m in await _with_sentences(memory)) == left
