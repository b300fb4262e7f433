"""``/v1/threads``: list, create, read, change and delete the resource's threads."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from memvault.model import Thread
from memvault.server.auth import JsonResourceDep, MemoryDep, ResourceDep
from memvault.server.errors import ApiError
from memvault.server.routes.common import ThreadId, owned_thread
from memvault.server.schemas import CONFLICT, ERRORS, ThreadChange, ThreadCount, ThreadCreate, Threads
from memvault.stores.base import Direction, ThreadOrder

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERRORS)


TitleContains = Annotated[str | None, Query(
    description="Only threads whose title holds this text, case-insensitively (% and _ are plain "
                "characters).")]
MetadataFilter = Annotated[str | None, Query(
    description='A JSON object: only threads whose metadata has each key with an equal value, '
                'e.g. {"project":"x"} (URL-encoded).')]


@router.get("")
async def list_threads(
    resource_id: ResourceDep,
    memory: MemoryDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Threads per page.")] = 20,
    cursor: Annotated[str | None, Query(description="The next_cursor of the previous page.")] = None,
    offset: Annotated[int | None, Query(ge=0, description="Skip this many threads (no cursor).")] = None,
    title_contains: TitleContains = None,
    metadata: MetadataFilter = None,
    order_by: Annotated[ThreadOrder, Query(description="updated_at (default) or created_at.")] = "updated_at",
    direction: Annotated[Direction, Query(description="desc (the default) or asc.")] = "desc",
) -> Threads:
    """The resource's threads the filters select, by default most recently active first; follow
    ``next_cursor`` (null: last page). A cursor only continues the order it was made in;
    ``offset`` with ``cursor``, or a ``metadata`` that is not a JSON object, is 422."""
    page = await memory.list_threads(
        resource_id=resource_id, limit=limit, cursor=cursor or None, offset=offset,
        title_contains=title_contains or None, metadata=metadata_filter(metadata), order_by=order_by,
        direction=direction)
    return Threads(threads=page.threads, next_cursor=page.next_cursor)


@router.get("/count")
async def count_threads(
    resource_id: ResourceDep, memory: MemoryDep, title_contains: TitleContains = None,
    metadata: MetadataFilter = None,
) -> ThreadCount:
    """How many threads the resource has (those the filters select, as in the listing). This
    path shadows ``GET`` of a thread whose id is ``count``: send that one as ``%63ount`` (ids are
    percent-decoded once, after routing)."""
    count = await memory.count_threads(resource_id=resource_id, title_contains=title_contains or None,
                                       metadata=metadata_filter(metadata))
    return ThreadCount(count=count)


def metadata_filter(text: str | None) -> dict[str, Any] | None:
    """The ``metadata`` query parameter as a dict (empty or absent: ``None``), or 422."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise ApiError(422, "metadata must be a JSON object, e.g. {\"project\":\"x\"}") from None
    if not isinstance(value, dict):
        raise ApiError(422, f"metadata must be a JSON object, not a {type(value).__name__}")
    return value


@router.post("", status_code=201, responses=CONFLICT)
async def create_thread(resource_id: JsonResourceDep, memory: MemoryDep, body: ThreadCreate) -> Thread:
    """Create a thread (a random id when none is given); an id the resource already uses is 409."""
    return await memory.create_thread(resource_id=resource_id, thread_id=body.id, title=body.title,
                                      metadata=body.metadata)


@router.get("/{thread_id}")
async def get_thread(thread_id: ThreadId, resource_id: ResourceDep, memory: MemoryDep) -> Thread:
    """The thread, or 404."""
    return await owned_thread(memory, resource_id, thread_id)


@router.patch("/{thread_id}")
async def update_thread(
    thread_id: ThreadId, resource_id: JsonResourceDep, memory: MemoryDep, body: ThreadChange
) -> Thread:
    """Change the title (null clears it) and/or replace the metadata; fields left out are kept."""
    await owned_thread(memory, resource_id, thread_id)
    changes: dict[str, Any] = {name: getattr(body, name) for name in body.model_fields_set}
    return await memory.update_thread(thread_id=thread_id, resource_id=resource_id, **changes)


@router.delete("/{thread_id}", status_code=204)
async def delete_thread(thread_id: ThreadId, resource_id: ResourceDep, memory: MemoryDep) -> Response:
    """Delete the thread with its messages and derived data; 404 when there is none."""
    await owned_thread(memory, resource_id, thread_id)
    await memory.delete_thread(thread_id=thread_id, resource_id=resource_id)
    return Response(status_code=204)
