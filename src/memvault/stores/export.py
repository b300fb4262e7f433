"""An optional capability for copying a whole store (:mod:`memvault.copy`).

The :class:`~memvault.stores.base.Store` protocols name everything by resource, and give no way
to list the resources themselves or a resource's working-memory keys; and their writes assign
versions and times themselves (``set_state`` increments the version, ``save_summary`` stamps
``now``). A copy needs both: :class:`ExportStore` lists what exists, and its ``restore_*`` methods
write a record exactly as given (times and versions included), so that the copy is the same data,
not a replay. The three built-in stores implement it; a store without it cannot be copied.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from memvault.model import State, Summary, Thread


@runtime_checkable
class ExportStore(Protocol):
    async def resource_ids(self) -> list[str]:
        """Every resource that has a thread, a working memory or a state, in id order."""
        ...

    async def record_counts(self, resource_id: str) -> dict[str, int]:
        """How many ``threads``, ``messages``, ``summaries``, ``working_memories`` (both scopes)
        and ``states`` the resource has (all zero for an unknown resource), counted by the store
        without reading the records."""
        ...

    async def working_memory_keys(self, resource_id: str) -> list[str]:
        """The keys of the resource's stored working memories (both scopes), in key order."""
        ...

    async def state_keys(self, resource_id: str) -> list[str]:
        """The keys of the resource's states, in key order."""
        ...

    async def restore_thread(self, thread: Thread) -> None:
        """Create or overwrite the thread's title, metadata, ``created_at`` and ``updated_at``
        exactly as given (its messages, if any, are kept)."""
        ...

    async def restore_state(self, state: State) -> None:
        """Create or overwrite the state with its value, status, ``version`` and ``updated_at``
        exactly as given."""
        ...

    async def restore_summary(self, summary: Summary) -> None:
        """Create or overwrite the thread's summary exactly as given (version and time included).
        The caller makes sure ``through_seq`` is the seq of ``through_message_id`` in this store;
        the thread must exist."""
        ...
