"""The synchronous twins: :class:`Memory` (every method of :class:`memvault.Memory` without
``await``), :class:`Runtime` and :class:`SyncTurn` (:class:`memvault.runtime.Runtime` and its
turns without ``await``). The runtime's twins load on first use, so ``from memvault.sync import
Memory`` does not load the runtime.

Example::

    from memvault.sync import Memory, Runtime

    with Memory.open("sqlite:///app.db") as memory:
        memory.save_messages([Message.user("hi")], thread_id="t1", resource_id="ada")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memvault.sync.memory import Memory

if TYPE_CHECKING:
    from memvault.sync.runner import Runtime
    from memvault.sync.turn import SyncTurn

__all__ = ["Memory", "Runtime", "SyncTurn"]

_LAZY = {"Runtime": "memvault.sync.runner", "SyncTurn": "memvault.sync.turn"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'memvault.sync' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
