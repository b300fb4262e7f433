"""``/v1/threads``: list, create, read, change and delete the resource's threads."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from memvault.model import Thread
from memvault.server.auth import JsonResourceDep, MemoryDep, ResourceDep
from memvault.server.routes.common import ThreadId, owned_thread
from memvault.server.schemas import CONFLICT, ERRORS, ThreadChange, ThreadCreate, Threads

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERRORS)


@router.get("")
async def list_threads(
    resource_id: ResourceDep,
    memory: MemoryDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Threads per page.")] = 20,
    cursor: Annotated[str | None, Query(description="The next_cursor of the previous page.")] = None,
) -> Threads:
    """The resource's threads, most recently active first; follow ``next_cursor`` (null: last page)."""
    page = await memory.list_threads(resource_id=resource_id, limit=limit, cursor=cursor or None)
    return Threads(threads=page.threads, next_cursor=page.next_cursor)


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
