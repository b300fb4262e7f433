"""Importing other agent-memory systems' databases: what the readers share.

A reader (:mod:`~memvault.transfer.voltagent`, :mod:`~memvault.transfer.mastra`) opens the
source file read-only, turns its rows into a :class:`Seed` (memvault threads, messages, notes and
states, checked) and notes what it could not carry; :func:`write_seed` then writes the seed into
a store. Nothing is written before the whole source has been read and checked.

Importing is idempotent and merges: records keep the source's ids, a message already in the
thread is updated in place (it keeps its ``seq``), a thread's title, metadata and times are set to
the source's, working memories and states are overwritten. Running the same import twice changes
nothing; messages added in memvault to an imported thread are kept.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault.errors import StoreOpenError, ValidationError, shown
from memvault.model import Message, State, Thread, note_key
from memvault.stores.capabilities import CompleteStore
from memvault.transfer import jsonb
from memvault.transfer.copier import BATCH

SYSTEMS = ("voltagent", "mastra")
"""The systems ``memvault import --from SYSTEM:PATH`` reads."""

Progress = Callable[[int, int], None]
"""Called with (records done, records in all) while a seed is written."""


@dataclass
class ImportReport:
    """What an import carried (``counts``: threads, messages, working memories, states) and what
    it could not (``not_carried``: a reason, with how many items it covers)."""

    system: str
    source: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("threads", "messages", "working_memories", "states"), 0))
    not_carried: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON (for ``--json``)."""
        return {"system": self.system, "source": self.source, "counts": dict(self.counts),
                "not_carried": dict(self.not_carried)}


@dataclass
class SeedThread:
    """A thread of the source with its messages, in the source's order."""

    thread: Thread
    messages: list[Message] = field(default_factory=list)


@dataclass
class Seed:
    """Everything a reader took from the source, checked and ready to write. ``notes`` are
    working memories as (resource_id, note key, content)."""

    threads: list[SeedThread] = field(default_factory=list)
    notes: list[tuple[str, str, str]] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str, count: int = 1) -> None:
        """Note ``count`` items of the source not carried, for ``reason``."""
        if count:
            self.skipped[reason] += count

    def size(self) -> int:
        """How many records the seed writes (threads, messages, notes, states)."""
        messages = sum(len(t.messages) for t in self.threads)
        return len(self.threads) + messages + len(self.notes) + len(self.states)


def split_source(source: str) -> tuple[str, Path]:
    """``"voltagent:PATH"`` (or ``voltagent:file:PATH``, ``mastra:file:///abs/PATH``) as
    (system, path). A system memvault cannot read is a :class:`ValidationError`."""
    if not isinstance(source, str) or ":" not in source:
        raise ValidationError(f"the source is SYSTEM:PATH with SYSTEM one of {', '.join(SYSTEMS)}, "
                              f"got {shown(source)}")
    system, _, rest = source.partition(":")
    if system not in SYSTEMS:
        raise ValidationError(f"cannot import from {system!r}: the systems are {', '.join(SYSTEMS)}")
    return system, source_path(rest)


def source_path(url: str) -> Path:
    """The local file a LibSQL ``file:`` URL (or a plain path) names; query strings are dropped.
    Remote databases (``libsql://``, ``http(s)://``) are a :class:`ValidationError`."""
    if url.startswith("file:"):
        url = url[len("file:"):]
        if url.startswith("//"):
            url = url[2:]
        url = url.split("?", 1)[0]
    elif "://" in url:
        raise ValidationError(f"only local databases can be imported (a path or file:PATH), got {url!r}")
    if not url:
        raise ValidationError("the source path is empty")
    return Path(url)


@contextmanager
def open_source(path: Path, tables: tuple[str, ...], system: str) -> Iterator[sqlite3.Connection]:
    """``path`` opened read-only; a file that is missing, not SQLite, or lacks ``tables`` (it
    is not that system's database) is a :class:`StoreOpenError`."""
    if not path.is_file():
        raise StoreOpenError(f"{path}: no such file")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreOpenError(f"{path}: cannot be opened read-only: {exc}") from None
    try:
        try:
            names = table_names(connection)
        except sqlite3.DatabaseError as exc:
            raise StoreOpenError(f"{path}: not an SQLite database ({exc})") from None
        missing = [t for t in tables if t not in names]
        if missing:
            raise StoreOpenError(f"{path}: not a {system} memory database (no table {', '.join(missing)})")
        connection.row_factory = sqlite3.Row
        yield connection
    except sqlite3.Error as exc:
        raise StoreOpenError(f"{path}: reading the {system} database failed: {exc}") from None
    finally:
        connection.close()


def table_names(connection: sqlite3.Connection) -> set[str]:
    """The tables of the database."""
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def json_value(raw: Any) -> Any:
    """A JSON column as a value: text JSON, SQLite JSONB (a blob) or NULL (``None``). Anything
    else is a :class:`ValueError`."""
    if raw is None:
        return None
    if isinstance(raw, bytes):
        return jsonb.loads(raw)
    if isinstance(raw, str):
        return json.loads(raw)
    raise ValueError(f"not JSON: a {type(raw).__name__}")


def json_object(raw: Any) -> dict[str, Any]:
    """A JSON column that holds an object (NULL or an empty string: ``{}``)."""
    value = json_value(raw) if raw != "" else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def timestamp(raw: Any) -> datetime:
    """A stored time (ISO 8601 text, with or without a zone, or epoch milliseconds) in UTC."""
    if isinstance(raw, int | float):
        return datetime.fromtimestamp(raw / 1000, UTC)
    if isinstance(raw, str):
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T", 1))
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    raise ValueError(f"not a time: {raw!r}")


def title(raw: Any) -> str | None:
    """A source title (an empty one becomes no title)."""
    return raw if isinstance(raw, str) and raw.strip() else None


def add_thread(seed: Seed, threads: dict[str, SeedThread], raw: Mapping[str, Any], *, unreadable: str,
               extra: Mapping[str, Any] | None = None) -> None:
    """Add to ``threads`` (by id) the source thread whose columns ``raw`` gives as stored:
    ``id``, ``resource_id``, ``title`` (see :func:`title`), ``metadata`` (a JSON object column,
    :func:`json_object`), ``created_at`` and ``updated_at`` (:func:`timestamp`). The
    thread-scope working memory (a non-empty ``workingMemory`` string in the metadata) leaves the
    metadata and becomes the thread's note in ``seed``; ``extra`` keys are then added to the
    metadata. A thread that cannot be read is skipped in ``seed`` for the reason ``unreadable``."""
    try:
        metadata = json_object(raw["metadata"])
        note = metadata.pop("workingMemory", None)
        metadata.update(extra or {})
        thread = Thread.parse({"id": raw["id"], "resource_id": raw["resource_id"],
                               "title": title(raw["title"]), "metadata": metadata,
                               "created_at": timestamp(raw["created_at"]),
                               "updated_at": timestamp(raw["updated_at"])})
    except (ValueError, ValidationError):
        seed.skip(unreadable)
        return
    threads[thread.id] = SeedThread(thread)
    if isinstance(note, str) and note:
        seed.notes.append((thread.resource_id, note_key(thread.id), note))


async def write_seed(store: CompleteStore, seed: Seed, report: ImportReport,
                     progress: Progress | None = None) -> ImportReport:
    """Write ``seed`` into ``store`` (merging by id, see the module's docstring) and fill in
    ``report``. ``progress`` counts records (threads, messages, notes, states)."""
    total, done = seed.size(), 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    for item in seed.threads:
        thread = item.thread
        for start in range(0, len(item.messages), BATCH):
            batch = item.messages[start:start + BATCH]
            await store.save_messages(thread.resource_id, thread.id, batch)
            tick(len(batch))
        await store.restore_thread(thread)  # after its messages: saving bumps updated_at
        tick(1)
        report.counts["threads"] += 1
        report.counts["messages"] += len(item.messages)
    for resource_id, key, content in seed.notes:
        await store.update_working_memory(resource_id, key, _replace_with(content))
        report.counts["working_memories"] += 1
        tick(1)
    for state in seed.states:
        await store.restore_state(state)
        report.counts["states"] += 1
        tick(1)
    report.not_carried = dict(sorted(seed.skipped.items()))
    return report


def _replace_with(content: str) -> Callable[[str | None], str | None]:
    return lambda _current: content
