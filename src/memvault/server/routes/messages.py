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
    first_n: Annotated[int | None, Query(ge=1, le=100_000, description=(
        "Only the oldest N (with ``after``: the next page forward)."))] = None,
    before: Annotated[str | None, Query(description=(
        "Only the messages before this message id (to page back: the first id of the previous "
        "page)."))] = None,
    after: Annotated[str | None, Query(description=(
        "Only the messages after this message id (to page forward: the last id of the previous "
        "page)."))] = None,
    around: Annotated[str | None, Query(description=(
        "This message with up to ``range`` messages each side of it (to open a thread at a "
        "message); not with the other parameters."))] = None,
    around_range: Annotated[int, Query(alias="range", ge=0, le=10_000, description=(
        "With ``around``: how many messages each side (default 50)."))] = 50,
) -> Messages:
    """The thread's messages in order: all, or those ``before``/``after`` a message id, then the
    newest ``last_n`` or oldest ``first_n`` of them; or with ``around`` one message and its
    neighbours. 404 for no such thread, or a message id not in it; 422 for contradictory
    parameters (``last_n`` with ``first_n``, ``around`` with any other).

    One store read when the answer has messages (the read is the resource's own, so a foreign
    thread has none); an empty answer then asks whether the thread exists (404) or is empty."""
    if around is None:
        found = await memory.get_messages(thread_id=thread_id, resource_id=resource_id, last_n=last_n,
                                          first_n=first_n, before=before, after=after)
    else:
        if any(value is not None for value in (last_n, first_n, before, after)):
            await owned_thread(memory, resource_id, thread_id)  # a missing thread is 404 first
            raise ApiError(422, "around: give it alone (with range), not with last_n, first_n, before"
                                " or after")
        found = await memory.get_messages(thread_id=thread_id, resource_id=resource_id, ids=[around],
                                          message_range=around_range)
    if not found:  # (only then: one store read for a thread with messages) missing, foreign or empty?
        await owned_thread(memory, resource_id, thread_id)
    if around is not None and not any(message.id == around for message in found):
        raise ApiError(404, MESSAGE_NOT_FOUND)
    return Messages(messages=found)


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
