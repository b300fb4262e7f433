""":class:`MemvaultSaver`: LangGraph's ``BaseCheckpointSaver`` over a memvault store."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from memvault.errors import ValidationError
from memvault.integrations.langgraph.bridge import Bridge
from memvault.model import valid_id
from memvault.stores.checkpoints import Blob, CheckpointRecord, PendingWrite

__all__ = ["MemvaultSaver"]

STRATEGIES = ("keep_latest", "delete")
"""The strategies :meth:`MemvaultSaver.prune` takes."""


class MemvaultSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints of one resource, kept in the memvault store of ``memory`` (its
    ``graph_checkpoints`` and ``graph_writes`` tables on SQLite and PostgreSQL), so one
    database holds both the conversations and the graphs' state::

        memory = await Memory.open("sqlite:///app.db")
        graph = builder.compile(checkpointer=MemvaultSaver(memory, resource_id="ada"))
        await graph.ainvoke(inputs, {"configurable": {"thread_id": "chat-1"}})

    ``memory`` is a :class:`memvault.Memory` (async graphs: ``ainvoke``, ``astream``) or a
    :class:`memvault.sync.Memory` (sync and async graphs alike; see
    :mod:`~memvault.integrations.langgraph.bridge`). ``resource_id`` (required) binds the saver to
    one resource: it reads, lists, copies and deletes that resource's checkpoints only, whatever
    the thread ids, and :meth:`memvault.Memory.delete_resource` deletes them with the rest of
    the resource. LangGraph's ``thread_id`` is any string here (not a memvault thread).
    ``serde`` (default LangGraph's ``JsonPlusSerializer``) turns checkpoints, metadata and writes
    into the bytes stored.

    Every method of ``BaseCheckpointSaver`` is implemented, sync and async, including
    ``delete_for_runs`` (by the ``run_id`` of a checkpoint's metadata), ``copy_thread`` and
    ``prune``. A checkpoint is stored whole (its channel values included) at each step.
    """

    def __init__(self, memory: Any, *, resource_id: str, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self._bridge = Bridge(memory)
        self.resource_id = valid_id(resource_id, "resource_id")
        self._store = self._bridge.memory.checkpoint_store()

    def __repr__(self) -> str:
        return f"MemvaultSaver(resource_id={self.resource_id!r})"

    # async: the implementation

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), else its thread's and
        namespace's newest; ``None`` when there is none."""
        self._bridge.seen()
        thread_id, ns = _thread(config), _ns(config)
        found = await self._store.list_checkpoints(
            self.resource_id, thread_id=thread_id, ns=ns, checkpoint_id=get_checkpoint_id(config), limit=1
        )
        return self._tuple(found[0]) if found else None

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The resource's checkpoints (of ``config``'s thread, namespace and checkpoint id when
        given), newest first: those whose metadata has every ``filter`` key with an equal value,
        older than ``before``'s checkpoint, at most ``limit``."""
        self._bridge.seen()
        conf = config["configurable"] if config else {}
        found = await self._store.list_checkpoints(
            self.resource_id,
            thread_id=_thread(config) if config and "thread_id" in conf else None,
            ns=conf.get("checkpoint_ns"),
            checkpoint_id=get_checkpoint_id(config) if config else None,
            before=get_checkpoint_id(before) if before else None,
            limit=None if filter else limit,
        )
        left = limit
        for record in found:
            if left is not None and left <= 0:
                return
            tup = self._tuple(record)
            if filter and not all(tup.metadata.get(k) == v for k, v in filter.items()):
                continue
            if left is not None:
                left -= 1
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` (whole) with ``metadata`` (and the config's own metadata keys) as
        a child of ``config``'s checkpoint; returns the config that names it."""
        self._bridge.seen()
        thread_id, ns = _thread(config), _ns(config)
        meta = get_checkpoint_metadata(config, metadata)
        run_id = meta.get("run_id")
        await self._store.put_checkpoint(
            self.resource_id,
            CheckpointRecord(
                thread_id=thread_id,
                ns=ns,
                checkpoint_id=checkpoint["id"],
                parent_id=config["configurable"].get("checkpoint_id"),
                checkpoint=Blob(*self.serde.dumps_typed(checkpoint)),
                metadata=Blob(*self.serde.dumps_typed(meta)),
                run_id=str(run_id) if run_id is not None else None,
            ),
        )
        return {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}
        }

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a task's writes against ``config``'s checkpoint: writing them again changes
        nothing, but a special channel's write (errors, interrupts...) replaces the task's last."""
        self._bridge.seen()
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            raise ValidationError(
                "put_writes needs a config naming a checkpoint (configurable.checkpoint_id)"
            )
        rows = [
            PendingWrite(
                task_id,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                Blob(*self.serde.dumps_typed(value)),
                task_path,
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        await self._store.put_checkpoint_writes(
            self.resource_id, _thread(config), _ns(config), checkpoint_id, rows
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread (all namespaces)."""
        self._bridge.seen()
        await self._store.delete_checkpoint_threads(self.resource_id, [str(thread_id)])

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata names one of ``run_ids``."""
        self._bridge.seen()
        await self._store.delete_checkpoint_runs(self.resource_id, [str(r) for r in run_ids])

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to another thread of the resource."""
        self._bridge.seen()
        await self._store.copy_checkpoint_thread(
            self.resource_id, str(source_thread_id), str(target_thread_id)
        )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: keep only the newest checkpoint (and its writes) of each namespace
        of these threads; ``"delete"``: delete them all. Not ``DeltaChannel``-aware: a graph
        using LangGraph's beta ``DeltaChannel`` should not prune with ``keep_latest``."""
        if strategy not in STRATEGIES:
            raise ValidationError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
        self._bridge.seen()
        await self._store.prune_checkpoints(
            self.resource_id, [str(t) for t in thread_ids], keep_latest=strategy == "keep_latest"
        )

    # sync: the same, on the memory's loop

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._bridge.run(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._bridge.run(collect())

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._bridge.run(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._bridge.run(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._bridge.run(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._bridge.run(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._bridge.run(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._bridge.run(self.aprune(thread_ids, strategy=strategy))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A string that sorts after ``current``: the counter, zero-padded, then a random
        fraction (as LangGraph's own savers do)."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # rows

    def _tuple(self, record: CheckpointRecord) -> CheckpointTuple:
        def config(checkpoint_id: str) -> RunnableConfig:
            return {
                "configurable": {
                    "thread_id": record.thread_id,
                    "checkpoint_ns": record.ns,
                    "checkpoint_id": checkpoint_id,
                }
            }

        return CheckpointTuple(
            config=config(record.checkpoint_id),
            checkpoint=self.serde.loads_typed((record.checkpoint.type, record.checkpoint.data)),
            metadata=self.serde.loads_typed((record.metadata.type, record.metadata.data)),
            parent_config=config(record.parent_id) if record.parent_id else None,
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.value.type, w.value.data)))
                for w in record.writes
            ],
        )


def _thread(config: RunnableConfig) -> str:
    thread_id = config.get("configurable", {}).get("thread_id")
    if thread_id is None:
        raise ValidationError("a LangGraph config names its thread: {'configurable': {'thread_id': ...}}")
    return str(thread_id)


def _ns(config: RunnableConfig) -> str:
    ns = config.get("configurable", {}).get("checkpoint_ns", "")
    if not isinstance(ns, str):
        raise ValidationError(f"checkpoint_ns must be a string, got {type(ns).__name__}")
    return ns
