"""Pseudo-relevance feedback: words the best lexical candidates share, added to the query.

A question's words find the turn that echoes them; the turns around it in other sessions often
use other words for the same thing ("painting" / "canvas", "camping" / "tent"). So, RM3-style,
the ``docs`` best-scored candidates of one recall are taken as relevant, and their words are
weighted by ``sum over those candidates of (score / best score) * (count / length)`` times the
word's inverse document frequency in the scored pool; the ``terms`` best words that are not
query terms, stop words, numbers or shorter than 3 letters become the expansion. The lexical
scorer (:mod:`memvault.recall.lexical`) then adds their BM25 score over the same pool, at a small
weight: it re-scores the pool (the full-text hits and their nearest neighbours), and never adds
a message the pool does not hold (no second search). Everything is computed from the candidates
of one recall (the resource's own messages), so it depends on the recalled resource's data
alone, and there is nothing to store.

Example::

    >>> own = [["paint", "sunset", "lake"], ["lake", "sunset"], ["cat"], ["dog"]]
    >>> [word for word, _ in expansion(own, [3.0, 2.0, 0.0, 0.0], [("paint",)], docs=2, terms=2)]
    ['lake', 'sunset']
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from memvault.rules.words import STOP_WORDS, stem

_STOP_STEMS = frozenset(stem(word) for word in STOP_WORDS) | STOP_WORDS
MIN_LETTERS = 3
"""A shorter word is never an expansion term."""


def expansion(
    own: Sequence[Sequence[str]],
    scores: Sequence[float],
    query: Sequence[tuple[str, ...]],
    docs: int,
    terms: int,
) -> list[tuple[str, float]]:
    """The expansion terms of a pool whose members have the stemmed tokens ``own`` and the
    scores ``scores``, best first, each with its weight (the best 1.0); ``query``'s terms are
    left out. Empty when no member scores above 0."""
    ranked = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: -scores[i])[:docs]
    if not ranked:
        return []
    best = scores[ranked[0]]
    excluded = {term[0] for term in query if len(term) == 1} | _STOP_STEMS
    weights: dict[str, float] = {}
    for i in ranked:
        if not own[i]:
            continue
        words = [w for w in own[i] if len(w) >= MIN_LETTERS and not w.isdigit() and w not in excluded]
        share = scores[i] / best / len(own[i])
        for word, count in Counter(words).items():
            weights[word] = weights.get(word, 0.0) + share * count
    if not weights:
        return []
    n = len(own)
    having: Counter[str] = Counter()
    for toks in own:
        having.update(set(toks) & weights.keys())
    ranked_terms = sorted(
        ((word, weight * math.log((n - having[word] + 0.5) / (having[word] + 0.5) + 1.0))
         for word, weight in weights.items()),
        key=lambda item: (-item[1], item[0]),
    )[:terms]
    top = ranked_terms[0][1]
    if top <= 0:
        return []
    return [(word, weight / top) for word, weight in ranked_terms]
