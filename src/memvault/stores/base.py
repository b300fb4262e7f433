"""The storage contract: small protocols whose docstrings state the exact semantics.

Every call names its resource. A thread is named by ``(resource_id, thread_id)``: the same thread
id under another resource is another thread, so a thread of another resource is reported exactly
like a missing one, by construction.

A store implements :class:`Store`, the union of the small protocols below. Every backend runs the
same behaviour suite (``tests/conformance``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from memvault.model import Message, SearchHit, State, Summary, Thread, ThreadPage


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
        self, resource_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> ThreadPage:
        """The resource's threads, most recently updated first, ``limit`` per page."""
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


@runtime_checkable
class LexicalSearch(Protocol):
    async def search_messages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Messages of the resource (or of one thread) that share words with ``query``, best first.

        Semantics in :mod:`memvault.lexical`: any string is safe; a query without words matches
        nothing."""
        ...

    async def rebuild_search_index(self) -> int:
        """Rebuild the full-text index from the messages (derived data); returns how many
        messages it covers."""
        ...


WorkingMemoryUpdate = Callable[[str | None], str | None]


@runtime_checkable
class WorkingMemoryStore(Protocol):
    async def get_working_memory(self, resource_id: str, key: str) -> str | None:
        """The stored working memory under ``key`` (see :func:`memvault.working_memory.key`)."""
        ...

    async def update_working_memory(
        self, resource_id: str, key: str, update: WorkingMemoryUpdate
    ) -> str | None:
        """Atomically replace the content with ``update(current)``: no other writer, in any
        process, runs between the read and the write. ``None`` deletes it. If ``update`` raises,
        nothing is written and the error propagates. Returns the new content."""
        ...


@runtime_checkable
class StateStore(Protocol):
    async def get_state(self, resource_id: str, key: str) -> State | None:
        """The state under ``key``, or ``None``."""
        ...

    async def set_state(
        self,
        resource_id: str,
        key: str,
        value: Any,
        *,
        status: str | None = None,
        expected_version: int | _Unset | None = UNSET,
    ) -> State | None:
        """Write the state, incrementing its version (1 for a new key).

        With ``expected_version`` (compare-and-set): write only if the current version equals it
        (``None`` meaning "no state yet"), else write nothing and return ``None``."""
        ...

    async def list_states(
        self, resource_id: str, *, status: str | None = None, limit: int = 100
    ) -> list[State]:
        """The resource's states (those with ``status`` when given), most recently updated first."""
        ...

    async def delete_state(self, resource_id: str, key: str) -> bool:
        """Delete the state; ``False`` when there was none."""
        ...


@runtime_checkable
class EmbeddingStore(Protocol):
    """Where message vectors persist (derived data, rebuildable from messages).

    A *cursor* orders messages by when they were first stored and never repeats; the in-memory
    vector index of each process catches up by loading vectors past the cursor it has seen.
    An empty vector (``b""``) records a message with nothing to embed."""

    async def embedding_model(self) -> tuple[str, int] | None:
        """The model name and dimensions of the stored vectors; ``None`` if none are recorded."""
        ...

    async def save_embeddings(
        self, model: str, dimensions: int, rows: Sequence[tuple[str, str, str, bytes]]
    ) -> int:
        """Store float32 vectors for ``(resource_id, thread_id, message_id, vector)`` rows;
        a row whose message no longer exists is skipped. Records ``model`` on first use and
        raises :class:`ConfigurationError` if the store holds another model's vectors (reindex).
        Returns how many were stored."""
        ...

    async def load_embeddings(
        self, *, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, str, str, str, bytes]]:
        """Stored vectors as ``(cursor, resource_id, thread_id, message_id, vector)``, in cursor
        order, past ``after``."""
        ...

    async def unembedded_messages(
        self, *, after: int = 0, limit: int = 500
    ) -> list[tuple[int, Message]]:
        """Messages without a stored vector, as ``(cursor, message)`` in cursor order."""
        ...

    async def clear_embeddings(self) -> int:
        """Delete every stored vector and the recorded model; returns how many vectors."""
        ...


@runtime_checkable
class SummaryStore(Protocol):
    """Where each thread's running summary persists (its own table; see
    :class:`memvault.model.Summary` for what deletes it)."""

    async def get_summary(self, resource_id: str, thread_id: str) -> Summary | None:
        """The thread's summary, or ``None``."""
        ...

    async def save_summary(self, summary: Summary, *, expected_version: int | None) -> Summary | None:
        """Write ``summary`` (its ``version`` and ``updated_at`` are the store's: the current
        version + 1, now) only if the thread's current summary version is ``expected_version``
        (``None``: no summary yet) and the message at ``summary.through_seq`` is still
        ``summary.through_message_id``; else write nothing and return ``None``."""
        ...

    async def delete_summary(self, resource_id: str, thread_id: str) -> bool:
        """Delete the thread's summary; ``False`` when there was none."""
        ...


@runtime_checkable
class Store(
    ThreadStore, MessageStore, LexicalSearch, WorkingMemoryStore, StateStore, EmbeddingStore, SummaryStore,
    Protocol,
):
    """Everything memvault keeps. ``close`` releases connections; the store is unusable after."""

    async def close(self) -> None: ...
