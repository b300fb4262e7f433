"""The synchronous twins: :class:`Memory` (every method of :class:`memvault.Memory` without
``await``) and :class:`Turn` (:class:`memvault.runtime.Turn` without ``await``).

Example::

    from memvault.sync import Memory, Turn

    with Memory.open("sqlite:///app.db") as memory:
        memory.save_messages([Message.user("hi")], thread_id="t1", resource_id="ada")
"""

from memvault.sync.memory import Memory
from memvault.sync.turn import SyncTurn

__all__ = ["Memory", "SyncTurn"]
