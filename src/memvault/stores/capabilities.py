"""Optional store capabilities: small protocols beside the core :class:`~memvault.stores.base.Store`.

A store implements the core (threads, messages, working-memory notes) and any of these. Callers
ask with a ``supports_*`` guard (a :data:`typing.TypeGuard`, answered once per store class) or take
the capability with a ``require_*`` call, which raises :class:`memvault.errors.ConfigurationError`
naming what is missing. The three built-in stores implement all of them.

- :class:`FullTextSearch`: words search and its rebuild (lexical recall, ``search_messages``);
- :class:`StateStore`: keyed, versioned states (suspended runs);
- :class:`SummaryStore`: each thread's running summary;
- :class:`EmbeddingStore`: persisted message vectors (semantic recall);
- :class:`SentenceVectors`: each message's sentences' vectors beside its own (the scores by
  meaning of recall's candidates);
- :class:`ExportStore`: listing and exact restore, for copy, export and stats;
- :class:`BatchReads`: a turn's reads in one call each (fewer round trips);
- :class:`PassageReads`: recall's reads as passages, whose messages are built only when fed;
- :class:`PoolSearch`: a search with its hits' neighbourhoods and the query terms each holds,
  from the full-text index, in one call (recall scores words without decoding text);
- :class:`Purge`: the step that makes deleted data unrecoverable from the database files;
- :class:`Retention`: how long messages are kept (a store-wide and per-resource maximum age).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeAlias, TypeGuard, cast, runtime_checkable

from memvault.errors import ConfigurationError
from memvault.model import Message, SearchHit, State, Summary, Thread
from memvault.stores.base import UNSET, Store, _Unset
from memvault.stores.passages import Passage, SearchPool


@runtime_checkable
class FullTextSearch(Protocol):
    """Full-text search over a resource's messages (lexical recall needs it)."""

    async def search_messages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Messages of the resource (or of one thread) that share words with ``query``, best first.

        Semantics in :mod:`memvault.rules.words`: any string is safe; a query without words matches
        nothing. Hits, their order and their scores are a function of the resource's own messages
        alone: another resource's writes never change them. Ties go to the older message."""
        ...

    async def rebuild_search_index(self) -> int:
        """Rebuild the full-text index from the messages (derived data); returns how many
        messages it covers."""
        ...


@runtime_checkable
class StateStore(Protocol):
    """Keyed, versioned states of a resource (workflow runs), each optionally tagged with a
    workflow id and scoped to one of the resource's threads (deleting the thread deletes it;
    deleting the resource deletes them all)."""

    async def get_state(self, resource_id: str, key: str) -> State | None:
        """The state under ``key``, or ``None``."""
        ...

    async def set_state(
        self,
        resource_id: str,
        key: str,
        value: Any,
        *,
        status: str | None = None,
        expected_version: int | _Unset | None = UNSET,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> State | None:
        """Write the whole state (value, status, workflow id, thread), incrementing its version
        (1 for a new key); ``created_at`` is kept from the first write.

        With ``expected_version`` (compare-and-set): write only if the current version equals it
        (``None`` meaning "no state yet"), else write nothing and return ``None``. A
        ``thread_id`` the resource has no thread under raises :class:`ThreadNotFoundError`, with
        nothing written."""
        ...

    async def update_state(
        self,
        resource_id: str,
        key: str,
        *,
        merge: Any = UNSET,
        status: str | _Unset | None = UNSET,
        expected_version: int | None = None,
    ) -> State | None:
        """Change an existing state atomically (no writer in any process runs between the read
        and the write): apply the JSON merge patch ``merge`` to its value
        (:func:`memvault.rules.merge_patch.merge_patch`) and/or set its ``status`` (``None``
        clears it; ``UNSET`` keeps either); the version grows by one, ``updated_at`` is now.
        With ``expected_version``, only if the current version equals it, else nothing is
        written and ``None`` is returned. No such state raises :class:`NotFoundError`."""
        ...

    async def list_states(
        self,
        resource_id: str,
        *,
        status: str | None = None,
        limit: int = 100,
        workflow_id: str | None = None,
        thread_id: str | None = None,
    ) -> list[State]:
        """The resource's states (those with every given ``status``, ``workflow_id`` and
        ``thread_id``), most recently updated first, ties by key (descending)."""
        ...

    async def delete_state(self, resource_id: str, key: str) -> bool:
        """Delete the state; ``False`` when there was none."""
        ...


VectorRow: TypeAlias = tuple[str, str, str, bytes] | tuple[str, str, str, bytes, bytes | None]
"""A ``save_embeddings`` row: ``(resource_id, thread_id, message_id, vector[, sentences])``."""


@runtime_checkable
class EmbeddingStore(Protocol):
    """Where message vectors persist (derived data, rebuildable from messages).

    A *cursor* orders messages by when they were first stored and never repeats; the in-memory
    vector index of each process catches up by loading vectors past the cursor it has seen.
    An empty vector (``b""``) records a message with nothing to embed."""

    async def embedding_model(self) -> tuple[str, int] | None:
        """The model name and dimensions of the stored vectors; ``None`` if none are recorded."""
        ...

    async def save_embeddings(
        self, model: str, dimensions: int, rows: Sequence[VectorRow]
    ) -> int:
        """Store float32 vectors for ``(resource_id, thread_id, message_id, vector)`` rows
        (a store with :class:`SentenceVectors` also takes a fifth item, the sentences');
        a row whose message no longer exists is skipped. Records ``model`` on first use and
        raises :class:`ConfigurationError` if the store holds another model's vectors (reindex).
        Returns how many were stored."""
        ...

    async def load_embeddings(
        self, *, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, str, str, str, bytes]]:
        """Stored vectors as ``(cursor, resource_id, thread_id, message_id, vector)``, in cursor
        order, past ``after``."""
        ...

    async def unembedded_messages(
        self, *, after: int = 0, limit: int = 500
    ) -> list[tuple[int, Message]]:
        """Messages without a stored vector, as ``(cursor, message)`` in cursor order."""
        ...

    async def clear_embeddings(self) -> int:
        """Delete every stored vector and the recorded model; returns how many vectors."""
        ...


@runtime_checkable
class SentenceVectors(Protocol):
    """Each message's sentences' vectors, kept beside its own vector (derived data).

    A store with this capability takes ``save_embeddings`` rows of five:
    ``(resource_id, thread_id, message_id, vector, sentences)``, ``sentences`` the float16
    vectors of the message's sentences one after another (``None`` for none: a message of one
    sentence); a row of four stores none. They go with the message's vector: deleted with the
    message, dropped when its parts change, cleared by ``clear_embeddings``."""

    async def sentence_embeddings_of(
        self, resource_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str, bytes]]:
        """The stored sentences' vectors of these ``(thread_id, message_id)`` messages of
        ``resource_id`` as ``(thread_id, message_id, sentences)``; messages without them, or of
        another resource, are left out."""
        ...


def sentences_of(row: Sequence[Any]) -> bytes | None:
    """The sentences' vectors of a ``save_embeddings`` row (:class:`SentenceVectors`): its fifth
    item, ``None`` for a row of four or an empty one."""
    found = row[4] if len(row) > 4 else None
    return bytes(found) if found else None


@runtime_checkable
class SummaryStore(Protocol):
    """Where each thread's running summary persists (its own table; see
    :class:`memvault.model.Summary` for what deletes it)."""

    async def get_summary(self, resource_id: str, thread_id: str) -> Summary | None:
        """The thread's summary, or ``None``."""
        ...

    async def save_summary(self, summary: Summary, *, expected_version: int | None) -> Summary | None:
        """Write ``summary`` (its ``version`` and ``updated_at`` are the store's: the current
        version + 1, now) only if the thread's current summary version is ``expected_version``
        (``None``: no summary yet) and the message at ``summary.through_seq`` is still
        ``summary.through_message_id``; else write nothing and return ``None``."""
        ...

    async def delete_summary(self, resource_id: str, thread_id: str) -> bool:
        """Delete the thread's summary; ``False`` when there was none."""
        ...


@runtime_checkable
class ExportStore(Protocol):
    async def resource_ids(self) -> list[str]:
        """Every resource that has a thread, a working memory or a state, in id order."""
        ...

    async def record_counts(self, resource_id: str) -> dict[str, int]:
        """How many ``threads``, ``messages``, ``summaries``, ``working_memories`` (both scopes)
        and ``states`` the resource has (all zero for an unknown resource), counted by the store
        without reading the records."""
        ...

    async def working_memory_keys(self, resource_id: str) -> list[str]:
        """The keys of the resource's stored working memories (both scopes), in key order."""
        ...

    async def state_keys(self, resource_id: str) -> list[str]:
        """The keys of the resource's states, in key order."""
        ...

    async def restore_thread(self, thread: Thread) -> None:
        """Create or overwrite the thread's title, metadata, ``created_at`` and ``updated_at``
        exactly as given (its messages, if any, are kept)."""
        ...

    async def restore_state(self, state: State) -> None:
        """Create or overwrite the state with its value, status, workflow id, thread,
        ``version``, ``created_at`` and ``updated_at`` exactly as given; a thread the resource
        does not have raises :class:`ThreadNotFoundError` (restore threads first)."""
        ...

    async def restore_summary(self, summary: Summary) -> None:
        """Create or overwrite the thread's summary exactly as given (version and time included).
        The caller makes sure ``through_seq`` is the seq of ``through_message_id`` in this store;
        the thread must exist."""
        ...


@dataclass(frozen=True)
class TurnRead:
    """What a turn reads of a thread before the model runs (:meth:`BatchReads.read_turn`)."""

    messages: list[Message]
    """The thread's newest messages, in thread order."""
    summary: Summary | None
    """The thread's running summary (``None`` without one, or when the store keeps none)."""
    note: str | None
    """The working-memory note asked for (``None`` when never written)."""


@runtime_checkable
class BatchReads(Protocol):
    """Reads a turn and recall make together, each in one call (one round trip, one hand-off to
    the store's worker) instead of one call per read. The answers are exactly those of the core
    calls they stand for."""

    async def read_turn(self, resource_id: str, thread_id: str, *, last_n: int, note_key: str) -> TurnRead:
        """``get_messages(last_n=last_n)``, ``get_summary`` (``None`` for a store without
        summaries) and ``get_working_memory(note_key)`` of the thread, in one call."""
        ...

    async def read_around(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Message]]:
        """``get_messages(ids=ids[t], message_range=message_range)`` for every thread ``t`` of
        ``ids``, in one call."""
        ...


@runtime_checkable
class PassageReads(Protocol):
    """Recall's reads as :class:`~memvault.stores.passages.Passage` objects, whose messages are
    built only when asked for (a store that can read a message's text without building it)."""

    async def search_passages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[tuple[Passage, float]]:
        """What :meth:`FullTextSearch.search_messages` finds, each hit as its passage and score."""
        ...

    async def read_passages(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Passage]]:
        """What :meth:`BatchReads.read_around` gives, each message as its passage."""
        ...


@runtime_checkable
class PoolSearch(Protocol):
    """A full-text search that also reads what recall scores its hits by, in one call and one
    snapshot: each hit's neighbourhood, and which query terms each message read holds, from the
    full-text index itself (so recall decodes no text to score by words)."""

    async def search_pool(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10,
        message_range: int = 0,
    ) -> SearchPool:
        """A :class:`~memvault.stores.passages.SearchPool`: the hits ``search_passages`` finds;
        for each thread with a hit, what ``read_passages(resource_id, {thread: hit ids},
        message_range)`` reads; and for each passage read, the bit mask of the query terms
        (:func:`memvault.rules.words.query_terms`, in that order, less any the search leaves
        out as too common) that its indexed text holds, and that text's length in characters
        (``len(passage.text)``). Another resource's thread reads as missing: no hit."""
        ...


@runtime_checkable
class CompleteStore(Store, FullTextSearch, StateStore, SummaryStore, EmbeddingStore, ExportStore, Protocol):
    """A store with every capability, as the three built-in stores are: what a whole-store copy
    and export read and write (:func:`require_complete`)."""


_ANSWERS: dict[tuple[type[Any], type[Any]], bool] = {}


@runtime_checkable
class Purge(Protocol):
    """Erasure's last step: after it returns, no deleted message, thread or resource can be read
    back from the store's files (dead rows, free pages, logs the store controls)."""

    async def purge(self) -> dict[str, Any]:
        """Make deleted rows unrecoverable (SQLite: VACUUM and a truncated WAL; PostgreSQL:
        ``VACUUM FULL`` of the tables holding users' data); returns what was done, per step.
        Safe to run at any time; it may take a while and lock tables on a large store."""
        ...


Expired = tuple[str, str, str]
"""An erased expired message: ``(resource_id, thread_id, message_id)``."""
STORE_DEFAULT = ""
"""The key under which a store keeps its store-wide retention policy (no resource id is empty)."""


@runtime_checkable
class Retention(Protocol):
    """How long messages are kept: a store-wide maximum age and per-resource ones.

    A resource's *effective* policy is its own, else the store's; with neither, its messages
    are kept until deleted. A message is *expired* when its ``created_at`` is older than now
    minus the effective maximum age. Every read of the store (``get_messages``, ``search_messages``,
    ``read_turn``, ``read_around``, and through them recall, export and copy) leaves expired
    messages out, exactly as if they were deleted, from the moment they expire: a page cursor
    naming an expired message still works, and full-text scores may still count expired
    messages until they are swept. :meth:`expire_messages` erases them with their derived data
    (full-text entries, vectors, the summaries covering them), with the store's deletion
    semantics (SQLite: overwritten, index merged, WAL truncated)."""

    async def set_retention(self, resource_id: str, max_age: timedelta | None) -> None:
        """Set the maximum age of ``resource_id``'s messages (:data:`STORE_DEFAULT` for the
        store-wide policy); ``None`` removes that policy. Deleting the resource removes its own."""
        ...

    async def retention_policies(self) -> dict[str, timedelta]:
        """Every policy set, by resource id (:data:`STORE_DEFAULT` for the store-wide one)."""
        ...

    async def expire_messages(self, now: datetime, resource_id: str | None = None) -> list[Expired]:
        """Erase the messages expired at ``now``, each under its resource's effective policy, of
        every resource (or only of ``resource_id``), in one transaction; returns their
        ``(resource_id, thread_id, message_id)``. Nothing happens without a policy."""
        ...


def _implements(kind: type[Any], capability: type[Any]) -> bool:
    answer = _ANSWERS.get((kind, capability))
    if answer is None:
        answer = all(callable(getattr(kind, name, None)) for name in methods_of(capability))
        _ANSWERS[(kind, capability)] = answer
    return answer


def methods_of(capability: type[Any]) -> frozenset[str]:
    """The public methods a protocol asks for, its base protocols' included."""
    return frozenset(name for base in capability.__mro__ if base not in (object, Protocol)
                     for name, value in vars(base).items() if callable(value) and not name.startswith("_"))


def implements(store: object, capability: type[Any]) -> bool:
    """Whether ``store``'s class has every method the protocol ``capability`` asks for
    (:func:`methods_of`), answered once per class: what each ``supports_*`` guard asks."""
    return _implements(type(store), capability)


def supports_full_text(store: object) -> TypeGuard[FullTextSearch]:
    """Whether ``store`` has :class:`FullTextSearch`."""
    return implements(store, FullTextSearch)


def supports_states(store: object) -> TypeGuard[StateStore]:
    """Whether ``store`` has :class:`StateStore`."""
    return implements(store, StateStore)


def supports_summaries(store: object) -> TypeGuard[SummaryStore]:
    """Whether ``store`` has :class:`SummaryStore`."""
    return implements(store, SummaryStore)


def supports_embeddings(store: object) -> TypeGuard[EmbeddingStore]:
    """Whether ``store`` has :class:`EmbeddingStore`."""
    return implements(store, EmbeddingStore)


def supports_sentence_vectors(store: object) -> TypeGuard[SentenceVectors]:
    """Whether ``store`` has :class:`SentenceVectors`."""
    return implements(store, SentenceVectors)


def supports_batch_reads(store: object) -> TypeGuard[BatchReads]:
    """Whether ``store`` has :class:`BatchReads`."""
    return implements(store, BatchReads)


def supports_passage_reads(store: object) -> TypeGuard[PassageReads]:
    """Whether ``store`` has :class:`PassageReads`."""
    return implements(store, PassageReads)


def supports_pool_search(store: object) -> TypeGuard[PoolSearch]:
    """Whether ``store`` has :class:`PoolSearch`."""
    return implements(store, PoolSearch)


def supports_export(store: object) -> TypeGuard[ExportStore]:
    """Whether ``store`` has :class:`ExportStore`."""
    return implements(store, ExportStore)


def supports_purge(store: object) -> TypeGuard[Purge]:
    """Whether ``store`` has a :class:`Purge` step."""
    return implements(store, Purge)


def supports_retention(store: object) -> TypeGuard[Retention]:
    """Whether ``store`` has :class:`Retention`."""
    return implements(store, Retention)


def _missing(store: object, what: str) -> ConfigurationError:
    return ConfigurationError(f"{type(store).__name__} has no {what}: use a store that implements it "
                              "(the built-in memory://, sqlite:/// and postgresql:// stores all do)")


def require_full_text(store: object) -> FullTextSearch:
    """``store`` as a :class:`FullTextSearch`, or :class:`ConfigurationError`."""
    if not supports_full_text(store):
        raise _missing(store, "full-text search")
    return store


def require_states(store: object) -> StateStore:
    """``store`` as a :class:`StateStore`, or :class:`ConfigurationError`."""
    if not supports_states(store):
        raise _missing(store, "state store")
    return store


def require_summaries(store: object) -> SummaryStore:
    """``store`` as a :class:`SummaryStore`, or :class:`ConfigurationError`."""
    if not supports_summaries(store):
        raise _missing(store, "summary store")
    return store


def require_embeddings(store: object) -> EmbeddingStore:
    """``store`` as an :class:`EmbeddingStore`, or :class:`ConfigurationError`."""
    if not supports_embeddings(store):
        raise _missing(store, "vector persistence (EmbeddingStore)")
    return store


def require_export(store: object) -> ExportStore:
    """``store`` as an :class:`ExportStore`, or :class:`ConfigurationError`."""
    if not supports_export(store):
        raise _missing(store, "listing and restore (ExportStore)")
    return store


def require_retention(store: object) -> Retention:
    """``store`` as a :class:`Retention`, or :class:`ConfigurationError`."""
    if not supports_retention(store):
        raise _missing(store, "retention policies")
    return store


def require_complete(store: object, side: str = "the store") -> CompleteStore:
    """``store`` as a :class:`CompleteStore` (every capability), or :class:`ConfigurationError`
    naming ``side`` (e.g. ``"the source"``) and what it lacks."""
    lacking = [name for name, capability in (("full-text search", FullTextSearch), ("states", StateStore),
                                              ("summaries", SummaryStore), ("vectors", EmbeddingStore),
                                              ("listing and restore", ExportStore))
               if not implements(store, capability)]
    if lacking or not implements(store, Store):
        raise ConfigurationError(f"{side} ({type(store).__name__}) cannot be copied or exported: it has no "
                                 + ", ".join(lacking or ["core store methods"]))
    return cast(CompleteStore, store)
