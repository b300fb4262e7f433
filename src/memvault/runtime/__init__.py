"""The agent side of a turn: assemble the context, collect the model's output as it streams,
persist it, and do the background work after it.

:class:`Runtime` starts turns (:class:`Turn`) with a shared model and one owner of their
background work (:class:`BackgroundTasks`: titles, summaries). :class:`ConversationBuffer`
merges a turn's steps into messages and pairs tool results with their calls;
:class:`PersistQueue` saves what changed, debounced, one writer per thread, never leaving a tool
call without its result in the store.
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
from memvault.runtime.runner import Runtime
from memvault.runtime.tasks import BackgroundTasks
from memvault.runtime.turn import Turn, TurnOptions

__all__ = [
    "AGENT_ID",
    "AGENT_NAME",
    "TURN_ID",
    "BackgroundTasks",
    "ConversationBuffer",
    "Dangling",
    "MessageWriter",
    "PersistQueue",
    "Runtime",
    "Turn",
    "TurnOptions",
    "UnknownToolCallError",
    "agent_of",
    "by_agent",
    "timeline",
]
