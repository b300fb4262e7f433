"""Search, recall, working memory and counts of the caller's resource."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Query, Response

from memvault.model import check_text
from memvault.recall import RecallHit
from memvault.rules.working_memory import note_scope
from memvault.server.auth import JsonResourceDep, MemoryDep, ResourceDep
from memvault.server.errors import ApiError
from memvault.server.routes.common import check_thread
from memvault.server.schemas import (
    ERRORS,
    RecallHitOut,
    RecallIn,
    RecallOut,
    SearchHits,
    Stats,
    WorkingMemory,
    WorkingMemoryIn,
)

router = APIRouter(prefix="/v1", tags=["lookup"], responses=ERRORS)
ThreadQuery = Annotated[str | None, Query(description="Only this thread (404 if the resource has none).")]


@router.get("/search")
async def search(
    resource_id: ResourceDep,
    memory: MemoryDep,
    q: Annotated[str, Query(description="Words to look for; any string is safe.")],
    thread_id: ThreadQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
) -> SearchHits:
    """Messages sharing words with ``q`` across the resource (or one thread), best first; a
    ``q`` with a NUL byte or a lone surrogate is 422."""
    try:
        check_text(q)
    except ValueError as exc:
        raise ApiError(422, f"q: {exc}") from None
    await check_thread(memory, resource_id, thread_id)
    hits = await memory.search_messages(resource_id=resource_id, query=q, thread_id=thread_id, limit=limit)
    return SearchHits(hits=hits)


@router.post("/recall")
async def recall(resource_id: JsonResourceDep, memory: MemoryDep, body: RecallIn) -> RecallOut:
    """What recall feeds the model for ``query``: the hits (with their score and source) and the
    messages, the recent window of ``thread_id`` merged in. Searches the whole resource."""
    await check_thread(memory, resource_id, body.thread_id)
    options = dataclasses.replace(memory.options.recall, scope="resource")
    if body.top_k is not None:
        options = dataclasses.replace(options, top_k=body.top_k)
    result = await memory.recall(resource_id=resource_id, query=body.query, thread_id=body.thread_id,
                                 options=options)
    return RecallOut(hits=[_hit(h) for h in result.hits], messages=result.messages,
                     warnings=result.warnings)


def _hit(hit: RecallHit) -> RecallHitOut:
    sources = ["lexical", "vector"] if hit.source == "both" else [hit.source]
    return RecallHitOut(message=hit.message, thread_id=hit.thread_id, created_at=hit.created_at,
                        other_thread=hit.other_thread, score=hit.score, source=hit.source, sources=sources,
                        lexical_score=hit.lexical_score, vector_score=hit.vector_score)


@router.get("/working-memory")
async def get_working_memory(
    resource_id: ResourceDep, memory: MemoryDep, thread_id: ThreadQuery = None
) -> WorkingMemory:
    """The resource's working memory, or with ``thread_id`` that thread's (null: never written)."""
    await check_thread(memory, resource_id, thread_id)
    content = await memory.get_working_memory(resource_id=resource_id, thread_id=thread_id,
                                              scope=note_scope(thread_id))
    return WorkingMemory(content=content)


@router.put("/working-memory")
async def put_working_memory(
    resource_id: JsonResourceDep, memory: MemoryDep, body: WorkingMemoryIn
) -> WorkingMemory:
    """Replace the working memory (the resource's, or with ``thread_id`` that thread's)."""
    await check_thread(memory, resource_id, body.thread_id)
    content = await memory.update_working_memory(
        body.content, resource_id=resource_id, thread_id=body.thread_id, mode="replace",
        scope=note_scope(body.thread_id))
    return WorkingMemory(content=content)


@router.delete("/working-memory", status_code=204)
async def delete_working_memory(
    resource_id: ResourceDep, memory: MemoryDep, thread_id: ThreadQuery = None
) -> Response:
    """Delete the working memory (the resource's, or with ``thread_id`` that thread's); 204
    whether or not there was one."""
    await check_thread(memory, resource_id, thread_id)
    await memory.delete_working_memory(resource_id=resource_id, thread_id=thread_id,
                                       scope=note_scope(thread_id))
    return Response(status_code=204)


@router.get("/stats")
async def stats(resource_id: ResourceDep, memory: MemoryDep) -> Stats:
    """How many threads, messages, summaries, working memories and states the resource has."""
    return Stats(**await memory.stats(resource_id=resource_id))
