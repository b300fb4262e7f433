"""How much a resource has stored: its threads, messages, summaries, working memories and states.

Used by ``memvault stats`` and the HTTP API's ``/v1/stats`` and ``/v1/resources``. The store
counts (:meth:`~memvault.stores.capabilities.ExportStore.record_counts`: one SQL statement over
indexes led by the resource id), so no record is read.

Example::

    async with await Memory.open("sqlite:///app.db") as memory:
        await resource_stats(memory.store, "ada")
        # {"threads": 2, "messages": 5, "summaries": 1, "working_memories": 2, "states": 1}
"""

from __future__ import annotations

from memvault.errors import ConfigurationError
from memvault.stores import Store
from memvault.stores.capabilities import ExportStore
from memvault.transfer.reserved import RESERVED_RESOURCES

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
    counts = await export_store(store).record_counts(resource_id)
    return {kind: counts[kind] for kind in STAT_KINDS}


async def store_stats(store: Store, only: str | None = None) -> dict[str, dict[str, int]]:
    """:func:`resource_stats` of every resource of the store in id order (or of ``only``),
    memvault's own records (:data:`~memvault.transfer.reserved.RESERVED_RESOURCES`) left out unless
    ``only`` names them."""
    resources = [only] if only is not None else [
        r for r in await export_store(store).resource_ids() if r not in RESERVED_RESOURCES]
    return {resource: await resource_stats(store, resource) for resource in resources}
