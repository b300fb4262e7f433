"""Diversity: a top k that is not several copies of one passage, nor all from one conversation.

Recall scores each message with its neighbours' words (:mod:`memvault.recall.lexical`), so the
turns around a strong match score almost as high as the match itself and can fill the top k
with one passage; and a question whose answer is spread over several sessions (LoCoMo's
multi-hop questions) needs hits from each of them. So the final top k is picked greedily: each
step takes the candidate with the best *penalised* score::

    score * (1 - thread_penalty) ** n * (1 - neighbour_penalty) ** m

n the hits already taken from its thread, m those taken within ``reach`` positions of it in
that thread (by ``seq``). With both penalties 0 this is the plain ranking. It only reorders:
it returns ``min(top_k, len(ranked))`` hits, never fewer, each with its penalised score (so
the scores are non-increasing). Computed from the candidates of one recall, so it depends on
the recalled resource's data alone.

Example::

    >>> ranked = [(("a", "1"), 1.0), (("a", "2"), 0.9), (("b", "3"), 0.6)]
    >>> [key for key, _ in diversify(ranked, {}, 2, thread_penalty=0.5)]
    [('a', '1'), ('b', '3')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memvault.model import Message
from memvault.recall.types import Key
from memvault.stores.passages import Passage

REACH = 1
"""How far (in positions of a thread) a taken hit makes a candidate its neighbour."""


def diversify(
    ranked: Sequence[tuple[Key, float]],
    messages: Mapping[Key, Message | Passage],
    top_k: int,
    *,
    thread_penalty: float = 0.0,
    neighbour_penalty: float = 0.0,
    reach: int = REACH,
) -> list[tuple[Key, float]]:
    """The ``top_k`` best of ``ranked`` (best first) by penalised score (see the module doc),
    each with that score; ties keep ``ranked``'s order. A message without a ``seq`` has no
    neighbours. Both penalties 0: ``ranked[:top_k]``."""
    if (thread_penalty <= 0 and neighbour_penalty <= 0) or top_k <= 1:
        return list(ranked[:top_k])
    per_thread, per_neighbour = 1.0 - thread_penalty, 1.0 - neighbour_penalty
    left = list(ranked)
    taken_threads: dict[str, int] = {}
    taken_seqs: dict[str, list[int]] = {}
    out: list[tuple[Key, float]] = []
    while left and len(out) < top_k:
        best_i, best = 0, -1.0
        for i, (key, score) in enumerate(left):
            if score <= best:  # penalties only lower a score, and `left` is best first
                break
            penalised = score * per_thread ** taken_threads.get(key[0], 0)
            seq = messages[key].seq if key in messages else None
            if neighbour_penalty > 0 and seq is not None:
                near = sum(1 for s in taken_seqs.get(key[0], ()) if abs(s - seq) <= reach)
                penalised *= per_neighbour ** near
            if penalised > best:
                best_i, best = i, penalised
        key, _ = left.pop(best_i)
        out.append((key, best))
        taken_threads[key[0]] = taken_threads.get(key[0], 0) + 1
        seq = messages[key].seq if key in messages else None
        if seq is not None:
            taken_seqs.setdefault(key[0], []).append(seq)
    return out
