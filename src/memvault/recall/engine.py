"""The recall pipeline: candidates → fusion → threshold → top k → neighbours → merge.

1. Recent window: the newest messages of the current thread (``options.last_n``); they are fed
   anyway, so they are never hits.
2. Candidates: lexical (:mod:`memvault.recall.lexical`) and, when given, the vector search's
   matches, scored by meaning (:mod:`memvault.recall.vectors`); a vector search that fails is
   logged and skipped.
3. Fusion (:mod:`memvault.recall.fusion`), the thread prior (:mod:`memvault.recall.threads`),
   earlier questions put back (:mod:`memvault.recall.questions`), thresholds, the ``top_k``
   best, spread over threads (:mod:`memvault.recall.diversity`).
4. Each hit with ``message_range`` neighbours, read from the store; the recalled messages,
   oldest first, without tool calls or results whose other half is not recalled too
   (:func:`memvault.rules.history.pair_tool_parts`), merged with the window
   (:mod:`memvault.recall.merge`).

No model is called here: an embedder, if any, lives behind the vector search.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memvault.errors import ValidationError
from memvault.model import Message, valid_id
from memvault.recall import merge as merging
from memvault.recall import vectors
from memvault.recall.diversity import diversify
from memvault.recall.fusion import reciprocal_rank_fusion, weighted_fusion
from memvault.recall.lexical import lexical_candidates, lexical_span
from memvault.recall.options import RecallOptions, question_penalty, vector_weight
from memvault.recall.questions import penalise_questions
from memvault.recall.reader import RecallReader
from memvault.recall.threads import thread_prior
from memvault.recall.types import (
    Candidates,
    Key,
    RecallHit,
    RecallResult,
    VectorScorer,
    VectorSearch,
)
from memvault.rules.history import pair_tool_parts
from memvault.rules.words import query_terms
from memvault.stores.passages import Passage, SearchPool


async def recall(
    reader: RecallReader,
    *,
    thread_id: str | None,
    query: str,
    options: RecallOptions | None = None,
    vector_search: VectorSearch | None = None,
    vector_scorer: VectorScorer | None = None,
) -> RecallResult:
    """Find the older messages relevant to ``query`` and merge them with the recent window.

    ``reader`` reads for the recalled resource (:class:`~memvault.recall.reader.RecallReader`).
    ``thread_id`` is the current thread: the recent window comes from it, and with
    ``scope="thread"`` only it is searched. It may be ``None`` for a resource-wide recall with
    no current conversation (then there is no window).

    ``vector_scorer`` (with a ``vector_search``) scores every candidate by meaning, smoothed
    over its neighbours (:mod:`memvault.recall.vectors`).

    A query without words (empty, blank, punctuation: no term of
    :func:`~memvault.recall.lexical.query_terms`) recalls nothing, by words or by meaning: the
    result is the recent window alone, and the embedder is not called.

    Never raises because the vector search or scorer failed: recall then uses words alone and says so in
    ``result.warnings`` and in a logged warning. Store errors (a bad id, a closed store) do raise.
    """
    options = options or RecallOptions()
    if not isinstance(query, str):
        raise ValidationError(f"query must be a string, got {type(query).__name__}")
    if thread_id is not None:
        thread_id = valid_id(thread_id, "thread_id")
    if options.scope == "thread" and thread_id is None:
        raise ValidationError('scope="thread" needs a thread_id')
    search_thread = thread_id if options.scope == "thread" else None
    warnings: list[str] = []

    window: list[Message] = []
    if thread_id is not None and options.last_n != 0:
        if options.working_memory:  # both are read: in one store call where the store can
            await reader.read_turn(thread_id, options.last_n)
        window = await reader.window(thread_id, options.last_n)
    in_window = {merging.key(m) for m in window}

    has_words = bool(query_terms(query))
    if not has_words:
        vector_search = None  # no words, nothing to look for: by words or by meaning alike
    if vector_search is None:
        vector_scorer = None  # a scorer alone finds nothing new: it only scores a search's matches
    pool, matches = await asyncio.gather(
        reader.search_pool(query, thread_id=search_thread, limit=options.candidates,
                           message_range=lexical_span(options))
        if has_words else _no_pool(),
        vectors.vector_matches(vector_search, query, reader.resource_id, search_thread,
                               options.vector_candidates, warnings)
        if vector_search is not None else _nothing(),
    )
    # with a scorer, each match's neighbours join the candidates, and they need theirs
    reach = 2 * options.vector_context_window if vector_scorer is not None else 0
    await _read_matches(reader, vectors.in_scope(matches, search_thread, options), reach)
    lexical = lexical_candidates(query=query, pool=pool, options=options,
                                 with_scorer=vector_scorer is not None)

    candidates = Candidates()
    for key, candidate in lexical.candidates.items():
        if key not in in_window:
            candidates.passages[key] = candidate.passage
            candidates.lexical[key] = candidate.score
    vector_scores, reads, matched = await vectors.read_matches(reader, search_thread, matches,
                                                               candidates.passages, options, reach)
    candidates.passages.update(matched)
    windowed = {(thread or "", message_id) for thread, message_id in in_window}
    candidates.vector = {key: score for key, score in vector_scores.items() if key not in windowed}
    if vector_scorer is not None:
        scores, neighbours = await _scored(vector_scorer, query, reader.resource_id, candidates,
                                           lexical.threads, reads, windowed, options, warnings)
        candidates.vector = scores
        candidates.passages.update(neighbours)
    passages = candidates.passages

    sources = {"lexical": candidates.lexical, "vector": candidates.vector}
    weights = {"lexical": options.lexical_weight, "vector": vector_weight(options, vector_scorer is not None)}
    if options.fusion == "rrf":
        fused = reciprocal_rank_fusion(sources, weights, k=options.rrf_k)
    else:
        fused = weighted_fusion(sources, weights, options.normalization)
    fused = thread_prior(fused, options.thread_boost)

    def order(item: tuple[Key, float]) -> tuple[float, int, Key]:
        return -item[1], passages[item[0]].created_us, item[0]

    ranked = sorted(fused.items(), key=order)
    diverse = options.thread_diversity > 0 or options.neighbour_diversity > 0
    ranked = penalise_questions(ranked, passages, question_penalty(options, vector_scorer is not None),
                                len(ranked) if diverse else options.top_k, order)
    if ranked and options.relative_threshold > 0:
        floor = ranked[0][1] * options.relative_threshold
        ranked = [item for item in ranked if item[1] >= floor]
    ranked = diversify(ranked, passages, options.top_k, thread_penalty=options.thread_diversity,
                       neighbour_penalty=options.neighbour_diversity)

    contexts = await _neighbours(reader, [key for key, _ in ranked], passages, options.message_range)
    hits: list[RecallHit] = []
    recalled: list[Message] = []
    for key, score in ranked:
        if key not in contexts:  # deleted since it was found
            continue
        message = passages[key].message()
        context = tuple(m for m in contexts[key] if merging.key(m) not in in_window)
        recalled.extend(context)
        hits.append(RecallHit(
            message=message,
            score=score,
            source=candidates.source(key),
            thread_id=key[0],
            created_at=message.created_at,
            other_thread=key[0] != thread_id,
            lexical_score=candidates.lexical.get(key),
            vector_score=candidates.vector.get(key),
            context=context,
        ))
    # like the history window, recalled messages never separate a tool call from its result
    recalled = pair_tool_parts(merging.chronological(merging.without(recalled, window)))
    working_memory = await reader.note(thread_id) if options.working_memory else None
    return RecallResult(
        messages=merging.merge(recalled, window, options.merge),
        hits=hits,
        recalled=recalled,
        history=list(window),
        working_memory=working_memory,
        warnings=warnings,
    )


async def _nothing() -> list[Any]:
    return []


async def _no_pool() -> SearchPool:
    return SearchPool([], [])


async def _read_matches(reader: RecallReader, matched: dict[Key, float], reach: int) -> None:
    """Read the vector matches with the neighbours the scoring needs, in one read for every
    thread; what the search's pool read already holds is not read again."""
    wanted: dict[str, list[str]] = {}
    for name, message_id in matched:
        wanted.setdefault(name, []).append(message_id)
    if wanted:
        await reader.passages(wanted, reach)


async def _scored(
    scorer: VectorScorer,
    query: str,
    resource_id: str,
    candidates: Candidates,
    lexical_reads: dict[str, list[Passage]],
    vector_reads: dict[str, list[Passage]],
    in_window: set[Key],
    options: RecallOptions,
    warnings: list[str],
) -> tuple[dict[Key, float], dict[Key, Passage]]:
    """Every candidate's context-smoothed similarity (:mod:`memvault.recall.vectors`): the
    lexical candidates, the vector search's matches and the matches' neighbours, and those
    neighbours' messages (new candidates). The matches' own similarities, and no new candidate,
    when the scorer fails."""
    window = options.vector_context_window
    read: dict[str, dict[str, int]] = {}  # the positions in vector_reads
    around = vectors.neighbourhoods(lexical_reads, set(candidates.lexical), window)
    matched = vectors.neighbourhoods(vector_reads, set(candidates.vector) - set(around), window, read)
    pool = {key for near in matched.values() for _, key in near} - set(around) - in_window
    around.update(matched)
    around.update(vectors.neighbourhoods(vector_reads, pool - set(around), window, read))
    smoothed = await vectors.scored(scorer, query, resource_id, around, options.vector_context_decay,
                                    warnings, minimum=options.min_vector_score,
                                    sentence_weight=options.sentence_weight)
    if smoothed is None:
        return candidates.vector, {}
    by_key = {(name, p.id): p for name, read in vector_reads.items() for p in read}
    return smoothed, {key: by_key[key] for key in pool if key in smoothed}


async def _neighbours(
    reader: RecallReader,
    keys: list[Key],
    passages: dict[Key, Passage],
    message_range: int,
) -> dict[Key, tuple[Message, ...]]:
    """Each hit with its ``message_range`` neighbours on each side, in thread order."""
    if message_range == 0:
        return {key: (passages[key].message(),) for key in keys}
    by_thread: dict[str, list[str]] = {}
    for thread, message_id in keys:
        by_thread.setdefault(thread, []).append(message_id)
    out: dict[Key, tuple[Message, ...]] = {}
    for name, found in (await reader.around(by_thread, message_range)).items():
        position = {m.id: i for i, m in enumerate(found)}
        for message_id in by_thread[name]:
            i = position.get(message_id)
            if i is None:  # deleted since it was found
                continue
            out[(name, message_id)] = tuple(found[max(0, i - message_range) : i + message_range + 1])
    return out
