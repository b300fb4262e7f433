"""The recall pipeline: candidates → fusion → threshold → top k → neighbours → merge.

1. Recent window: the newest messages of the current thread (``options.last_n``); they are fed
   anyway, so they are never hits.
2. Candidates: lexical (:mod:`memvault.recall.context`) and, when given, the vector search;
   a vector search that fails is logged and skipped.
3. Fusion (:mod:`memvault.recall.fusion`), thresholds, the ``top_k`` best.
4. Each hit with ``message_range`` neighbours, read from the store; the recalled messages,
   oldest first, without tool calls or results whose other half is not recalled too
   (:func:`memvault.history.pair_tool_parts`), merged with the window
   (:mod:`memvault.recall.merge`).

No model is called here: an embedder, if any, lives behind the vector search.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence
from typing import Any, cast

from memvault.errors import ValidationError
from memvault.history import pair_tool_parts
from memvault.model import Message, check_id
from memvault.recall import merge as merging
from memvault.recall.context import Key, lexical_candidates
from memvault.recall.fusion import reciprocal_rank_fusion, weighted_fusion
from memvault.recall.options import RecallOptions
from memvault.recall.types import (
    MessageRef,
    RecallHit,
    RecallMemory,
    RecallResult,
    Source,
    VectorSearch,
)

logger = logging.getLogger("memvault.recall")


async def recall(
    memory: RecallMemory,
    *,
    thread_id: str | None,
    resource_id: str,
    query: str,
    options: RecallOptions | None = None,
    vector_search: VectorSearch | None = None,
) -> RecallResult:
    """Find the older messages relevant to ``query`` and merge them with the recent window.

    ``memory`` is a :class:`memvault.Memory` (or anything with its public read methods).
    ``thread_id`` is the current thread: the recent window comes from it, and with
    ``scope="thread"`` only it is searched. It may be ``None`` for a resource-wide recall with
    no current conversation (then there is no window).

    Never raises because the vector search failed: recall then uses words alone and says so in
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
        lexical, vector_matches = await asyncio.gather(
            lexical_task,
            _vector(vector_search, query, resource_id, search_thread, options.vector_candidates, warnings),
        )
    else:
        lexical, vector_matches = await lexical_task, []

    messages: dict[Key, Message] = {}
    lexical_scores: dict[Key, float] = {}
    for key, candidate in lexical.candidates.items():
        if key not in in_window:
            messages[key] = candidate.message
            lexical_scores[key] = candidate.score
    vector_scores = await _read_vector_matches(
        memory, resource_id, search_thread, vector_matches, lexical.threads, messages, options
    )
    for window_key in in_window:
        vector_scores.pop((window_key[0] or "", window_key[1]), None)

    sources = {"lexical": lexical_scores, "vector": vector_scores}
    weights = {"lexical": options.lexical_weight, "vector": options.vector_weight}
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


async def _vector(
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
        _warn(warnings, f"vector search failed, recalling by words only: {type(error).__name__}: {error}")
        return []
    refs, bad = [], []
    for match in matches:
        try:
            refs.append(_ref(match))
        except (TypeError, ValueError) as error:
            bad.append(f"{type(error).__name__}: {error}")
    if bad:
        _warn(warnings, f"vector search gave {len(bad)} malformed match(es), skipped: {bad[0]}")
    return refs


def _warn(warnings: list[str], text: str) -> None:
    logger.warning(text)
    warnings.append(text)


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


async def _read_vector_matches(
    memory: RecallMemory,
    resource_id: str,
    thread_id: str | None,
    matches: list[tuple[MessageRef, float]],
    threads: dict[str, list[Message]],
    messages: dict[Key, Message],
    options: RecallOptions,
) -> dict[Key, float]:
    """Scores of the vector matches that exist in the store under ``resource_id`` (and in
    ``thread_id`` when given); fills ``messages`` with the ones not read yet."""
    scores: dict[Key, float] = {}
    for ref, score in matches:
        if thread_id is not None and ref.thread_id != thread_id:
            continue
        if options.min_vector_score is not None and score < options.min_vector_score:
            continue
        key = (ref.thread_id, ref.message_id)
        scores[key] = max(score, scores.get(key, score))
    known = {(name, m.id): m for name, read in threads.items() for m in read}
    missing: dict[str, list[str]] = {}
    for key in scores:
        if key not in messages:
            if key in known:
                messages[key] = known[key]
            else:
                missing.setdefault(key[0], []).append(key[1])
    names = list(missing)
    read = await asyncio.gather(*(
        memory.get_messages(thread_id=name, resource_id=resource_id, ids=missing[name])
        for name in names
    ))
    for name, found in zip(names, read, strict=True):
        for message in found:
            messages[(name, message.id)] = message
    return {key: score for key, score in scores.items() if key in messages}


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
    names = list(by_thread)
    read = await asyncio.gather(*(
        memory.get_messages(thread_id=name, resource_id=resource_id, ids=by_thread[name],
                            message_range=message_range)
        for name in names
    ))
    out: dict[Key, tuple[Message, ...]] = {}
    for name, found in zip(names, read, strict=True):
        position = {m.id: i for i, m in enumerate(found)}
        for message_id in by_thread[name]:
            i = position.get(message_id)
            if i is None:  # deleted since it was found
                continue
            out[(name, message_id)] = tuple(found[max(0, i - message_range) : i + message_range + 1])
    return out
