"""A question asked before is rarely the answer to the one asked now.

A recall query is often a question ("What kinds of yoga has Maria tried?"), and the messages
most like it, in words and in meaning, are often questions too ("What kind of yoga is it?"):
they share its question words and its topic, but the answer sits in a statement. So each
candidate's fused score is multiplied by ``1 - penalty * q``, q its *question share*: the share
of its sentences that end with a question mark (:func:`question_share`). A message of
statements keeps its score; "Wow! What kind of yoga is it?" loses half the penalty. On LoCoMo
11 % of the evidence turns end with a question mark, against 25 % of all turns
(docs/benchmarks.md has the cross-validation that chose the penalties).

Only the order near the top depends on it, so :func:`penalise_questions` reads the text of as
few candidates as it needs: a penalty only lowers a score, so once ``needed`` candidates score,
penalised, more than the next candidate does unpenalised, no later candidate can pass
them. Computed from each candidate's own text, so it depends on the recalled resource's data
alone.

Example::

    >>> question_share("Wow, nice! What kind of yoga is it?")
    0.5
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Mapping, Sequence

from memvault.recall.types import Key
from memvault.stores.passages import Passage

_SENTENCE = re.compile(r"([^.!?\u3002\n]+)([.!?\u3002]*)")
"""A run of text up to its end marks (or a line's end), and those marks."""
_LETTER = re.compile(r"[^\W_]")


def question_share(text: str) -> float:
    """The share, in [0, 1], of the sentences of ``text`` that end with a question mark: a
    sentence is a run of text holding a letter or digit, up to ``.``, ``!``, ``?``, ``。`` or a
    line's end, and it is a question when its end marks hold a ``?`` ("Really?!"). Indexed text
    (:func:`~memvault.rules.words.fold_text`) has full-width marks folded to these. 0 for a
    text with no sentence."""
    sentences = questions = 0
    for body, marks in _SENTENCE.findall(text):
        if _LETTER.search(body):
            sentences += 1
            questions += "?" in marks
    return questions / sentences if sentences else 0.0


def penalise_questions(
    ranked: Sequence[tuple[Key, float]],
    passages: Mapping[Key, Passage],
    penalty: float,
    needed: int,
    order: Callable[[tuple[Key, float]], tuple[object, ...]],
) -> list[tuple[Key, float]]:
    """``ranked`` (best first, by ``order``) with each score multiplied by
    ``1 - penalty * question_share(text)``, ranked again by ``order``.

    Exact for the first ``needed`` entries: candidates are penalised in ``ranked``'s order until
    ``needed`` of them score more than the next one does unpenalised; the candidates after
    that keep their scores and follow, in their order, the penalised ones that did not make the
    first ``needed``. Pass ``needed=len(ranked)`` to penalise every candidate. ``penalty`` 0
    returns ``ranked`` unchanged."""
    if not penalty or not ranked:
        return list(ranked)
    done: list[tuple[Key, float]] = []
    best: list[float] = []  # a heap of the ``needed`` best penalised scores
    index = 0
    while index < len(ranked):
        key, score = ranked[index]
        if len(best) >= needed and best[0] > score:
            break  # ``needed`` scores the rest (each at most ``score``) cannot reach or tie
        penalised = score * (1.0 - penalty * question_share(passages[key].text))
        done.append((key, penalised))
        if len(best) < needed:
            heapq.heappush(best, penalised)
        elif penalised > best[0]:
            heapq.heapreplace(best, penalised)
        index += 1
    done.sort(key=order)
    return [*done[:needed], *heapq.merge(done[needed:], ranked[index:], key=order)]  # both sorted
