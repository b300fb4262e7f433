"""What the routers share: finding the caller's thread (a foreign thread is a missing one)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from memvault.memory import Memory
from memvault.model import Thread
from memvault.server.errors import MESSAGE_NOT_FOUND, THREAD_NOT_FOUND, ApiError
from memvault.server.gate import decoded

_ENCODED = "Percent-encoded (`/` as `%2F`, `%` as `%25`...): any id the Python API accepts."


# Coroutines, not plain functions: FastAPI runs a plain function dependency in a worker thread.
async def _thread_id(thread_id: Annotated[str, Path(description=_ENCODED)]) -> str:
    try:
        return decoded(thread_id)
    except ValueError:
        raise ApiError(404, THREAD_NOT_FOUND) from None


async def _message_id(message_id: Annotated[str, Path(description=_ENCODED)]) -> str:
    try:
        return decoded(message_id)
    except ValueError:
        raise ApiError(404, MESSAGE_NOT_FOUND) from None


ThreadId = Annotated[str, Depends(_thread_id)]
"""The ``{thread_id}`` path segment, decoded (see :mod:`memvault.server.gate`)."""
MessageId = Annotated[str, Depends(_message_id)]


async def owned_thread(memory: Memory, resource_id: str, thread_id: str) -> Thread:
    """The resource's thread, or 404 with the one message for missing and foreign threads."""
    thread = await memory.get_thread(thread_id=thread_id, resource_id=resource_id)
    if thread is None:
        raise ApiError(404, THREAD_NOT_FOUND)
    return thread


async def check_thread(memory: Memory, resource_id: str, thread_id: str | None) -> None:
    """:func:`owned_thread` when a thread is named (``None``: nothing to check)."""
    if thread_id is not None:
        await owned_thread(memory, resource_id, thread_id)
