"""Turning stored rows back into the vocabulary, for the SQL stores.

Rows were validated when they were written, so they are rebuilt without validating again:
:func:`~memvault.stores.decode.trusted` fills a model's fields directly, as pydantic's
``model_construct`` does but without its per-call overhead (reads of a history window build many
small models). The conformance suite checks that what comes back equals what was saved; a row
that cannot be decoded is contained as :mod:`memvault.stores.decode` says.
"""

from __future__ import annotations

import json
from typing import Any

from memvault.model import Message, State, Summary, Thread
from memvault.rules.words import fold_text
from memvault.stores import decode
from memvault.stores.common import from_micros, to_micros
from memvault.stores.passages import Passage, Weighed
from memvault.stores.thread_queries import fold

THREAD_COLUMNS = "resource_id, id, title, metadata, created_us, updated_us"
"""The ``threads`` columns :func:`thread` reads, in order."""
THREAD_WRITE_COLUMNS = THREAD_COLUMNS + ", title_fold"
"""The ``threads`` columns :func:`thread_values` gives, in order: :data:`THREAD_COLUMNS` and the
folded title that ``title_contains`` searches (:func:`memvault.stores.thread_queries.fold`)."""
MESSAGE_COLUMNS = "id, thread_id, resource_id, seq, role, parts, metadata, created_us"
"""The ``messages`` columns :func:`message` reads, in order (:func:`qualified` names them in a join)."""
STATE_COLUMNS = "resource_id, key, value, status, version, updated_us, workflow_id, thread_id, created_us"
"""The ``states`` columns :func:`state` reads, in order."""
SUMMARY_COLUMNS = "resource_id, thread_id, text, through_seq, through_message_id, version, updated_us"
"""The ``summaries`` columns :func:`summary` reads and :func:`summary_values` gives, in order."""


def qualified(columns: str, alias: str) -> str:
    """``columns`` (comma-separated) each prefixed with a table alias: ``m.id, m.thread_id, ...``."""
    return ", ".join(f"{alias}.{name.strip()}" for name in columns.split(","))

def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message(row: Any) -> Message:
    """A row of ``id, thread_id, resource_id, seq, role, parts, metadata, created_us``; a row
    that cannot be decoded gives a placeholder (the rule: :mod:`memvault.stores.decode`)."""
    message_id, thread_id, resource_id, seq, role, parts, metadata, created_us = row
    try:
        return decode.trusted(Message, {
            "id": message_id,
            "role": decode.decode_role(role),
            "parts": decode.decode_parts(parts),
            "thread_id": thread_id,
            "resource_id": resource_id,
            "created_at": decode.decode_time(created_us),
            "metadata": decode.decode_metadata(metadata),
            "seq": seq,
        })
    except decode.Unreadable as exc:
        return decode.placeholder(tuple(row), exc.reason)


class StoredPassage(Passage):
    """A passage of a stored row, read lazily: what recall weighs of a message of one text part
    (the compact form) is read from its columns without building its message; any other row
    builds its message (or its placeholder) on first use, as :func:`message` does."""

    __slots__ = ("_row",)

    def __init__(self, row: Any) -> None:
        super().__init__(row[1], row[0], row[3])
        self._row = row

    @property
    def created_us(self) -> int:
        stored = self._row[7]
        if self._weighed is None and decode.readable_time(stored):  # the message's, read or not
            return int(stored)
        return self._fields()[0]

    def metadata_value(self, key: str) -> Any:
        stored = self._row[6]
        if (self._weighed is None and isinstance(stored, str) and "\\" not in stored
                and '"' not in key and "\\" not in key and f'"{key}"' not in stored):
            return None  # no such key in the text (and an unreadable row's metadata is empty)
        return self.metadata.get(key)

    def _weigh(self) -> Weighed:
        found = decode.compact_text(self._row)
        if found is None:
            return super()._weigh()
        text, metadata = found
        return self._row[7], metadata, fold_text(text)

    def _build(self) -> Message:
        return message(self._row)


def passage(row: Any) -> Passage:
    """The :class:`~memvault.stores.passages.Passage` of a row of :data:`MESSAGE_COLUMNS`:
    what :func:`message` gives, read lazily (which never raises, whatever the row holds)."""
    return StoredPassage(row)


def thread(row: Any) -> Thread:
    """A row of ``resource_id, id, title, metadata, created_us, updated_us``."""
    resource_id, thread_id, title, metadata, created_us, updated_us = row
    return Thread.model_construct(
        resource_id=resource_id,
        id=thread_id,
        title=title,
        metadata=json.loads(metadata),
        created_at=from_micros(created_us),
        updated_at=from_micros(updated_us),
    )


STATE_FILTERS = ("status", "workflow_id", "thread_id")
"""The columns ``list_states`` filters on (each equal when given)."""


def states_sql(filters: dict[str, str | None], placeholder: str) -> tuple[str, list[str]]:
    """The SQL stores' ``list_states``: the statement (parameters: the resource id, the given
    filters' values, the limit) and the filters' values. Each filter reads an index led by
    ``(resource_id, <column>)``, newest update first."""
    given = [(name, value) for name, value in filters.items() if value is not None]
    if any(name not in STATE_FILTERS for name, _ in given):
        raise ValueError(f"unknown state filter in {sorted(filters)}")
    where = "".join(f" AND {name} = {placeholder}" for name, _ in given)
    return (f"SELECT {STATE_COLUMNS} FROM states WHERE resource_id = {placeholder}{where}"
            f" ORDER BY updated_us DESC, key DESC LIMIT {placeholder}", [value for _, value in given])


def state(row: Any) -> State:
    """A row of :data:`STATE_COLUMNS`."""
    resource_id, key, value, status, version, updated_us, workflow_id, thread_id, created_us = row
    return State.model_construct(
        resource_id=resource_id,
        key=key,
        value=json.loads(value),
        status=status,
        version=version,
        workflow_id=workflow_id,
        thread_id=thread_id,
        created_at=from_micros(created_us),
        updated_at=from_micros(updated_us),
    )


def thread_values(thread: Thread) -> tuple[Any, ...]:
    """The values of :data:`THREAD_WRITE_COLUMNS` for ``thread``, to write."""
    return (thread.resource_id, thread.id, thread.title, dumps(thread.metadata),
            to_micros(thread.created_at), to_micros(thread.updated_at), title_fold(thread.title))


def title_fold(title: str | None) -> str | None:
    """The ``title_fold`` column of a thread titled ``title`` (``None`` without a title)."""
    return None if title is None else fold(title)


def summary_values(summary: Summary) -> tuple[Any, ...]:
    """The values of :data:`SUMMARY_COLUMNS` for ``summary``, to write."""
    return (summary.resource_id, summary.thread_id, summary.text, summary.through_seq,
            summary.through_message_id, summary.version, to_micros(summary.updated_at))


def summary(row: Any) -> Summary:
    """A row of ``resource_id, thread_id, text, through_seq, through_message_id, version,
    updated_us``."""
    resource_id, thread_id, text, through_seq, through_message_id, version, updated_us = row
    return Summary.model_construct(
        resource_id=resource_id, thread_id=thread_id, text=text, through_seq=int(through_seq),
        through_message_id=through_message_id, version=int(version),
        updated_at=from_micros(int(updated_us)),
    )
