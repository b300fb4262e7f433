"""A store's records as JSON Lines: what ``memvault export`` writes and ``memvault import`` reads.

One JSON object per line, each with a ``kind``:

- ``thread``: a thread (``Thread.model_dump``: id, resource_id, title, metadata, created_at,
  updated_at), followed by
- ``message``: its messages in thread order (``Message.model_dump``: id, role, parts, metadata,
  created_at, thread_id, resource_id, seq), then
- ``summary``: its summary, if any (``through_message_id`` names the last message it covers);
- after a resource's threads, ``working_memory`` (resource_id, key, content) and ``state``
  (``State.model_dump``) lines.

Import writes every record back exactly (times, versions, metadata included); parts a newer
memvault wrote (:class:`~memvault.model.UnknownPart`) go out and come back byte-identical. A
placeholder for a row that could not be read (:mod:`memvault.stores.decode`) is not exported
(a warning names it), and import refuses one. Messages are
numbered ``seq`` 1..n in the target, as :mod:`memvault.transfer.copier` does: the gaps deletions
left are not kept, the order is. Embeddings are not exported: ``memvault reindex --embedder``
rebuilds them. :meth:`memvault.Memory.export_records` and :meth:`memvault.Memory.import_records`
are the public calls; the functions here work on a store with every capability.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

from memvault.errors import ValidationError
from memvault.model import Message, State, Summary, Thread, valid_id
from memvault.stores.capabilities import CompleteStore
from memvault.transfer.copier import BATCH, messages_of, readable, threads_of
from memvault.transfer.reserved import KEYS_RESOURCE

KINDS = ("thread", "message", "summary", "working_memory", "state")
"""The kinds of record, in the order a resource's records are written."""

Progress = Callable[[int, int], None]
"""Called with (done, total) as records (or threads, on export) are handled."""

Record = dict[str, Any]


def parse_records(lines: Iterable[str], source: str = "<input>") -> list[Record]:
    """The records of an export, one JSON object a line (blank lines skipped). A line that is not
    a record is a :class:`ValidationError` naming ``source`` and the line number."""
    records: list[Record] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{source}:{number}: not JSON: {exc}") from None
        if not isinstance(record, dict) or record.get("kind") not in KINDS:
            raise ValidationError(f"{source}:{number}: not a record of `memvault export` "
                                  f"(kind is one of {', '.join(KINDS)})")
        records.append(record)
    return records


def threads_of_records(records: Sequence[Record]) -> list[Thread]:
    """The threads the records hold (checked: a bad thread record is a ValidationError)."""
    return [Thread.parse(_fields(r)) for r in records if r["kind"] == "thread"]


async def export_records(
    store: CompleteStore, sink: IO[str], *, only: str | None = None, progress: Progress | None = None,
    include_keys: bool = False,
) -> dict[str, int]:
    """Write the records of resource ``only`` (``None``: every resource) to ``sink``; returns
    how many of each kind. ``progress`` counts threads. Every resource means every users'
    resource: the API key records (:data:`~memvault.transfer.reserved.KEYS_RESOURCE`) only with
    ``include_keys``."""
    counts = dict.fromkeys(KINDS, 0)

    def write(kind: str, record: Record) -> None:
        counts[kind] += 1
        sink.write(json.dumps({"kind": kind, **record}, ensure_ascii=False) + "\n")

    resources = [only] if only is not None else [
        r for r in await store.resource_ids() if include_keys or r != KEYS_RESOURCE
    ]
    threads = {resource: await threads_of(store, resource) for resource in resources}
    total, done = sum(len(t) for t in threads.values()), 0
    for resource in resources:
        for thread in threads[resource]:
            write("thread", thread.model_dump(mode="json"))
            async for page in messages_of(store, resource, thread.id):
                for m in readable(page):
                    write("message", m.model_dump(mode="json"))
            summary = await store.get_summary(resource, thread.id)
            if summary is not None:
                write("summary", summary.model_dump(mode="json"))
            done += 1
            if progress is not None:
                progress(done, total)
        for key in await store.working_memory_keys(resource):
            content = await store.get_working_memory(resource, key)
            write("working_memory", {"resource_id": resource, "key": key, "content": content})
        for key in await store.state_keys(resource):
            state = await store.get_state(resource, key)
            if state is not None:
                write("state", state.model_dump(mode="json"))
    return counts


async def import_records(
    store: CompleteStore, records: Sequence[Record], *, progress: Progress | None = None
) -> dict[str, int]:
    """Write ``records`` (from :func:`parse_records`) into ``store``, each exactly as it was;
    the threads must not exist yet (:meth:`memvault.Memory.import_records` checks). Every record
    is checked before the first write: a bad one is a :class:`ValidationError` and nothing is
    written. Returns how many of each kind."""
    check_records(records)
    counts = dict.fromkeys(KINDS, 0)
    current: Thread | None = None
    batch: list[Message] = []
    seqs: dict[str, int] = {}

    async def flush() -> None:
        if current is not None and batch:
            for saved in await store.save_messages(current.resource_id, current.id, batch):
                assert saved.seq is not None
                seqs[saved.id] = saved.seq
        batch.clear()

    async def close_thread() -> None:
        await flush()
        if current is not None:
            await store.restore_thread(current)  # after its messages: saving bumps updated_at

    for done, record in enumerate(records, 1):
        kind = record["kind"]
        if kind == "message":
            assert current is not None  # checked
            batch.append(_message(record, current))
            if len(batch) >= BATCH:
                await flush()
        elif kind == "thread":
            await close_thread()
            current, seqs = Thread.parse(_fields(record)), {}
        elif kind == "summary":
            await close_thread()
            summary = Summary.parse(_fields(record))
            through = seqs[summary.through_message_id]  # checked: the file has the message
            await store.restore_summary(summary.model_copy(update={"through_seq": through}))
        elif kind == "working_memory":
            await close_thread()
            current = None
            await store.update_working_memory(record["resource_id"], record["key"],
                                              _replace_with(record.get("content")))
        else:
            await close_thread()
            current = None
            await store.restore_state(State.parse(_fields(record)))
        counts[kind] += 1
        if progress is not None:
            progress(done, len(records))
    await close_thread()
    return counts


def _message(record: Record, thread: Thread) -> Message:
    """A message record of ``thread``: parts a newer memvault wrote are kept verbatim
    (:class:`~memvault.model.UnknownPart`); a placeholder for an unreadable row is refused."""
    message = Message.parse({**_fields(record), "seq": None, "thread_id": thread.id,
                             "resource_id": thread.resource_id}, unknown_parts=True)
    if message.unreadable is not None:
        raise ValidationError(f"message {message.id!r} is a placeholder for a row that could not be "
                              "read (an 'unreadable' part); leave it out of the file")
    return message


def check_records(records: Sequence[Record]) -> None:
    """Parse every record as :func:`import_records` will, without writing: a
    :class:`ValidationError` names the first bad one (by its position among the records)."""
    thread: Thread | None = None
    messages: set[str] = set()
    for number, record in enumerate(records, 1):
        kind = record.get("kind")
        try:
            if kind == "thread":
                thread, messages = Thread.parse(_fields(record)), set()
            elif kind == "message":
                if thread is None:
                    raise ValidationError("a message comes before any thread")
                messages.add(_message(record, thread).id)
            elif kind == "summary":
                summary = Summary.parse(_fields(record))
                if thread is None or summary.through_message_id not in messages:
                    raise ValidationError(f"the summary of thread {summary.thread_id!r} covers a message "
                                          "not in the file")
            elif kind == "working_memory":
                thread = None
                valid_id(record.get("resource_id"), "resource_id")
                valid_id(record.get("key"), "key")
                if not isinstance(record.get("content"), str | None):
                    raise ValidationError("a working memory's content is a string or null")
            elif kind == "state":
                thread = None
                State.parse(_fields(record))
            else:
                raise ValidationError(f"kind is one of {', '.join(KINDS)}")
        except ValidationError as exc:
            raise ValidationError(f"record {number} ({kind}): {exc}") from None


def outside_threads(records: Sequence[Record]) -> list[tuple[str, str]]:
    """The (resource_id, thread_id) pairs that state records name but whose thread is not in the
    records: the target store must already have them (checked records only)."""
    inside = {(t.resource_id, t.id) for t in threads_of_records(records)}
    named = [(state.resource_id, state.thread_id) for state in
             (State.parse(_fields(r)) for r in records if r["kind"] == "state")
             if state.thread_id is not None]
    return [pair for pair in dict.fromkeys(named) if pair not in inside]


def _replace_with(content: str | None) -> Callable[[str | None], str | None]:
    return lambda _current: content


def _fields(record: Record) -> Record:
    return {k: v for k, v in record.items() if k != "kind"}
