"""``/v1/threads/{thread_id}/messages``: read, save and delete a thread's messages."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from memvault.server.auth import JsonResourceDep, MemoryDep, ResourceDep
from memvault.server.errors import MESSAGE_NOT_FOUND, ApiError
from memvault.server.routes.common import MessageId, ThreadId, owned_thread
from memvault.server.schemas import ERRORS, Messages, MessagesIn

router = APIRouter(prefix="/v1/threads/{thread_id}/messages", tags=["messages"], responses=ERRORS)


@router.get("")
async def get_messages(
    thread_id: ThreadId,
    resource_id: ResourceDep,
    memory: MemoryDep,
    last_n: Annotated[int | None, Query(ge=1, le=100_000, description="Only the newest N.")] = None,
    before: Annotated[str | None, Query(description=(
        "Only the messages before this message id (to page back: the first id of the previous "
        "page)."))] = None,
) -> Messages:
    """The thread's messages in order (all, or the newest ``last_n``, of those ``before`` a
    message id when given); 404 for no such thread, or a ``before`` id not in it."""
    await owned_thread(memory, resource_id, thread_id)
    return Messages(messages=await memory.get_messages(thread_id=thread_id, resource_id=resource_id,
                                                       last_n=last_n, before=before))


@router.post("", status_code=201)
async def save_messages(
    thread_id: ThreadId, resource_id: JsonResourceDep, memory: MemoryDep, body: MessagesIn
) -> Messages:
    """Save messages to the thread (created when new); saving an id again updates that message.
    A message naming another resource or thread is refused (422); all or nothing."""
    for message in body.messages:
        _check_owner(message, "resource_id", resource_id)
        _check_owner(message, "thread_id", thread_id)
    saved = await memory.save_messages(body.messages, thread_id=thread_id, resource_id=resource_id)
    return Messages(messages=saved)


def _check_owner(message: dict[str, Any], field: str, expected: str) -> None:
    if message.get(field) not in (None, expected):
        raise ApiError(422, f"a message's {field} comes from the key and the URL: leave it out")


@router.delete("/{message_id}", status_code=204)
async def delete_message(
    thread_id: ThreadId, message_id: MessageId, resource_id: ResourceDep, memory: MemoryDep
) -> Response:
    """Delete one message with its derived data; 404 for no such thread or message."""
    await owned_thread(memory, resource_id, thread_id)
    if not await memory.delete_messages([message_id], thread_id=thread_id, resource_id=resource_id):
        raise ApiError(404, MESSAGE_NOT_FOUND)
    return Response(status_code=204)
