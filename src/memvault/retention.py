"""Retention: how long a store keeps messages, and the sweep that erases expired ones.

A *policy* is a maximum age, set for the whole store or for one resource (which then replaces
the store's). A message is *expired* once its ``created_at`` is older than now minus its
resource's policy. From that moment every read leaves it out, as if it were deleted
(:class:`memvault.stores.capabilities.Retention`): history, ``get_messages``, search, recall,
a turn's context, export and copy. The *sweep* then erases expired messages for real, with the
store's deletion semantics and their derived data (full-text entries, vectors, the summaries
that cover them), and deletes a thread left with no messages that nobody has written to within
its resource's retention period (its title and thread note derive from what expired).

The sweep runs on demand (:meth:`memvault.Memory.sweep`, ``memvault sweep``) and in the
background of every open :class:`memvault.Memory` whose store can keep policies, every
``MemoryOptions.sweep_interval`` seconds (default one hour; ``None`` turns it off). Policies
live in the store, so every process, the CLI and the HTTP server see the same ones.

Example::

    await memory.set_retention(timedelta(days=90))                    # the whole store
    await memory.set_retention(timedelta(days=7), resource_id="ada")   # one resource
    await memory.sweep()                                               # erase now
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memvault.errors import ValidationError
from memvault.model import now
from memvault.stores import Store
from memvault.stores.capabilities import STORE_DEFAULT, Retention

if TYPE_CHECKING:
    from memvault.recall.semantic import SemanticIndex

log = logging.getLogger("memvault.retention")
MAX_AGE_LIMIT = timedelta(days=36_525)
"""The longest policy (100 years): beyond it, keep messages with no policy at all."""
FIRST_SWEEP_DELAY = 60.0
"""Seconds from the start of the background loop to its first sweep (at most the interval)."""
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_AGE = re.compile(r"\s*(\d{1,9})\s*([smhdw])\s*", re.IGNORECASE)


def check_max_age(max_age: Any) -> timedelta | None:
    """``max_age`` as a policy: a :class:`~datetime.timedelta` of at least one second and at
    most :data:`MAX_AGE_LIMIT`, or ``None`` (no policy). Anything else is a
    :class:`ValidationError`."""
    if max_age is None:
        return None
    if not isinstance(max_age, timedelta):
        raise ValidationError(f"max_age must be a timedelta or None, got {type(max_age).__name__}")
    if not timedelta(seconds=1) <= max_age <= MAX_AGE_LIMIT:
        raise ValidationError(
            f"max_age must be between 1 second and {MAX_AGE_LIMIT.days} days, got {max_age}")
    return max_age


def parse_max_age(text: str) -> timedelta:
    """A policy written as a number and a unit: ``90d``, ``12h``, ``30m``, ``45s``, ``2w``."""
    match = _AGE.fullmatch(text)
    if match is None:
        raise ValidationError(f"{text!r} is not an age: write a number and a unit, e.g. 90d, 12h, 30m, 2w")
    age = check_max_age(timedelta(seconds=int(match[1]) * _UNITS[match[2].lower()]))
    assert age is not None
    return age


def format_max_age(age: timedelta) -> str:
    """``age`` in the largest unit that writes it exactly (``90d``, ``36h``, ``45s``)."""
    seconds = int(age.total_seconds())
    for unit in "wdhm":
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


@dataclass(frozen=True)
class Swept:
    """What a sweep erased."""

    messages: int = 0
    threads: int = 0
    resources: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"messages": self.messages, "threads": self.threads, "resources": self.resources}


async def sweep(
    store: Retention, semantic: SemanticIndex | None, *, resource_id: str | None = None,
    at: datetime | None = None,
) -> Swept:
    """Erase the messages expired at ``at`` (default now) of every resource (or of one), drop
    their vectors from ``semantic``'s index, then delete the threads left empty whose last write
    is older than their resource's cutoff."""
    at = at or now()
    policies = await store.retention_policies()
    if not policies:
        return Swept()
    expired = await store.expire_messages(at, resource_id)
    by_thread: dict[tuple[str, str], list[str]] = {}
    for rid, thread_id, message_id in expired:
        by_thread.setdefault((rid, thread_id), []).append(message_id)
    threads = 0
    core: Store = store  # type: ignore[assignment]  # a Retention store is a Store (Memory checks)
    for (rid, thread_id), ids in by_thread.items():
        if semantic is not None:
            await semantic.forget_messages(rid, thread_id, ids)
        max_age = policies.get(rid) or policies.get(STORE_DEFAULT)
        thread = await core.get_thread(rid, thread_id)
        if (max_age is not None and thread is not None and thread.updated_at < at - max_age
                and not await core.get_messages(rid, thread_id)):
            threads += await core.delete_thread(rid, thread_id)
            if semantic is not None:
                await semantic.forget_thread(rid, thread_id)
    return Swept(messages=len(expired), threads=threads, resources=len({r for r, _ in by_thread}))


class Sweeper:
    """Runs ``run()`` every ``interval`` seconds in the background until :meth:`stop`; a failed
    sweep is logged and tried again at the next interval."""

    def __init__(self, run: Callable[[], Awaitable[Any]], interval: float) -> None:
        self._run = run
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the loop on the running event loop (once; later calls do nothing)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="memvault-sweep")

    async def _loop(self) -> None:
        delay = min(self.interval, FIRST_SWEEP_DELAY)
        while True:
            await asyncio.sleep(delay)
            delay = self.interval
            try:
                await self._run()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("the background retention sweep failed; it runs again in %s s",
                            self.interval, exc_info=True)

    async def stop(self) -> None:
        """Cancel the loop and wait for it to end (a sweep in progress is cancelled)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
