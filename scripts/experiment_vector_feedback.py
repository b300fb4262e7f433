"""Experiment (issue 15): pseudo-relevance feedback by meaning (Rocchio), a second recall.

Multi-hop questions ("What activities does Melanie partake in?") have evidence in several
sessions that share few words with the question; the lexical feedback (``feedback_weight``)
re-scores the pool the words found and cannot reach them. This tries the same idea in the
embedding space: recall once with the shipped defaults (all-MiniLM-L6-v2, sentences on), take
the ``--docs`` best hits' stored vectors, and recall again with the query vector moved towards
them::

    q' = unit(q + beta * mean(v_1 .. v_docs))

(the second recall's vector search, its scoring of every candidate and the sentences' scores
all use ``q'``; the words are the question's). ``beta`` 0 is the shipped pipeline. Each
``beta`` of the grid is scored on every question of the five development conversations, then
leave-one-conversation-out as ``scripts/experiment_sentence_similarity.py`` does (each fold
picks ``beta`` on four conversations, R@10 then R@5, moving from 0 only on a strict gain, and
is judged on the fifth). Prints JSON.

    .venv/bin/python scripts/experiment_vector_feedback.py \
        --data ../shared/data/locomo-dev/locomo_dev.json --beta 0,0.2,0.4,0.7

It writes into a private attribute of the semantic index (its query-vector cache, so that one
query's vector is ``q'`` for the second recall): an experiment's harness, not an example of the API.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memvault.recall import RecallOptions

sys.path.insert(0, str(Path(__file__).parent))
from experiment_sentence_similarity import KS, MODEL, Answer, all_five, answer, conversations, folds, grid


async def centroid(semantic: Any, resource_id: str, hits: list[Any]) -> np.ndarray | None:
    """The mean of ``hits``' stored vectors, each at unit length (None when none is stored)."""
    refs = [(hit.thread_id, hit.message.id) for hit in hits]
    found = await semantic.store.embeddings_of(resource_id, refs)
    if not found:
        return None
    rows = np.stack([np.frombuffer(blob, dtype="<f4") for _, _, blob in found])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return np.asarray(rows.mean(axis=0))


def moved(vector: np.ndarray, towards: np.ndarray, beta: float) -> np.ndarray:
    """``unit(q + beta * towards)``."""
    out = vector + beta * towards
    return np.asarray(out / np.linalg.norm(out), dtype=np.float32)


async def score(data: str, betas: list[float], docs: int, folder: Path) -> dict[float, list[Answer]]:
    answers: dict[float, list[Answer]] = {beta: [] for beta in betas}
    options = RecallOptions(top_k=max(KS), message_range=0, last_n=0, working_memory=False)
    async for conversation, memory, semantic in conversations(data, folder):
        resource = conversation.sample_id
        for question in conversation.questions:
            first = await memory.recall(resource_id=resource, query=question.text, options=options)
            original = await semantic.query_vector(question.text)
            towards = await centroid(semantic, resource, first.hits[:docs])
            for beta in betas:
                result = first
                if beta and towards is not None:
                    semantic._queries[question.text] = moved(original, towards, beta)
                    result = await memory.recall(resource_id=resource, query=question.text,
                                                 options=options)
                    semantic._queries[question.text] = original
                answers[beta].append(answer(conversation, question, result.hits))
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--beta", default="0,0.2,0.4,0.7",
                        help="the grid of beta, comma-separated (0 is always in it)")
    parser.add_argument("--docs", type=int, default=3, help="how many of the first recall's hits")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvault-feedback-") as folder:
        answers = asyncio.run(score(args.data, grid(args.beta), args.docs, Path(folder)))
    print(json.dumps({"experiment": "vector-feedback", "model": MODEL, "docs": args.docs,
                      "all_five": all_five(answers), "cv": folds(answers, 0.0, "beta")}, indent=1))


if __name__ == "__main__":
    main()
