"""Experiment (issue 15): score a message by meaning from its sentences as well as from its whole text.

The first measurement behind ``RecallOptions.sentence_weight`` (shipped), kept to try what the
feature does not do yet. For each LoCoMo development conversation it ingests a SQLite store
with all-MiniLM-L6-v2 (the shipped pipeline, which stores each turn's sentences' vectors:
:mod:`memvault.recall.sentences`), reads those vectors back, turns the engine's own blend off
(``sentence_weight=0``) and replaces the semantic index's ``similarities`` (the scorer recall
uses for every candidate) by::

    (1 - lam) * cos(query, message) + lam * max over the message's sentences of cos(query, sentence)

(a message of one sentence keeps its own similarity): ``lam`` 0.5 is the shipped default. The
vector search's own matches, the smoothing over neighbours, the fusion and every other
constant are the shipped ones. Each ``lam`` of the grid is scored on every question; then
leave-one-conversation-out: each fold picks ``lam`` on four conversations (mean R@10 over their
questions, then R@5; a value moves only on a strict gain, from ``lam`` 0) and is judged on the
fifth, as ``memvault bench locomo --cv`` does. Prints JSON. ``--search-sentences``: the vector
search also finds the ``top_k`` messages whose best sentence is closest (not shipped: the
search finds whole messages only).

    .venv/bin/python scripts/experiment_sentence_similarity.py \
        --data ../shared/data/locomo-dev/locomo_dev.json --lam 0,0.3,0.5,0.7,1.0

It patches a private attribute of ``Memory`` (``_start``, the semantic index): an experiment's
harness, not an example of the API.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np

from memvault import Memory
from memvault.bench.locomo import Conversation, embedder_spec, ingest, load, parse_conversation
from memvault.embeddings import resolve_embedder
from memvault.embeddings.cache import CachedEmbedder
from memvault.recall import RecallOptions
from memvault.recall.types import MessageRef

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
KS = (5, 10, 25)
Answer = tuple[str, int, dict[int, float]]
"""One question's (conversation, category, recall@k by k)."""


async def sentence_vectors(semantic: Any, conversation: Conversation) -> dict[tuple[str, str], Any]:
    """Each turn's sentences' vectors as the store holds them (``embed_sentences``, shipped)."""
    keys = [(f"session-{session.number}", turn.dia_id.replace(":", "-"))
            for session in conversation.sessions for turn in session.turns]
    found = await semantic.store.sentence_embeddings_of(conversation.sample_id, keys)
    dimensions = semantic.embedder.dimensions
    return {(thread_id, message_id):
            np.frombuffer(blob, dtype="<f2").reshape(-1, dimensions).astype(np.float32)
            for thread_id, message_id, blob in found}


def blend(semantic: Any, by_key: dict[tuple[str, str], Any], lam: float) -> Any:
    """The semantic index's ``similarities``, blended with each message's best sentence."""
    whole = type(semantic).similarities

    async def similarities(query: str, resource_id: str, refs: Any) -> Any:
        found = await whole(semantic, query, resource_id, refs)
        if lam == 0:
            return found
        vector = await semantic.query_vector(query)
        out = {}
        for ref, similarity in found.items():
            own = by_key.get((ref[0], ref[1]))
            best = similarity if own is None else float((own @ vector).max())
            out[ref] = (1 - lam) * similarity + lam * best
        return out

    return similarities


def sentence_search(semantic: Any, by_key: dict[tuple[str, str], Any]) -> Any:
    """The semantic index's ``search``, its matches joined by the ``top_k`` messages (of several
    sentences) whose best sentence is closest to the query (found both ways: once, best score)."""
    whole = type(semantic).search
    keys = list(by_key)
    matrix = np.concatenate([by_key[key] for key in keys])
    starts = np.cumsum([0] + [len(by_key[key]) for key in keys[:-1]])

    async def search(query: str, resource_id: str, thread_id: str | None, top_k: int) -> Any:
        found = dict(await whole(semantic, query, resource_id, thread_id, top_k))
        best = np.maximum.reduceat(matrix @ await semantic.query_vector(query), starts)
        for i in np.argsort(-best)[:top_k]:
            ref = MessageRef(*keys[i])
            if thread_id is None or ref.thread_id == thread_id:
                found[ref] = max(found.get(ref, -1.0), float(best[i]))
        return list(found.items())

    return search


async def conversations(data: str, folder: Path) -> AsyncIterator[tuple[Conversation, Memory, Any]]:
    """Each conversation of ``data`` ingested as the bench does (MiniLM, flushed), with its memory
    and semantic index; the memory is closed once the caller moves on."""
    model = CachedEmbedder(resolve_embedder(embedder_spec(MODEL)), max_entries=200_000, ttl=None)
    for raw in load(data):
        conversation = parse_conversation(raw)
        memory = await Memory.open(f"sqlite:///{folder / (conversation.sample_id + '.db')}", embedder=model)
        try:
            await ingest(memory, conversation)
            await memory.flush()
            semantic = await memory._start()
            assert semantic is not None
            yield conversation, memory, semantic
        finally:
            await memory.close()


def answer(conversation: Conversation, question: Any, hits: list[Any]) -> Answer:
    """The share of ``question``'s evidence among the first k ``hits``, for each k of ``KS``."""
    found = [h.message.metadata.get("dia_id") for h in hits]
    evidence = set(question.evidence)
    return (conversation.sample_id, question.category,
            {k: len(evidence & set(found[:k])) / len(evidence) for k in KS})


async def score(
    data: str, lams: list[float], folder: Path, search: bool = False
) -> dict[float, list[Answer]]:
    answers: dict[float, list[Answer]] = {lam: [] for lam in lams}
    async for conversation, memory, semantic in conversations(data, folder):
        by_key = await sentence_vectors(semantic, conversation)
        if search:
            semantic.search = sentence_search(semantic, by_key)  # type: ignore[method-assign]
        for lam in lams:
            semantic.similarities = blend(semantic, by_key, lam)  # type: ignore[method-assign]
            options = RecallOptions(top_k=max(KS), message_range=0, last_n=0, working_memory=False,
                                    sentence_weight=0.0)  # the blend is this script's
            for question in conversation.questions:
                result = await memory.recall(resource_id=conversation.sample_id, query=question.text,
                                             options=options)
                answers[lam].append(answer(conversation, question, result.hits))
    return answers


def _mean(rows: list[Answer], k: int) -> float:
    return 100.0 * statistics.fmean(r[2][k] for r in rows) if rows else 0.0


def folds(answers: dict[float, list[Answer]], start: float, constant: str = "lam") -> dict[str, Any]:
    """Leave-one-conversation-out over the grid ``answers`` (keyed by the value of ``constant``,
    the name the per-fold table gives the value each fold chose), starting from ``start``."""
    conversations = list(dict.fromkeys(r[0] for r in answers[start]))
    table: list[dict[str, Any]] = []
    pooled = []
    for held in conversations:
        def objective(lam: float, held: str = held) -> tuple[float, float]:
            train = [r for r in answers[lam] if r[0] != held]
            return round(_mean(train, 10), 9), round(_mean(train, 5), 9)

        chosen = start
        for lam in answers:
            if objective(lam) > objective(chosen):
                chosen = lam
        out = [r for r in answers[chosen] if r[0] == held]
        base = [r for r in answers[start] if r[0] == held]
        pooled += [(r, b) for r, b in zip(out, base, strict=True)]
        table.append({"held_out": held, "questions": len(out), f"chosen_{constant}": chosen,
                      "r5": round(_mean(out, 5), 2), "r10": round(_mean(out, 10), 2),
                      "shipped_r5": round(_mean(base, 5), 2), "shipped_r10": round(_mean(base, 10), 2)})
    categories = {}
    for category in sorted({r[1] for r, _ in pooled}):
        chosen_rows = [r for r, _ in pooled if r[1] == category]
        base_rows = [b for r, b in pooled if r[1] == category]
        categories[category] = {
            "questions": len(chosen_rows),
            "r5": round(_mean(chosen_rows, 5), 2), "r10": round(_mean(chosen_rows, 10), 2),
            "shipped_r5": round(_mean(base_rows, 5), 2), "shipped_r10": round(_mean(base_rows, 10), 2),
        }
    return {
        "folds": table,
        "fold_means": {name: round(statistics.fmean(f[name] for f in table), 2)
                       for name in ("r5", "r10", "shipped_r5", "shipped_r10")},
        "held_out_by_category": categories,
    }


def grid(text: str) -> list[float]:
    """The comma-separated values of ``text``, with 0 (the shipped pipeline) first if it is missing."""
    values = [float(x) for x in text.split(",")]
    return values if 0.0 in values else [0.0, *values]


def all_five(answers: dict[float, list[Answer]]) -> dict[str, dict[str, float]]:
    """Each value's R@k over every question, and R@10 by category."""
    return {str(value): {f"r{k}": round(_mean(rows, k), 2) for k in KS} | {
        f"category_{c}_r10": round(_mean([r for r in rows if r[1] == c], 10), 2)
        for c in sorted({r[1] for r in rows})} for value, rows in answers.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--lam", default="0,0.3,0.5,0.7,1.0",
                        help="the grid of lam, comma-separated (0 is always in it)")
    parser.add_argument("--search-sentences", action="store_true",
                        help="the vector search also finds the messages whose best sentence is closest")
    args = parser.parse_args()
    lams = grid(args.lam)
    with tempfile.TemporaryDirectory(prefix="memvault-sentences-") as folder:
        answers = asyncio.run(score(args.data, lams, Path(folder), args.search_sentences))
    print(json.dumps({"experiment": "sentence-similarity", "model": MODEL,
                      "search_sentences": args.search_sentences,
                      "all_five": all_five(answers), "cv": folds(answers, 0.0)}, indent=1))


if __name__ == "__main__":
    main()
