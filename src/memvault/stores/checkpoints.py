"""The optional :class:`CheckpointStore` capability: a graph framework's checkpoints (LangGraph's
``BaseCheckpointSaver``, :mod:`memvault.integrations.langgraph`) kept in the store beside the
conversations, so one database holds both.

Everything is keyed by resource first: a resource never reads, lists, copies or deletes another
resource's checkpoints, and deleting a resource deletes its checkpoints and writes in the same
transaction (erasure, as for its messages). Checkpoints and writes are opaque typed bytes (the
framework's serializer decides); the store only orders them and keeps them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeGuard, runtime_checkable

from memvault.errors import ConfigurationError
from memvault.stores.capabilities import implements


@dataclass(frozen=True)
class Blob:
    """A serialized value: the serializer's type tag and its bytes."""

    type: str
    data: bytes


@dataclass(frozen=True)
class PendingWrite:
    """One write a task made against a checkpoint (not yet applied by a later checkpoint)."""

    task_id: str
    idx: int
    """The write's index in its task's call; negative for the framework's special channels
    (errors, interrupts...), whose write replaces the task's previous one."""
    channel: str
    value: Blob
    task_path: str = ""


@dataclass(frozen=True)
class CheckpointRecord:
    """One checkpoint of a thread, in one namespace of it (``ns``, ``""`` for the root graph)."""

    thread_id: str
    ns: str
    checkpoint_id: str
    """Ordered in time: a later checkpoint of a thread has a greater id (LangGraph's uuid6)."""
    parent_id: str | None
    checkpoint: Blob
    metadata: Blob
    run_id: str | None = None
    """The run that made it (from its metadata), for :meth:`CheckpointStore.delete_checkpoint_runs`."""
    writes: tuple[PendingWrite, ...] = field(default=())
    """Its pending writes, in ``(task_path, task_id, idx)`` order (reads only; ignored by puts)."""


def write_order(write: PendingWrite) -> tuple[str, str, int]:
    """The order writes are applied in (LangGraph's ``writes_sort_key``)."""
    return (write.task_path, write.task_id, write.idx)


@runtime_checkable
class CheckpointStore(Protocol):
    """Graph checkpoints and their pending writes, per resource and thread.

    ``thread_id`` here is the graph's thread (any non-empty string), a namespace of its own:
    it need not be a memvault conversation thread. Every call names its resource, and sees
    only that resource's rows."""

    async def put_checkpoint(self, resource_id: str, record: CheckpointRecord) -> None:
        """Create or overwrite the checkpoint ``(thread_id, ns, checkpoint_id)``."""
        ...

    async def put_checkpoint_writes(
        self, resource_id: str, thread_id: str, ns: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Add ``writes`` to the checkpoint, keyed by ``(task_id, idx)``: a write with a negative
        ``idx`` replaces the stored one with its key, any other keeps the first stored (so
        writing the same task's writes again changes nothing)."""
        ...

    async def list_checkpoints(
        self,
        resource_id: str,
        *,
        thread_id: str | None = None,
        ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRecord]:
        """The resource's checkpoints (of one thread, one namespace, one id when given; with an
        id below ``before`` when given), newest (greatest id) first, each with its writes; at
        most ``limit`` of them (``None``: all)."""
        ...

    async def delete_checkpoint_threads(self, resource_id: str, thread_ids: Sequence[str]) -> int:
        """Delete every checkpoint and write of these threads (all namespaces); returns how
        many checkpoints."""
        ...

    async def delete_checkpoint_runs(self, resource_id: str, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints made by these runs, with their writes; returns how many."""
        ...

    async def copy_checkpoint_thread(self, resource_id: str, source: str, target: str) -> int:
        """Copy every checkpoint and write of thread ``source`` to thread ``target`` (same ids,
        namespaces, parents and bytes; a target checkpoint with the same key is overwritten);
        returns how many checkpoints."""
        ...

    async def prune_checkpoints(
        self, resource_id: str, thread_ids: Sequence[str], *, keep_latest: bool
    ) -> int:
        """Delete these threads' checkpoints with their writes, all of them or (``keep_latest``)
        all but the newest of each namespace; returns how many were deleted."""
        ...


def supports_checkpoints(store: object) -> TypeGuard[CheckpointStore]:
    """Whether ``store`` has :class:`CheckpointStore`."""
    return implements(store, CheckpointStore)


def require_checkpoints(store: object) -> CheckpointStore:
    """``store`` as a :class:`CheckpointStore`, or :class:`ConfigurationError`."""
    if not supports_checkpoints(store):
        raise ConfigurationError(f"{type(store).__name__} keeps no graph checkpoints: use a store that does "
                                 "(the built-in memory://, sqlite:/// and postgresql:// stores all do)")
    return store
