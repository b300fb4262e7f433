"""The synchronous twin of :class:`memvault.Memory`: the same methods, without ``await``.

Each sync ``Memory`` runs its async twin on a private event loop in a background thread, so it
works in plain scripts and inside programs that already run an event loop (notebooks, servers).

Example::

    from memvault.sync import Memory

    with Memory.open("sqlite:///app.db") as memory:
        memory.save_messages([Message.user("hi")], thread_id="t1", resource_id="ada")
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from memvault.errors import StoreClosedError
from memvault.memory import Memory as AsyncMemory
from memvault.options import MemoryOptions
from memvault.recall import RecallReader
from memvault.vectors.base import VectorIndex

if TYPE_CHECKING:
    pass

P = ParamSpec("P")
R = TypeVar("R")


class _Portal:
    """An event loop running in a daemon thread; coroutines are submitted to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="memvault-sync", daemon=True)
        self.thread.start()
        self.stopping = False

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run ``coroutine`` on the loop and wait for it; :class:`StoreClosedError` once the
        loop is stopped (the memory was closed)."""
        if self.stopping or self.loop.is_closed():
            coroutine.close()
            raise StoreClosedError()
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        except RuntimeError as exc:  # closed meanwhile, by another thread
            coroutine.close()
            raise StoreClosedError() from exc
        return future.result()

    @property
    def closed(self) -> bool:
        return self.loop.is_closed()

    def stop(self) -> None:
        self.stopping = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def _twin(
    method: Callable[Concatenate[AsyncMemory, P], Awaitable[R]],
) -> Callable[Concatenate[Memory, P], R]:
    """A sync method that runs ``method`` of the async twin on the portal."""

    @functools.wraps(method)
    def call(self: Memory, *args: P.args, **kwargs: P.kwargs) -> R:
        async def run() -> R:
            return await method(self.aio, *args, **kwargs)

        return self._portal.run(run())

    return cast("Callable[Concatenate[Memory, P], R]", call)


class Memory:
    """Synchronous :class:`memvault.Memory`; ``aio`` is the async twin it drives. After
    :meth:`close`, every call raises :class:`~memvault.errors.StoreClosedError` at once, as the
    async twin's do."""

    def __init__(self, aio: AsyncMemory, portal: _Portal) -> None:
        self.aio = aio
        self._portal = portal

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        options: MemoryOptions | None = None,
        embedder: Any = None,
        vector_index: VectorIndex | None = None,
    ) -> Memory:
        """See :meth:`memvault.Memory.open`."""
        portal = _Portal()
        try:
            opening = AsyncMemory.open(url, options=options, embedder=embedder,
                                       vector_index=vector_index)
            return cls(portal.run(opening), portal)
        except BaseException:
            portal.stop()
            raise

    def close(self) -> None:
        """Stop the background sweep, wait for embeddings, close the store (the sync twin also
        stops its background loop); closing twice is harmless."""
        if self._portal.closed:
            return
        try:
            self._portal.run(self.aio.close())
        finally:
            self._portal.stop()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def portal(self) -> _Portal:
        """The private event loop this memory's calls run on (the sync runtime runs turns there)."""
        return self._portal

    @property
    def options(self) -> MemoryOptions:
        return self.aio.options

    def recall_reader(self, resource_id: str) -> RecallReader:
        return self.aio.recall_reader(resource_id)

    recall_reader.__doc__ = AsyncMemory.recall_reader.__doc__

    def start_sweeping(self) -> None:
        async def start() -> None:
            self.aio.start_sweeping()

        self._portal.run(start())

    start_sweeping.__doc__ = AsyncMemory.start_sweeping.__doc__

    def flush(self) -> None:  # once closed: nothing to do, and no error (as the async twin)
        if not (self._portal.stopping or self._portal.closed):
            self._portal.run(self.aio.flush())

    flush.__doc__ = AsyncMemory.flush.__doc__

    def stop_sweeping(self) -> None:  # once closed: nothing to do, and no error
        if not (self._portal.stopping or self._portal.closed):
            self._portal.run(self.aio.stop_sweeping())

    stop_sweeping.__doc__ = AsyncMemory.stop_sweeping.__doc__

    def working_memory_tool(self) -> dict[str, Any]:
        """The ``update_working_memory`` tool definition, OpenAI function format."""
        return self.aio.working_memory_tool()

    create_thread = _twin(AsyncMemory.create_thread)
    get_thread = _twin(AsyncMemory.get_thread)
    list_threads = _twin(AsyncMemory.list_threads)
    count_threads = _twin(AsyncMemory.count_threads)
    update_thread = _twin(AsyncMemory.update_thread)
    delete_thread = _twin(AsyncMemory.delete_thread)
    save_messages = _twin(AsyncMemory.save_messages)
    get_messages = _twin(AsyncMemory.get_messages)
    get_history = _twin(AsyncMemory.get_history)
    delete_messages = _twin(AsyncMemory.delete_messages)
    clear_thread = _twin(AsyncMemory.clear_thread)
    delete_resource = _twin(AsyncMemory.delete_resource)
    purge = _twin(AsyncMemory.purge)
    set_retention = _twin(AsyncMemory.set_retention)
    get_retention = _twin(AsyncMemory.get_retention)
    retention_policies = _twin(AsyncMemory.retention_policies)
    sweep = _twin(AsyncMemory.sweep)
    search_messages = _twin(AsyncMemory.search_messages)
    get_working_memory = _twin(AsyncMemory.get_working_memory)
    update_working_memory = _twin(AsyncMemory.update_working_memory)
    delete_working_memory = _twin(AsyncMemory.delete_working_memory)
    working_memory_instructions = _twin(AsyncMemory.working_memory_instructions)
    get_state = _twin(AsyncMemory.get_state)
    set_state = _twin(AsyncMemory.set_state)
    update_state = _twin(AsyncMemory.update_state)
    list_suspended = _twin(AsyncMemory.list_suspended)
    compare_and_set_state = _twin(AsyncMemory.compare_and_set_state)
    list_states = _twin(AsyncMemory.list_states)
    delete_state = _twin(AsyncMemory.delete_state)
    get_summary = _twin(AsyncMemory.get_summary)
    save_summary = _twin(AsyncMemory.save_summary)
    delete_summary = _twin(AsyncMemory.delete_summary)
    recall = _twin(AsyncMemory.recall)
    reindex = _twin(AsyncMemory.reindex)
    resource_ids = _twin(AsyncMemory.resource_ids)
    stats = _twin(AsyncMemory.stats)
    count_messages = _twin(AsyncMemory.count_messages)
    export_records = _twin(AsyncMemory.export_records)
    import_records = _twin(AsyncMemory.import_records)
    clear_embeddings = _twin(AsyncMemory.clear_embeddings)
    read_turn = _twin(AsyncMemory.read_turn)
