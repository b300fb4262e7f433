"""``MemoryOptions.embed_context``: each message is embedded with the messages just before it in
its thread. The embedded text carries the neighbour (with its author's name); an edit or a
deletion of a neighbour embeds its followers again; ``reindex`` rebuilds; a change of the option
is refused at start like a change of model; a resource's vectors depend on its own data alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memvault import ConfigurationError, Memory, MemoryOptions, Message, ValidationError
from memvault.embeddings import FunctionEmbedder
from memvault.recall.semantic import CONTEXT_CHARS, embedding_text, recorded_model
from memvault.recall.types import MessageRef

MODEL = "test/recorder"


class Recorder:
    """An embedder that remembers what it was given; a text's vector is a function of the
    text alone (so two equal texts have equal vectors)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return [[1.0, float(len(t)), float(sum(map(ord, t)) % 97)] for t in texts]

    def take(self) -> list[str]:
        taken, self.texts = self.texts, []
        return [t for t in taken if t != "memvault: is the embedder working?"]  # reindex's probe


def said(message_id: str, name: str, text: str) -> Message:
    return Message.parse({"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}],
                          "metadata": {"name": name}})


async def opened(url: str, recorder: Recorder, embed_context: int) -> Memory:
    return await Memory.open(url, embedder=FunctionEmbedder(recorder, model=MODEL, run_in_thread=False),
                             options=MemoryOptions(embed_context=embed_context))


@pytest.fixture(params=["memory", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'context.db'}"


def test_the_embedded_text_is_the_message_then_the_earlier_messages_nearest_first() -> None:
    question, answer = said("a", "Ben", "Did you go camping?"), said("b", "Ana", "Yes, last Sunday!")
    assert embedding_text(answer) == "Ana: Yes, last Sunday!"
    assert embedding_text(answer, context=[question]) == "Ana: Yes, last Sunday!\nBen: Did you go camping?"
    first = said("z", "Ana", "I love the outdoors")
    assert embedding_text(answer, context=[first, question]) == (
        "Ana: Yes, last Sunday!\nBen: Did you go camping?\nAna: I love the outdoors")
    long = said("c", "Ben", "x" * 2 * CONTEXT_CHARS)
    assert embedding_text(answer, context=[long]).split("\n")[1] == ("x" * 2 * CONTEXT_CHARS)[-CONTEXT_CHARS:]
    empty = Message.parse({"id": "d", "role": "user", "parts": [{"type": "text", "text": "  "}]})
    assert embedding_text(empty, context=[question]) == ""  # nothing of its own: nothing embedded
    assert recorded_model("m", 0) == "m" and recorded_model("m", 2) == "m +context=2"


def test_the_mismatch_message_names_the_embed_context() -> None:
    from memvault.stores.common import embedding_mismatch

    text = embedding_mismatch(("a/m +context=1", 3), ("a/m", 3))
    assert "embed_context=1" in text and "not 0" in text and "--embed-context 0" in text
    text = embedding_mismatch(("a/m", 3), ("a/m +context=2", None))
    assert "embed_context=0" in text and "not 2" in text
    assert "'a/m +context=2'" in embedding_mismatch(("b/other", 3), ("a/m +context=2", 3))  # another model


def test_the_option_is_checked() -> None:
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValidationError, match="embed_context"):
            MemoryOptions(embed_context=bad)  # type: ignore[arg-type]
    assert MemoryOptions().embed_context == 0


async def test_a_message_is_embedded_with_its_previous_turn(url: str) -> None:
    recorder = Recorder()
    memory = await opened(url, recorder, 1)
    await memory.save_messages([said("a", "Ben", "Did you go camping?")], thread_id="t", resource_id="r")
    await memory.save_messages([said("b", "Ana", "Yes, last Sunday!"), said("c", "Ben", "Nice.")],
                               thread_id="t", resource_id="r")
    await memory.save_messages([said("x", "Cy", "Another session")], thread_id="u", resource_id="r")
    await memory.flush()
    assert recorder.take() == ["Ben: Did you go camping?",
                               "Ana: Yes, last Sunday!\nBen: Did you go camping?",
                               "Ben: Nice.\nAna: Yes, last Sunday!",
                               "Cy: Another session"]  # a thread's first message: no context
    assert await memory.store.embedding_model() == (f"{MODEL} +context=1", 3)  # type: ignore[attr-defined]
    await memory.close()


async def test_two_earlier_messages_and_none_without_the_option(url: str) -> None:
    recorder = Recorder()
    memory = await opened(url, recorder, 2)
    await memory.save_messages([said(i, "Ana", f"turn {i}") for i in "abc"], thread_id="t", resource_id="r")
    await memory.flush()
    assert recorder.take()[-1] == "Ana: turn c\nAna: turn b\nAna: turn a"
    await memory.close()
    plain = Recorder()
    memory = await opened("memory://", plain, 0)
    await memory.save_messages([said(i, "Ana", f"turn {i}") for i in "ab"], thread_id="t", resource_id="r")
    await memory.flush()
    assert plain.take() == ["Ana: turn a", "Ana: turn b"]
    assert await memory.store.embedding_model() == (MODEL, 3)  # type: ignore[attr-defined]
    await memory.close()


async def three_turns(url: str, first: str) -> tuple[Memory, Recorder]:
    """A store embedding one message of context, with a thread of three turns ("a", whose
    text is ``first``, "b", "c") embedded and the recorder emptied."""
    recorder = Recorder()
    memory = await opened(url, recorder, 1)
    await memory.save_messages([said("a", "Ben", first), said("b", "Ana", "Yes!"),
                                said("c", "Ben", "Great.")], thread_id="t", resource_id="r")
    await memory.flush()
    recorder.take()
    return memory, recorder


async def test_an_edit_embeds_the_messages_after_it_again(url: str) -> None:
    memory, recorder = await three_turns(url, "Did you go camping?")
    await memory.save_messages([said("a", "Ben", "Did you go hiking?")], thread_id="t", resource_id="r")
    await memory.flush()
    # "b" had "a" as its context; "c" did not
    assert recorder.take() == ["Ben: Did you go hiking?", "Ana: Yes!\nBen: Did you go hiking?"]
    await memory.close()


async def test_a_deletion_embeds_the_messages_after_it_without_it(url: str) -> None:
    memory, recorder = await three_turns(url, "secret plan")
    await memory.delete_messages(["a"], thread_id="t", resource_id="r")
    await memory.flush()
    assert recorder.take() == ["Ana: Yes!"]
    await memory.delete_messages(["b"], thread_id="t", resource_id="r")  # the first left: none before
    await memory.flush()
    assert recorder.take() == ["Ben: Great."]
    await memory.close()


async def test_the_recall_finds_a_reply_by_what_it_answers(url: str) -> None:
    """With the context embedded, the reply's own vector holds the question's words."""
    from memvault.bench.locomo import embedder_spec
    from memvault.recall import RecallOptions

    memory = await Memory.open(url, embedder=embedder_spec("hash:64"), options=MemoryOptions(embed_context=1))
    await memory.save_messages([said("a", "Ben", "Did you go camping with the kids?"),
                                said("b", "Ana", "Yes, last Sunday!")], thread_id="t", resource_id="r")
    await memory.flush()
    assert memory.semantic is not None
    scores = await memory.semantic.similarities("camping kids", "r", [MessageRef("t", "b")])
    assert scores[next(iter(scores))] > 0.3
    options = RecallOptions(message_range=0, vector_context_window=0, candidates=1)
    assert (await memory.recall(resource_id="r", query="camping kids", options=options)).hits
    await memory.close()


async def test_a_change_of_the_option_is_refused_until_reindex(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'context.db'}"
    recorder = Recorder()
    memory = await opened(url, recorder, 0)
    await memory.save_messages([said("a", "Ben", "Did you go camping?"), said("b", "Ana", "Yes!")],
                               thread_id="t", resource_id="r")
    await memory.close()
    with pytest.raises(ConfigurationError, match=r"embed_context=0\), not 1.*memvault reindex"):
        await opened(url, recorder, 1)
    bare = await Memory.open(url)  # without an embedder, as the error says
    await bare.clear_embeddings()
    await bare.close()
    memory = await opened(url, recorder, 1)
    recorder.take()
    assert (await memory.reindex())["vectors"] == 2
    assert recorder.take() == ["Ben: Did you go camping?", "Ana: Yes!\nBen: Did you go camping?"]
    assert await memory.store.embedding_model() == (f"{MODEL} +context=1", 3)  # type: ignore[attr-defined]
    await memory.close()
    with pytest.raises(ConfigurationError, match=r"embed_context=1\), not 0"):
        await opened(url, recorder, 0)  # back to 0 is a change too
    again = await opened(url, Recorder(), 1)  # the same value opens
    await again.close()


async def test_reindex_rebuilds_the_same_vectors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'context.db'}"
    recorder = Recorder()
    memory = await opened(url, recorder, 2)
    await memory.save_messages([said(i, "Ana", f"turn {i}") for i in "abcd"], thread_id="t", resource_id="r")
    await memory.flush()
    before = recorder.take()
    assert (await memory.reindex())["vectors"] == 4
    assert sorted(recorder.take()) == sorted(before)
    await memory.close()


async def test_a_resource_s_vectors_depend_on_its_own_data_alone(url: str) -> None:
    """Two resources with a thread of the same id: neither's messages are context of the
    other's, and the other's writes (saves, edits, deletions) embed nothing of this one."""
    recorder = Recorder()
    memory = await opened(url, recorder, 1)
    await memory.save_messages([said("a", "Ana", "mine first")], thread_id="t", resource_id="ana")
    await memory.save_messages([said("a", "Bob", "his first"), said("b", "Bob", "his second")],
                               thread_id="t", resource_id="bob")
    await memory.save_messages([said("b", "Ana", "mine second")], thread_id="t", resource_id="ana")
    await memory.flush()
    assert recorder.take() == ["Ana: mine first", "Bob: his first", "Bob: his second\nBob: his first",
                               "Ana: mine second\nAna: mine first"]
    vectors_before = await _vectors(memory, "ana")
    recorder.take()  # the query
    await memory.save_messages([said("a", "Bob", "his first, edited")], thread_id="t", resource_id="bob")
    await memory.delete_messages(["a"], thread_id="t", resource_id="bob")
    await memory.flush()
    assert all(text.startswith("Bob: ") for text in recorder.take())
    assert await _vectors(memory, "ana") == vectors_before
    await memory.close()


async def _vectors(memory: Memory, resource_id: str) -> dict[str, Any]:
    assert memory.semantic is not None
    found = await memory.semantic.similarities("mine", resource_id,
                                               [MessageRef("t", "a"), MessageRef("t", "b")])
    return {ref[1]: score for ref, score in found.items()}
