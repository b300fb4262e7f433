"""Options of :class:`memvault.Memory`, with their defaults.

Example::

    Memory.open("sqlite:///app.db", options=MemoryOptions(
        history=HistoryOptions(last_n=20, max_tokens=4000),
        working_memory=WorkingMemoryOptions(template="# User\\n- Name:\\n"),
        recall=RecallOptions(top_k=8, scope="thread"),
    ))
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memvault.errors import ValidationError
from memvault.recall.options import RecallOptions
from memvault.rules.tokens import TokenCounter, estimate_tokens, resolve_token_counter
from memvault.rules.working_memory import WorkingMemoryOptions

DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class HistoryOptions:
    """The recent window fed each turn: the newest ``last_n`` messages (default 10), trimmed to
    ``max_tokens`` when given (default: no token limit)."""

    last_n: int = 10
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.last_n < 0 or (self.max_tokens is not None and self.max_tokens < 0):
            raise ValidationError("last_n and max_tokens must not be negative")


@dataclass(frozen=True)
class MemoryOptions:
    """Everything :class:`memvault.Memory` can be told.

    ``recall``: the options :meth:`memvault.Memory.recall` uses when a call gives none
    (default: :class:`~memvault.recall.RecallOptions`' defaults).
    ``max_message_bytes``: a message whose parts and metadata serialize to more than this many
    bytes of JSON is refused (default 10 MiB). ``token_counter`` counts tokens for budgets:
    a function from text to a count, or a name :func:`memvault.rules.tokens.resolve_token_counter`
    knows (``"o200k_base"``, ``"gpt-4o"``, ``"estimate"``); default: the offline estimate
    :func:`memvault.rules.tokens.estimate_tokens`. A name is resolved when the options are made.
    ``embed_context``: with an embedder, how many earlier messages of its thread are embedded
    with each message (default 0: the message alone), with their authors' names, one a line
    (:func:`memvault.recall.semantic.embedding_text`): a reply such as "Yes, last Sunday!"
    then carries the question it answers. Off by default because it did not generalise: on
    LoCoMo with all-MiniLM-L6-v2, cross-validated over 0, 2, 3, 4 and 6, every fold chose 0
    (probably because recall already smooths each vector score over the neighbours,
    ``RecallOptions.vector_context_window``; docs/benchmarks.md). The number is recorded with
    the model name, so opening a store embedded with another value raises
    :class:`~memvault.errors.ConfigurationError` like a change of model (``memvault reindex``
    embeds again). Saving a message again (an edit) or deleting one embeds again the
    ``embed_context`` messages after it; other staleness (a write that bypasses
    :class:`memvault.Memory`) is fixed by ``reindex``.
    ``embed_sentences`` (default ``True``): with an embedder, each message of two sentences
    or more also has its sentences embedded and stored beside it (derived data, on a store
    that keeps them: the three built-in stores), and recall scores it by its best sentence as
    well as by itself (``RecallOptions.sentence_weight``; :mod:`memvault.recall.sentences`).
    A store embedded without them keeps working on the messages' own vectors; ``memvault
    reindex`` adds them. ``False`` embeds and stores the messages alone (about 1.08x less
    embedding time on LoCoMo's turns, and 3.45 fewer half-precision vectors per message).
    ``sweep_interval``: seconds between the background retention sweeps of an open memory whose
    store has a retention policy (:mod:`memvault.retention`; default 3600, the first a minute after
    opening); ``None`` sweeps only on demand.
    """

    history: HistoryOptions = field(default_factory=HistoryOptions)
    working_memory: WorkingMemoryOptions = field(default_factory=WorkingMemoryOptions)
    recall: RecallOptions = field(default_factory=RecallOptions)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    token_counter: TokenCounter = estimate_tokens
    sweep_interval: float | None = 3600.0
    embed_context: int = 0
    embed_sentences: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.embed_sentences, bool):
            raise ValidationError(f"embed_sentences must be True or False, got {self.embed_sentences!r}")
        if (not isinstance(self.embed_context, int) or isinstance(self.embed_context, bool)
                or self.embed_context < 0):
            raise ValidationError(f"embed_context must be an integer >= 0, got {self.embed_context!r}")
        if self.sweep_interval is not None and not (
                isinstance(self.sweep_interval, int | float) and 0 < self.sweep_interval < float("inf")):
            raise ValidationError("sweep_interval must be a positive number of seconds or None")
        if not callable(self.token_counter):
            object.__setattr__(self, "token_counter", resolve_token_counter(self.token_counter))
