"""The synchronous twins: :class:`Memory` (every method of :class:`memvault.Memory` without
``await``), :class:`Runtime` and :class:`SyncTurn` (:class:`memvault.runtime.Runtime` and its
turns without ``await``).

Example::

    from memvault.sync import Memory, Runtime

    with Memory.open("sqlite:///app.db") as memory:
        memory.save_messages([Message.user("hi")], thread_id="t1", resource_id="ada")
"""

from memvault.sync.memory import Memory
from memvault.sync.runner import Runtime
from memvault.sync.turn import SyncTurn

__all__ = ["Memory", "Runtime", "SyncTurn"]
