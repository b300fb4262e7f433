"""The storage contract: small protocols whose docstrings state the exact semantics.

Every call names its resource. A thread is named by ``(resource_id, thread_id)``: the same thread
id under another resource is another thread, so a thread of another resource is reported exactly
like a missing one, by construction.

A store implements :class:`Store`, the union of the three small core protocols below, and any of
the optional capabilities of :mod:`memvault.stores.capabilities`. Every backend runs the same
behaviour suite (:mod:`memvault.testing`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

from memvault.model import Message, Thread, ThreadPage


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""Marks an argument that was not given (so that ``None`` can mean "clear")."""


@dataclass(frozen=True)
class MessageQuery:
    """Which messages of one thread to read. Results are always in thread order (``seq`` ascending).

    - ``ids``: those messages, each with ``message_range`` neighbours before and after it.
    - ``after`` / ``before``: message ids bounding the range (exclusive); an unknown id raises
      :class:`memvault.errors.NotFoundError`.
    - ``last_n``: only the newest N of the range; ``first_n``: only the oldest N.
    With nothing given, the whole thread.
    """

    ids: Sequence[str] | None = None
    message_range: int = 0
    before: str | None = None
    after: str | None = None
    last_n: int | None = None
    first_n: int | None = None


ALL_MESSAGES: Final = MessageQuery()
"""The query for every message of a thread."""


ThreadOrder = Literal["updated_at", "created_at"]
Direction = Literal["desc", "asc"]


@dataclass(frozen=True)
class ThreadQuery:
    """Which of a resource's threads to list or count, and in what order.

    - ``title_contains``: the title holds this text, compared case-insensitively (both sides
      :meth:`str.casefold`-ed); ``%``, ``_`` and ``\\`` are plain characters, never wildcards.
      A thread without a title has the empty title; ``None`` or ``""`` filters nothing.
    - ``metadata``: every key of it is a top-level key of the thread's metadata whose value
      equals it as JSON (:func:`memvault.stores.thread_queries.json_equal`: ``1 == 1.0``, but
      ``true != 1``; objects compare key by key, whatever the order); ``None`` or ``{}`` filters
      nothing.
    - ``order_by`` (``updated_at``, the default, or ``created_at``) and ``direction`` (``desc``,
      the default, or ``asc``); ties are broken by thread id, in the same direction.
    - ``offset``: skip that many threads first (instead of a page cursor).
    Counting reads only the two filters.
    """

    title_contains: str | None = None
    metadata: Mapping[str, Any] | None = None
    order_by: ThreadOrder = "updated_at"
    direction: Direction = "desc"
    offset: int | None = None


ALL_THREADS: Final = ThreadQuery()
"""Every thread of the resource, most recently updated first."""


@dataclass(frozen=True)
class Deleted:
    """What a deletion removed, by kind."""

    threads: int = 0
    messages: int = 0
    working_memories: int = 0
    states: int = 0
    extra: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class ThreadStore(Protocol):
    async def create_thread(self, thread: Thread, *, exist_ok: bool = False) -> Thread:
        """Create ``thread``. If the resource already has a thread with that id: return it when
        ``exist_ok``, else raise :class:`ThreadExistsError`."""
        ...

    async def get_thread(self, resource_id: str, thread_id: str) -> Thread | None:
        """The thread, or ``None`` when this resource has no such thread."""
        ...

    async def list_threads(
        self, resource_id: str, *, limit: int = 20, cursor: str | None = None,
        query: ThreadQuery = ALL_THREADS,
    ) -> ThreadPage:
        """The resource's threads that ``query`` selects, in its order (by default most recently
        updated first), ``limit`` per page. ``cursor`` (a previous page's ``next_cursor``, made
        for the same order) continues after that page; it and ``query.offset`` are exclusive
        (:class:`ValidationError`). ``next_cursor`` is set when more threads follow."""
        ...

    async def count_threads(self, resource_id: str, query: ThreadQuery = ALL_THREADS) -> int:
        """How many of the resource's threads ``query``'s filters select."""
        ...

    async def update_thread(
        self, resource_id: str, thread_id: str, *, title: Any = UNSET, metadata: Any = UNSET
    ) -> Thread:
        """Set the title and/or replace the metadata; bumps ``updated_at``.
        Raises :class:`ThreadNotFoundError` for a missing thread."""
        ...

    async def delete_thread(self, resource_id: str, thread_id: str) -> bool:
        """Delete the thread, its messages, their derived data and its thread-scoped working
        memory. Returns ``False`` when there was no such thread."""
        ...


@runtime_checkable
class MessageStore(Protocol):
    async def save_messages(
        self, resource_id: str, thread_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        """Save in one transaction, creating the thread when new; returns once committed.

        A message whose id the thread already has is updated in place and keeps its ``seq``; a new
        one gets the thread's next ``seq`` (gap-free, in the order given). Returns the saved
        messages with ``thread_id``, ``resource_id`` and ``seq`` filled in."""
        ...

    async def get_messages(
        self, resource_id: str, thread_id: str, query: MessageQuery = ALL_MESSAGES
    ) -> list[Message]:
        """Messages of the thread selected by ``query``, in thread order. A missing thread has
        no messages."""
        ...

    async def delete_messages(self, resource_id: str, thread_id: str, ids: Sequence[str]) -> int:
        """Delete these messages and their derived data; returns how many existed."""
        ...

    async def clear_thread(self, resource_id: str, thread_id: str) -> int:
        """Delete every message of the thread (the thread stays); returns how many."""
        ...

    async def delete_resource(self, resource_id: str) -> Deleted:
        """Delete everything of the resource in one transaction."""
        ...


WorkingMemoryUpdate = Callable[[str | None], str | None]


@runtime_checkable
class WorkingMemoryStore(Protocol):
    async def get_working_memory(self, resource_id: str, key: str) -> str | None:
        """The stored working memory under ``key`` (see :func:`memvault.rules.working_memory.key`)."""
        ...

    async def update_working_memory(
        self, resource_id: str, key: str, update: WorkingMemoryUpdate
    ) -> str | None:
        """Atomically replace the content with ``update(current)``: no other writer, in any
        process, runs between the read and the write. ``None`` deletes it. If ``update`` raises,
        nothing is written and the error propagates. Returns the new content."""
        ...


@runtime_checkable
class Store(ThreadStore, MessageStore, WorkingMemoryStore, Protocol):
    """The core every store implements: threads, messages and working-memory notes. ``close``
    releases connections; the store is unusable after. The optional capabilities (full-text
    search, states, summaries, vectors, export) are separate protocols in
    :mod:`memvault.stores.capabilities`, each with a ``supports_*`` guard."""

    async def close(self) -> None: ...
