"""How much a resource has stored: its threads, messages, summaries, working memories and states.

Used by ``memvault stats`` and the HTTP API's ``/v1/stats`` and ``/v1/resources``. Counting walks
every thread's messages page by page, so it costs a read of the resource's data: fine for
inspection, not for every request of a busy agent.

Example::

    async with await Memory.open("sqlite:///app.db") as memory:
        await resource_stats(memory.store, "ada")
        # {"threads": 2, "messages": 5, "summaries": 1, "working_memories": 2, "states": 1}
"""

from __future__ import annotations

from memvault.copy import messages_of, threads_of
from memvault.errors import ConfigurationError
from memvault.stores import Store
from memvault.stores.export import ExportStore

STAT_KINDS = ("threads", "messages", "summaries", "working_memories", "states")
"""The counted kinds, in display order: the keys of every :func:`resource_stats` answer."""


def export_store(store: Store) -> ExportStore:
    """``store`` as an :class:`ExportStore` (the built-in stores are), else
    :class:`ConfigurationError`: counting needs to list a resource's records."""
    if not isinstance(store, ExportStore):
        raise ConfigurationError(f"{type(store).__name__} cannot list its resources")
    return store


async def resource_stats(store: Store, resource_id: str) -> dict[str, int]:
    """The counts of :data:`STAT_KINDS` for one resource (all zero for an unknown resource).
    ``working_memories`` counts both scopes (the resource's and each thread's)."""
    listing = export_store(store)
    row = dict.fromkeys(STAT_KINDS, 0)
    for thread in await threads_of(store, resource_id):
        row["threads"] += 1
        row["messages"] += sum([len(page) async for page in messages_of(store, resource_id, thread.id)])
        row["summaries"] += await store.get_summary(resource_id, thread.id) is not None
    row["working_memories"] = len(await listing.working_memory_keys(resource_id))
    row["states"] = len(await listing.state_keys(resource_id))
    return row


async def store_stats(store: Store, only: str | None = None) -> dict[str, dict[str, int]]:
    """:func:`resource_stats` of every resource of the store in id order (or of ``only``)."""
    resources = [only] if only is not None else await export_store(store).resource_ids()
    return {resource: await resource_stats(store, resource) for resource in resources}
