"""A thread prior: a candidate in a thread where the query finds much is worth more.

Evidence for a question tends to sit in the conversation (thread, e.g. a dated session) that is
about the question's topic, and such a thread has several candidates, not one. So a thread is
scored by the sum of its ``top`` best fused candidate scores, the scores divided by the best
thread's, and each candidate's score multiplied by ``1 + weight * thread_score``: a session-level
ranking applied to the turn-level one, with no index beyond what recall already read. Computed
from the candidates of one recall, so it depends on the recalled resource's data alone.

Example::

    >>> thread_prior({("a", "1"): 1.0, ("a", "2"): 1.0, ("b", "3"): 1.0}, 1.0)
    {('a', '1'): 2.0, ('a', '2'): 2.0, ('b', '3'): 1.5}
"""

from __future__ import annotations

from collections.abc import Mapping

from memvault.recall.types import Key

TOP = 3
"""How many of a thread's best candidates make its score."""


def thread_prior(scores: Mapping[Key, float], weight: float, top: int = TOP) -> dict[Key, float]:
    """``scores`` each multiplied by ``1 + weight * (its thread's score / the best thread's)``;
    unchanged when ``weight`` is 0 or no thread scores above 0."""
    if not weight or not scores:
        return dict(scores)
    by_thread: dict[str, list[float]] = {}
    for (thread, _), score in scores.items():
        by_thread.setdefault(thread, []).append(score)
    totals = {thread: sum(sorted(found, reverse=True)[:top]) for thread, found in by_thread.items()}
    best = max(totals.values())
    if best <= 0:
        return dict(scores)
    return {key: score * (1.0 + weight * max(0.0, totals[key[0]]) / best) for key, score in scores.items()}
