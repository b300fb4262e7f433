"""What the routers share: finding the caller's thread (a foreign thread is a missing one)."""

from __future__ import annotations

from memvault.memory import Memory
from memvault.model import Thread
from memvault.server.errors import THREAD_NOT_FOUND, ApiError


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
