"""How much a resource has stored: its threads, messages, summaries, working memories and states.

Behind :meth:`memvault.Memory.stats` (``memvault stats``, the HTTP API's ``/v1/stats`` and
``/v1/resources``). The store
counts (:meth:`~memvault.stores.capabilities.ExportStore.record_counts`: one SQL statement over
indexes led by the resource id), so no record is read.

Example::

    async with await Memory.open("sqlite:///app.db") as memory:
        await memory.stats(resource_id="ada")
        # {"threads": 2, "messages": 5, "summaries": 1, "working_memories": 2, "states": 1}
"""

from __future__ import annotations

from memvault.stores.base import Store
from memvault.stores.capabilities import require_export

STAT_KINDS = ("threads", "messages", "summaries", "working_memories", "states")
"""The counted kinds, in display order: the keys of every :func:`resource_stats` answer."""


async def resource_stats(store: Store, resource_id: str) -> dict[str, int]:
    """The counts of :data:`STAT_KINDS` for one resource (all zero for an unknown resource).
    ``working_memories`` counts both scopes (the resource's and each thread's). Needs a store
    that can count (:class:`~memvault.stores.capabilities.ExportStore`)."""
    counts = await require_export(store).record_counts(resource_id)
    return {kind: counts[kind] for kind in STAT_KINDS}
