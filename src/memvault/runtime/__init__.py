"""The agent side of a turn: collect the model's output as it streams, and persist it.

:class:`ConversationBuffer` merges a turn's steps into messages and pairs tool results with their
calls; :class:`PersistQueue` saves what changed, debounced, one writer per thread, never leaving a
tool call without its result in the store.
"""

from memvault.runtime.buffer import (
    AGENT_ID,
    AGENT_NAME,
    TURN_ID,
    ConversationBuffer,
    UnknownToolCallError,
    agent_of,
    by_agent,
    timeline,
)
from memvault.runtime.persist import Dangling, MessageWriter, PersistQueue

__all__ = [
    "AGENT_ID",
    "AGENT_NAME",
    "TURN_ID",
    "ConversationBuffer",
    "Dangling",
    "MessageWriter",
    "PersistQueue",
    "UnknownToolCallError",
    "agent_of",
    "by_agent",
    "timeline",
]
