"""memvault: memory for LLM agents.

Store every message durably; at each turn, feed the model the recent history, a working-memory
note and what search finds, within a token budget. ``memvault.sync`` has the synchronous twin.

Importing memvault is cheap: the names below load on first use, from the one table
:data:`_EXPORTS`. A name whose module needs an optional package raises
:class:`~memvault.errors.MissingExtraError` naming the extra to install
(``pip install 'memvault[openai]'``, ...). The errors are always loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.errors import (
    ConfigurationError,
    EncryptionKeyError,
    MemvaultError,
    MessageTooLargeError,
    MissingExtraError,
    NotFoundError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    StoreOpenError,
    ThreadExistsError,
    ThreadNotFoundError,
    ValidationError,
)
from memvault.extras import import_optional
from memvault.native import load_shared_cxx_runtime

load_shared_cxx_runtime()  # before anything loads usearch: see memvault.native

if TYPE_CHECKING:
    from memvault.llm.openai import OpenAIChatModel
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
        UnknownPart,
        UnreadablePart,
    )
    from memvault.options import HistoryOptions, MemoryOptions
    from memvault.recall import RecallOptions, RecallResult
    from memvault.rules.working_memory import WorkingMemoryOptions
    from memvault.runtime import BackgroundTasks, Runtime, Turn, TurnOptions
    from memvault.runtime.context import ContextOptions
    from memvault.vectors.ann import AnnIndex
    from memvault.vectors.exact import ExactIndex
    from memvault.vectors.pgvector import PgVectorIndex

__version__ = "0.1.0"

_MODEL = ("DataPart", "FilePart", "ImagePart", "Message", "Part", "ReasoningPart", "SearchHit", "State",
          "Summary", "TextPart", "Thread", "ThreadPage", "ToolCallPart", "ToolResultPart", "UnknownPart",
          "UnreadablePart")

_EXPORTS: dict[str, tuple[str, str | None]] = {
    **{name: ("memvault.model", None) for name in _MODEL},
    "Memory": ("memvault.memory", None),
    "MemoryOptions": ("memvault.options", None),
    "HistoryOptions": ("memvault.options", None),
    "WorkingMemoryOptions": ("memvault.rules.working_memory", None),
    "RecallOptions": ("memvault.recall", None),
    "RecallResult": ("memvault.recall", None),
    "Runtime": ("memvault.runtime", None),
    "Turn": ("memvault.runtime", None),
    "TurnOptions": ("memvault.runtime", None),
    "BackgroundTasks": ("memvault.runtime", None),
    "ContextOptions": ("memvault.runtime.context", None),
    "OpenAIChatModel": ("memvault.llm.openai", "openai"),
    "ExactIndex": ("memvault.vectors.exact", "vectors"),
    "AnnIndex": ("memvault.vectors.ann", "ann"),
    "PgVectorIndex": ("memvault.vectors.pgvector", "postgres"),
}
"""Each public name: the module it lives in, and the extra its optional packages come with
(``None``: the default install has everything it needs; the package's extra in
:data:`memvault.extras.EXTRAS` is named if one is missing anyway)."""

__all__ = [
    "AnnIndex",
    "BackgroundTasks",
    "ConfigurationError",
    "ContextOptions",
    "DataPart",
    "EncryptionKeyError",
    "ExactIndex",
    "FilePart",
    "HistoryOptions",
    "ImagePart",
    "Memory",
    "MemoryOptions",
    "MemvaultError",
    "Message",
    "MessageTooLargeError",
    "MissingExtraError",
    "NotFoundError",
    "OpenAIChatModel",
    "Part",
    "PgVectorIndex",
    "ReadOnlyStoreError",
    "ReasoningPart",
    "RecallOptions",
    "RecallResult",
    "Runtime",
    "SchemaVersionError",
    "SearchHit",
    "State",
    "StoreClosedError",
    "StoreError",
    "StoreOpenError",
    "Summary",
    "TextPart",
    "Thread",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ThreadPage",
    "ToolCallPart",
    "ToolResultPart",
    "Turn",
    "TurnOptions",
    "UnknownPart",
    "UnreadablePart",
    "ValidationError",
    "WorkingMemoryOptions",
]


def __getattr__(name: str) -> Any:
    """Load a public name on first use (see the module docstring)."""
    try:
        module_name, extra = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'memvault' has no attribute {name!r}") from None
    value = getattr(import_optional(module_name, f"memvault.{name}", extra), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
