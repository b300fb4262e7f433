"""memvault: memory for LLM agents.

Store every message durably; at each turn, feed the model the recent history, a working-memory
note and what search finds, within a token budget. ``memvault.sync`` has the synchronous twin.
"""

from memvault.errors import (
    ConfigurationError,
    MemvaultError,
    MessageTooLargeError,
    NotFoundError,
    SchemaVersionError,
    ThreadExistsError,
    ThreadNotFoundError,
    ValidationError,
)
from memvault.memory import Memory
from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    SearchHit,
    State,
    Summary,
    TextPart,
    Thread,
    ThreadPage,
    ToolCallPart,
    ToolResultPart,
)
from memvault.options import HistoryOptions, MemoryOptions
from memvault.rules.working_memory import WorkingMemoryOptions

__version__ = "0.1.0"

__all__ = [
    "ConfigurationError",
    "DataPart",
    "FilePart",
    "HistoryOptions",
    "ImagePart",
    "Memory",
    "MemoryOptions",
    "MemvaultError",
    "Message",
    "MessageTooLargeError",
    "NotFoundError",
    "Part",
    "ReasoningPart",
    "SchemaVersionError",
    "SearchHit",
    "State",
    "Summary",
    "TextPart",
    "Thread",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ThreadPage",
    "ToolCallPart",
    "ToolResultPart",
    "ValidationError",
    "WorkingMemoryOptions",
]
