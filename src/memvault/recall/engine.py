"""The recall pipeline: candidates → fusion → threshold → top k → neighbours → merge.

1. Recent window: the newest messages of the current thread (``options.last_n``); they are fed
   anyway, so they are never hits.
2. Candidates: lexical (:mod:`memvault.recall.lexical`) and, when given, the vector search's
   matches, scored by meaning (:mod:`memvault.recall.vectors`); a vector search that fails is
   logged and skipped.
3. Fusion (:mod:`memvault.recall.fusion`), thresholds, the ``top_k`` best.
4. Each hit with ``message_range`` neighbours, read from the store; the recalled messages,
   oldest first, without tool calls or results whose other half is not recalled too
   (:func:`memvault.rules.history.pair_tool_parts`), merged with the window
   (:mod:`memvault.recall.merge`).

No model is called here: an embedder, if any, lives behind the vector search.
"""

from __future__ import annotations

import asyncio

from memvault.errors import ValidationError
from memvault.model import Message
from memvault.recall import merge as merging
from memvault.recall import vectors
from memvault.recall.fusion import reciprocal_rank_fusion, weighted_fusion
from memvault.recall.lexical import Key, lexical_candidates, read_around
from memvault.recall.options import MATCHED_VECTOR_WEIGHT, SCORED_VECTOR_WEIGHT, RecallOptions
from memvault.recall.types import (
    RecallHit,
    RecallMemory,
    RecallResult,
    Source,
    VectorScorer,
    VectorSearch,
)
from memvault.rules.history import pair_tool_parts


async def recall(
    memory: RecallMemory,
    *,
    thread_id: str | None,
    resource_id: str,
    query: str,
    options: RecallOptions | None = None,
    vector_search: VectorSearch | None = None,
    vector_scorer: VectorScorer | None = None,
) -> RecallResult:
    """Find the older messages relevant to ``query`` and merge them with the recent window.

    ``memory`` is a :class:`memvault.Memory` (or anything with its public read methods).
    ``thread_id`` is the current thread: the recent window comes from it, and with
    ``scope="thread"`` only it is searched. It may be ``None`` for a resource-wide recall with
    no current conversation (then there is no window).

    ``vector_scorer`` (with a ``vector_search``) scores every candidate by meaning, smoothed
    over its neighbours (:mod:`memvault.recall.vectors`).

    Never raises because the vector search or scorer failed: recall then uses words alone and says so in
    ``result.warnings`` and in a logged warning. Store errors (a bad id, a closed store) do raise.
    """
    options = options or RecallOptions()
    if not isinstance(query, str):
        raise ValidationError(f"query must be a string, got {type(query).__name__}")
    if options.scope == "thread" and thread_id is None:
        raise ValidationError('scope="thread" needs a thread_id')
    search_thread = thread_id if options.scope == "thread" else None
    warnings: list[str] = []

    window: list[Message] = []
    if thread_id is not None and options.last_n != 0:
        window = await memory.get_history(thread_id=thread_id, resource_id=resource_id,
                                          last_n=options.last_n)
    in_window = {merging.key(m) for m in window}

    lexical_task = lexical_candidates(memory, resource_id=resource_id, thread_id=search_thread,
                                      query=query, options=options)
    if vector_search is not None:
        lexical, matches = await asyncio.gather(lexical_task, vectors.vector_matches(
            vector_search, query, resource_id, search_thread, options.vector_candidates, warnings))
    else:
        lexical, matches = await lexical_task, []
        vector_scorer = None  # a scorer alone finds nothing new: it only scores a search's matches

    messages: dict[Key, Message] = {}
    lexical_scores: dict[Key, float] = {}
    for key, candidate in lexical.candidates.items():
        if key not in in_window:
            messages[key] = candidate.message
            lexical_scores[key] = candidate.score
    # with a scorer, each match's neighbours join the candidates, and they need theirs
    reach = 2 * options.vector_context_window if vector_scorer is not None else 0
    vector_scores, reads = await vectors.read_matches(
        memory, resource_id, search_thread, matches, messages, options, reach)
    windowed = {(thread or "", message_id) for thread, message_id in in_window}
    for window_key in windowed:
        vector_scores.pop(window_key, None)
    if vector_scorer is not None:
        vector_scores = await _scored(vector_scorer, query, resource_id, lexical_scores, vector_scores,
                                      lexical.threads, reads, windowed, messages, options, warnings)

    sources = {"lexical": lexical_scores, "vector": vector_scores}
    weights = {"lexical": options.lexical_weight, "vector": _vector_weight(options, vector_scorer)}
    if options.fusion == "rrf":
        fused = reciprocal_rank_fusion(sources, weights, k=options.rrf_k)
    else:
        fused = weighted_fusion(sources, weights, options.normalization)
    ranked = sorted(fused.items(), key=lambda item: (-item[1], messages[item[0]].created_at, item[0]))
    if ranked and options.relative_threshold > 0:
        floor = ranked[0][1] * options.relative_threshold
        ranked = [item for item in ranked if item[1] >= floor]
    ranked = ranked[: options.top_k]

    contexts = await _neighbours(memory, resource_id, [key for key, _ in ranked], messages,
                                 options.message_range)
    hits: list[RecallHit] = []
    recalled: list[Message] = []
    for key, score in ranked:
        if key not in contexts:  # deleted since it was found
            continue
        message = messages[key]
        context = tuple(m for m in contexts[key] if merging.key(m) not in in_window)
        recalled.extend(context)
        hits.append(RecallHit(
            message=message,
            score=score,
            source=_source(key in lexical_scores, key in vector_scores),
            thread_id=key[0],
            created_at=message.created_at,
            other_thread=key[0] != thread_id,
            lexical_score=lexical_scores.get(key),
            vector_score=vector_scores.get(key),
            context=context,
        ))
    # like the history window, recalled messages never separate a tool call from its result
    recalled = pair_tool_parts(merging.chronological(merging.without(recalled, window)))
    working_memory = None
    if options.working_memory:
        try:
            working_memory = await memory.get_working_memory(resource_id=resource_id, thread_id=thread_id)
        except ValidationError:
            if thread_id is not None:
                raise
            # a thread-scoped working memory and no current thread: there is none to feed
    return RecallResult(
        messages=merging.merge(recalled, window, options.merge),
        hits=hits,
        recalled=recalled,
        history=list(window),
        working_memory=working_memory,
        summary=None,
        warnings=warnings,
    )


def _source(lexical: bool, vector: bool) -> Source:
    if lexical and vector:
        return "both"
    return "lexical" if lexical else "vector"


def _vector_weight(options: RecallOptions, scorer: VectorScorer | None) -> float:
    if options.vector_weight is not None:
        return options.vector_weight
    return SCORED_VECTOR_WEIGHT if scorer is not None else MATCHED_VECTOR_WEIGHT


async def _scored(
    scorer: VectorScorer,
    query: str,
    resource_id: str,
    lexical_scores: dict[Key, float],
    vector_scores: dict[Key, float],
    lexical_reads: dict[str, list[Message]],
    vector_reads: dict[str, list[Message]],
    in_window: set[Key],
    messages: dict[Key, Message],
    options: RecallOptions,
    warnings: list[str],
) -> dict[Key, float]:
    """Every candidate's context-smoothed similarity (:mod:`memvault.recall.vectors`): the
    lexical candidates, the vector search's matches and the matches' neighbours (added to
    ``messages``). The matches' own similarities when the scorer fails."""
    window = options.vector_context_window
    around = vectors.neighbourhoods(lexical_reads, set(lexical_scores), window)
    matched = vectors.neighbourhoods(vector_reads, set(vector_scores) - set(around), window)
    pool = {key for near in matched.values() for _, key in near} - set(around) - in_window
    around.update(matched)
    around.update(vectors.neighbourhoods(vector_reads, pool - set(around), window))
    smoothed = await vectors.scored(scorer, query, resource_id, around, options.context_decay, warnings,
                                    minimum=options.min_vector_score)
    if smoothed is None:
        return vector_scores
    by_key = {(name, m.id): m for name, read in vector_reads.items() for m in read}
    for key in pool:
        if key in smoothed:
            messages[key] = by_key[key]
    return smoothed


async def _neighbours(
    memory: RecallMemory,
    resource_id: str,
    keys: list[Key],
    messages: dict[Key, Message],
    message_range: int,
) -> dict[Key, tuple[Message, ...]]:
    """Each hit with its ``message_range`` neighbours on each side, in thread order."""
    if message_range == 0:
        return {key: (messages[key],) for key in keys}
    by_thread: dict[str, list[str]] = {}
    for thread, message_id in keys:
        by_thread.setdefault(thread, []).append(message_id)
    out: dict[Key, tuple[Message, ...]] = {}
    for name, found in (await read_around(memory, resource_id, by_thread, message_range)).items():
        position = {m.id: i for i, m in enumerate(found)}
        for message_id in by_thread[name]:
            i = position.get(message_id)
            if i is None:  # deleted since it was found
                continue
            out[(name, message_id)] = tuple(found[max(0, i - message_range) : i + message_range + 1])
    return out
