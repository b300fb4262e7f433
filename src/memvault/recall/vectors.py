"""Recall's vector side: the vector search's matches, read back from the store, and scored.

Two levels, depending on what the caller gives:

- a :class:`~memvault.recall.types.VectorSearch` alone: its own matches keep their similarity
  (the other candidates have no vector score);
- with a :class:`~memvault.recall.types.VectorScorer` too (``Memory.recall`` with an
  embedder): every candidate, lexical or vector, gets a score, and that score is smoothed over
  the message's neighbours in its thread, as the words are (:mod:`memvault.recall.lexical`).
  A reply such as "Yes, last Sunday!" is close in meaning to nothing; with the question it
  answers beside it, it is close to questions about that Sunday.

Anything failing on the vector side (the search, the scorer, a malformed match) is logged and
put in the result's warnings; recall then goes on with what it has. Matches are always read
back from the store under the recalled resource, so nothing of another resource can leak.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from memvault.model import Message, check_id
from memvault.recall.options import RecallOptions
from memvault.recall.reader import RecallReader
from memvault.recall.sentences import blend
from memvault.recall.types import Key, MessageRef, SentenceScorer, VectorScorer, VectorSearch
from memvault.stores.passages import Passage

logger = logging.getLogger("memvault.recall")

Neighbourhood = list[tuple[int, Key]]
"""A message's neighbours within the window, itself included: ``(distance, key)`` pairs."""


def warn(warnings: list[str], text: str) -> None:
    logger.warning(text)
    warnings.append(text)


async def vector_matches(
    search: VectorSearch,
    query: str,
    resource_id: str,
    thread_id: str | None,
    top_k: int,
    warnings: list[str],
) -> list[tuple[MessageRef, float]]:
    """The vector search's matches as refs. A failure (or an answer that is not a list of
    matches) is logged and gives no matches; a malformed match is logged and skipped."""
    try:
        answer = search(query, resource_id, thread_id, top_k)
        if inspect.isawaitable(answer):
            answer = await answer
        matches = list(cast(Sequence[Any], answer))[:top_k]
    except asyncio.CancelledError:
        raise
    except Exception as error:  # a failing embedder or index must never fail a turn
        warn(warnings, f"vector search failed, recalling by words only: {type(error).__name__}: {error}")
        return []
    refs, bad = [], []
    for match in matches:
        try:
            refs.append(_ref(match))
        except (TypeError, ValueError) as error:
            bad.append(f"{type(error).__name__}: {error}")
    if bad:
        warn(warnings, f"vector search gave {len(bad)} malformed match(es), skipped: {bad[0]}")
    return refs


def _ref(match: Any) -> tuple[MessageRef, float]:
    try:
        ref, score = match
    except (TypeError, ValueError):
        raise TypeError(f"a vector match must be a (message ref, score) pair, got {match!r}") from None
    if isinstance(ref, Message):
        if ref.thread_id is None:
            raise ValueError(f"vector match {ref.id!r} is a message without a thread_id")
        ref = MessageRef(ref.thread_id, ref.id)
    else:
        thread, message_id = ref
        if not isinstance(thread, str) or not isinstance(message_id, str):
            raise TypeError(f"a vector match must name (thread_id, message_id), got {ref!r}")
        ref = MessageRef(check_id(thread), check_id(message_id))
    value = float(score)
    if value != value:
        raise ValueError(f"vector match {ref} has a NaN score")
    return ref, value


def in_scope(
    matches: list[tuple[MessageRef, float]], thread_id: str | None, options: RecallOptions
) -> dict[Key, float]:
    """The matches in ``thread_id`` (any thread when ``None``) at or above the options'
    ``min_vector_score``, with their best similarity."""
    scores: dict[Key, float] = {}
    for ref, score in matches:
        if thread_id is not None and ref.thread_id != thread_id:
            continue
        if options.min_vector_score is not None and score < options.min_vector_score:
            continue
        key = (ref.thread_id, ref.message_id)
        scores[key] = max(score, scores.get(key, score))
    return scores


async def read_matches(
    reader: RecallReader,
    thread_id: str | None,
    matches: list[tuple[MessageRef, float]],
    known: Mapping[Key, Passage],
    options: RecallOptions,
    window: int,
) -> tuple[dict[Key, float], dict[str, list[Passage]], dict[Key, Passage]]:
    """The matches that exist in the store under the reader's resource (and in ``thread_id``
    when given), with their similarity; the ones not in ``known`` (the lexical candidates) are
    read, with ``window`` neighbours each side. Returns the similarities, the reads (per
    thread, runs of messages in thread order) and the matched messages that were read."""
    scores = in_scope(matches, thread_id, options)
    missing: dict[str, list[str]] = {}
    for key in scores:
        if key not in known:
            missing.setdefault(key[0], []).append(key[1])
    reads = await reader.passages(missing, window)
    found: dict[Key, Passage] = {}
    for name, read in reads.items():
        wanted = set(missing[name])
        for passage in read:
            if passage.id in wanted:
                found[(name, passage.id)] = passage
    return {key: score for key, score in scores.items() if key in known or key in found}, reads, found


def neighbourhoods(
    reads: dict[str, list[Passage]],
    keys: set[Key],
    window: int,
    positions: dict[str, dict[str, int]] | None = None,
) -> dict[Key, Neighbourhood]:
    """Each key found in ``reads`` with its neighbours up to ``window`` each side.

    A read is a list of runs in thread order; every key was read with at least ``window``
    neighbours each side (or its thread ends there), so positions around a key in its list are
    its true neighbours in the thread. ``positions`` keeps each thread's message positions
    between calls over the same ``reads``."""
    by_thread: dict[str, list[str]] = {}
    for name, message_id in keys:
        by_thread.setdefault(name, []).append(message_id)
    if positions is None:
        positions = {}
    out: dict[Key, Neighbourhood] = {}
    for name, found in reads.items():  # in the reads' order, as the scorer is then asked
        ids = by_thread.get(name)
        if not ids:
            continue
        position = positions.get(name)
        if position is None:  # a read holds each message once
            position = positions[name] = {m.id: i for i, m in enumerate(found)}
        for i in sorted(p for message_id in ids if (p := position.get(message_id)) is not None):
            low, high = max(0, i - window), min(len(found), i + window + 1)
            out[(name, found[i].id)] = [(abs(j - i), (name, found[j].id)) for j in range(low, high)]
    return out


async def scored(
    scorer: VectorScorer,
    query: str,
    resource_id: str,
    around: dict[Key, Neighbourhood],
    decay: float,
    warnings: list[str],
    minimum: float | None = None,
    sentence_weight: float = 0.0,
) -> dict[Key, float] | None:
    """Each key's similarity averaged over its neighbourhood, the neighbour at distance d
    weighted ``decay ** d`` (neighbours without a vector are skipped). With ``sentence_weight``
    and a scorer that has ``sentence_similarities`` (:class:`~memvault.recall.types.
    SentenceScorer`), a message's similarity is first blended with its best sentence's
    (:func:`memvault.recall.sentences.blend`). With ``minimum``, a key whose own similarity
    (not blended) is below it (or who has none) gets no score. ``None`` when the scorer failed
    (logged and in ``warnings``)."""
    unique = dict.fromkeys(key for near in around.values() for _, key in near)
    if not unique:
        return {}
    refs = [MessageRef(*key) for key in unique]
    try:
        by_sentence: Mapping[Key, float] = {}
        if sentence_weight > 0 and isinstance(scorer, SentenceScorer):  # both reads at once
            similarity, by_sentence = await asyncio.gather(  # type: ignore[assignment]
                scorer.similarities(query, resource_id, refs),
                scorer.sentence_similarities(query, resource_id, refs))
        else:
            similarity = await scorer.similarities(query, resource_id, refs)
    except asyncio.CancelledError:
        raise
    except Exception as error:
        warn(warnings, f"vector scoring failed, using the vector search's matches only: "
                       f"{type(error).__name__}: {error}")
        return None
    # a MessageRef is a tuple: the answer is looked up by the plain (thread, id) keys
    found: Mapping[Key, float] = similarity  # type: ignore[assignment]
    own_values = {key: float(value) for key in unique if (value := found.get(key)) is not None}
    values = blend(own_values, {key: float(v) for key, v in by_sentence.items()}, sentence_weight)
    farthest = max((distance for near in around.values() for distance, _ in near), default=0)
    weights = [decay ** distance for distance in range(farthest + 1)]
    out: dict[Key, float] = {}
    for key, near in around.items():
        if minimum is not None:
            own = own_values.get(key)
            if own is None or own < minimum:
                continue
        total = weight = 0.0
        for distance, other in near:
            value = values.get(other)
            if value is not None:
                w = weights[distance]
                total += w * value
                weight += w
        if weight > 0:
            out[key] = total / weight
    return out
