"""Pieces every store shares: page cursors, timestamps, query checks."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memvault.errors import ValidationError, shown
from memvault.model import MAX_ID_LENGTH, Message, State, Thread, now
from memvault.rules.merge_patch import merge_patch
from memvault.stores.base import MessageQuery, _Unset

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def to_micros(value: datetime) -> int:
    """Microseconds since the Unix epoch (UTC), exactly: the stores' time column.
    A naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - EPOCH) // MICROSECOND


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(0, 0, value)  # positional: a third faster than microseconds=


def encode_cursor(updated_us: int, thread_id: str) -> str:
    """An opaque page cursor: the sort key of the last thread on the page."""
    raw = f"{updated_us}:{thread_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


RECORD_TABLES = (("threads", "threads"), ("messages", "messages"), ("summaries", "summaries"),
                 ("working_memories", "working_memory"), ("states", "states"))
"""The record kinds :meth:`~memvault.stores.capabilities.ExportStore.record_counts` answers, each with
the table the SQL stores keep it in."""


RESOURCE_IDS_SQL = (
    "SELECT resource_id FROM threads UNION SELECT resource_id FROM working_memory"
    " UNION SELECT resource_id FROM states ORDER BY 1"
)
"""Every resource that has a thread, a working memory or a state, in order (the SQL stores)."""


def record_counts_sql(placeholder: str) -> str:
    """One statement counting each :data:`RECORD_TABLES` kind of one resource; every count
    reads an index led by ``resource_id``. ``placeholder`` is the driver's (``?`` or ``%s``)."""
    return "SELECT " + ", ".join(
        f"(SELECT count(*) FROM {table} WHERE resource_id = {placeholder})" for _, table in RECORD_TABLES)


def upsert_sql(table: str, columns: str, key: str, placeholder: str) -> str:
    """One statement writing a whole row of ``table``: an insert that, when a row with the same
    ``key`` (its primary key's columns) exists, overwrites each of its other ``columns``.
    ``placeholder`` is the driver's (``?`` or ``%s``)."""
    names = [name.strip() for name in columns.split(",")]
    keys = {name.strip() for name in key.split(",")}
    marks = ", ".join([placeholder] * len(names))
    changes = ", ".join(f"{name} = excluded.{name}" for name in names if name not in keys)
    return f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT ({key}) DO UPDATE SET {changes}"


def decode_cursor(cursor: str) -> tuple[int, str]:
    """The (time in microseconds, thread id) a page cursor holds; a cursor no store made
    (bad base64, no separator, a time beyond a 64-bit integer) is a ValidationError."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        micros, thread_id = base64.urlsafe_b64decode(padded).decode().split(":", 1)
        value = int(micros)
        if not -(2**63) <= value < 2**63:
            raise ValueError("out of range")
        return value, thread_id
    except (ValueError, UnicodeDecodeError):
        raise ValidationError(
            "invalid page cursor: pass the next_cursor of a previous page unchanged"
        ) from None


MAX_COUNT = 2**63 - 1
"""The largest count a query takes (``last_n``, ``first_n``, ``message_range``): a 64-bit integer."""


def check_query(query: MessageQuery) -> None:
    """Refuse contradictory or out-of-range message queries."""
    if query.last_n is not None and query.first_n is not None:
        raise ValidationError("give last_n or first_n, not both")
    for name in ("last_n", "first_n", "message_range"):
        value = getattr(query, name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or not 0 <= value <= MAX_COUNT):
            raise ValidationError(f"{name} must be an integer from 0 to {MAX_COUNT}, got {shown(value)}")
    if query.ids is not None:
        if isinstance(query.ids, str):
            raise ValidationError("ids must be a list of message ids, not one string")
        if query.before is not None or query.after is not None:
            raise ValidationError("give ids or a before/after cursor, not both")
        for message_id in query.ids:
            if not isinstance(message_id, str) or not message_id or len(message_id) > MAX_ID_LENGTH:
                raise ValidationError(f"invalid message id {shown(message_id)}")


def check_limit(limit: int, name: str = "limit", maximum: int = 10_000) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= maximum:
        raise ValidationError(f"{name} must be an integer from 1 to {maximum}, got {shown(limit)}")


def check_pool_search(limit: int, message_range: int) -> None:
    """Refuse a ``search_pool`` call's out-of-range ``limit`` or ``message_range``, as
    ``search_messages`` and ``get_messages`` refuse them."""
    check_limit(limit)
    check_query(MessageQuery(message_range=message_range))


def embedding_mismatch(stored: tuple[str, int], wanted: tuple[str, int | None]) -> str:
    """The message for vectors stored by another model (``wanted[1]`` is ``None`` when the new
    embedder has not said its dimensions yet)."""
    size = "" if wanted[1] is None else f" ({wanted[1]} dimensions)"
    (stored_model, stored_context), (wanted_model, wanted_context) = (
        _context_of(stored[0]), _context_of(wanted[0]))
    if stored_model == wanted_model and stored_context != wanted_context and wanted[1] in (None, stored[1]):
        return (
            f"the stored vectors of {stored_model!r} were embedded with {stored_context} earlier "
            f"message(s) of their thread as context (MemoryOptions.embed_context={stored_context}), "
            f"not {wanted_context}: run `memvault reindex --embedder SPEC --embed-context "
            f"{wanted_context}` to embed the messages again (from Python: open the Memory without an "
            "embedder, call `await memory.clear_embeddings()`, then open it with the embedder and "
            "the new embed_context and call `await memory.reindex()`)"
        )
    return (
        f"the stored vectors come from {stored[0]!r} ({stored[1]} dimensions), not from "
        f"{wanted[0]!r}{size}: run `memvault reindex --embedder SPEC` to embed the messages "
        "again with the new model (from Python: open the Memory without an embedder, call "
        "`await memory.clear_embeddings()`, then open it with the new one and call "
        "`await memory.reindex()`)"
    )


def _context_of(recorded: str) -> tuple[str, int]:
    """A recorded model name split into the model and its ``embed_context``
    (:func:`memvault.recall.semantic.recorded_model`: ``"<model> +context=N"``, or the bare name
    for 0)."""
    model, mark, number = recorded.rpartition(" +context=")
    return (model, int(number)) if mark and number.isdigit() else (recorded, 0)


def saved_messages(
    messages: Sequence[Message], resource_id: str, thread_id: str, seqs: Sequence[int]
) -> list[Message]:
    """What ``save_messages`` returns: the messages as given, with their thread, resource and
    the seqs the store gave them."""
    return [
        m.model_copy(update={"thread_id": thread_id, "resource_id": resource_id, "seq": seq})
        for m, seq in zip(messages, seqs, strict=True)
    ]


def updated_state(current: State, merge: Any, status: Any) -> State:
    """``current`` changed by ``update_state``: ``merge`` (a JSON merge patch, ``UNSET``: none)
    applied to its value, ``status`` set (``UNSET`` keeps it), the next version, updated now.
    (A merge keeps only paths of the value or of the patch, so it nests no deeper than they do.)"""
    changes: dict[str, Any] = {"version": current.version + 1, "updated_at": now()}
    if not isinstance(merge, _Unset):
        changes["value"] = merge_patch(current.value, merge)
    if not isinstance(status, _Unset):
        changes["status"] = status
    return current.model_copy(update=changes)


def changed_thread(thread: Thread, title: Any, metadata: Any) -> Thread:
    """``thread`` with the given title and/or metadata (``UNSET`` keeps it) and ``updated_at``
    now, validated: what ``update_thread`` writes."""
    changes: dict[str, Any] = {"updated_at": now()}
    if not isinstance(title, _Unset):
        changes["title"] = title
    if not isinstance(metadata, _Unset):
        changes["metadata"] = metadata
    return Thread.parse({**thread.model_dump(), **changes})

