"""``memvault export`` and ``memvault import``: a store's records as JSON Lines.

One JSON object per line, each with a ``kind``:

- ``thread``: a thread (``Thread.model_dump``: id, resource_id, title, metadata, created_at,
  updated_at), followed by
- ``message``: its messages in thread order (``Message.model_dump``: id, role, parts, metadata,
  created_at, thread_id, resource_id, seq), then
- ``summary``: its summary, if any (``through_message_id`` names the last message it covers);
- after a resource's threads, ``working_memory`` (resource_id, key, content) and ``state``
  (``State.model_dump``) lines.

Import writes every record back exactly (times, versions, metadata included). Messages are
numbered ``seq`` 1..n in the target, as :mod:`memvault.transfer.copier` does: the gaps deletions left are
not kept, the order is. Embeddings are not exported: ``memvault reindex --embedder`` rebuilds
them. A thread the target already has is refused (nothing is written) unless ``--force``, which
deletes it first so that it becomes exactly the exported one; working memories and states in the
file overwrite the target's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memvault.cli.common import AsJson, Db, emit, fail, run
from memvault.memory import Memory
from memvault.model import Message, State, Summary, Thread
from memvault.stores.capabilities import CompleteStore, require_complete
from memvault.transfer.copier import BATCH, messages_of, threads_of

Advance = Callable[[int], None]
KINDS = ("thread", "message", "summary", "working_memory", "state")
_PLURAL = {"thread": "threads", "message": "messages", "summary": "summaries",
           "working_memory": "working memories", "state": "states"}


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {_PLURAL[kind]}" for kind, n in counts.items())


@contextmanager
def _progress(show: bool, label: str, total: int | None) -> Iterator[Advance]:
    if not show:
        yield lambda _n: None
        return
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _exporter(memory: Memory) -> CompleteStore:
    return require_complete(memory.store)


def export(
    resource: Annotated[str | None, typer.Option("--resource", "-r", help="Export this resource.")] = None,
    all_resources: Annotated[bool, typer.Option("--all", help="Export every resource.")] = False,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write to this file (default: stdout).")] = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Write a resource's (or every resource's) records as JSON Lines, for `memvault import`.

    Threads, messages, summaries, working memories and states, one JSON object a line with a
    "kind". Prints the counts per kind (on stderr when the lines go to stdout). Embeddings are
    not exported: `memvault reindex --embedder` rebuilds them."""
    if (resource is None) == (not all_resources):
        fail("give --resource R or --all (one of them)")
    if output is None:
        counts = run(_export(db, resource, typer.get_text_stream("stdout"), False))
    else:
        with output.open("w", encoding="utf-8") as sink:
            counts = run(_export(db, resource, sink, not as_json))
    if as_json and output is not None:
        emit(counts)
    elif not as_json:
        typer.echo(f"exported {_counted(counts)}", err=output is None)


async def _export(url: str | None, only: str | None, sink: IO[str], show: bool) -> dict[str, int]:
    counts = dict.fromkeys(KINDS, 0)

    def write(kind: str, record: dict[str, Any]) -> None:
        counts[kind] += 1
        sink.write(json.dumps({"kind": kind, **record}, ensure_ascii=False) + "\n")

    async with await Memory.open(url) as memory:
        store = exporter = _exporter(memory)
        resources = [only] if only is not None else await exporter.resource_ids()
        threads = {resource: await threads_of(store, resource) for resource in resources}
        with _progress(show, "threads", sum(len(t) for t in threads.values())) as advance:
            for resource in resources:
                for thread in threads[resource]:
                    write("thread", thread.model_dump(mode="json"))
                    async for page in messages_of(store, resource, thread.id):
                        for m in page:
                            write("message", m.model_dump(mode="json"))
                    summary = await store.get_summary(resource, thread.id)
                    if summary is not None:
                        write("summary", summary.model_dump(mode="json"))
                    advance(1)
                for key in await exporter.working_memory_keys(resource):
                    content = await store.get_working_memory(resource, key)
                    write("working_memory", {"resource_id": resource, "key": key, "content": content})
                for key in await exporter.state_keys(resource):
                    state = await store.get_state(resource, key)
                    if state is not None:
                        write("state", state.model_dump(mode="json"))
    return counts


def import_(
    source: Annotated[Path, typer.Argument(help="A JSON Lines file written by `memvault export`.",
                                           exists=True, dir_okay=False, readable=True)],
    force: Annotated[bool, typer.Option(
        help="Replace the threads the store already has (default: refuse and write nothing).")] = False,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Load a file written by `memvault export`, every record exactly as it was.

    Messages are renumbered 1..n per thread (their order, ids and times are kept). A thread the
    store already has is an error and nothing is written, unless --force, which replaces it;
    working memories and states in the file overwrite the store's."""
    records = _read(source)
    counts = run(_import(db, records, force, not as_json))
    if as_json:
        emit(counts)
    else:
        typer.echo(f"imported {_counted(counts)}")


def _read(source: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with source.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                fail(f"{source}:{number}: not JSON: {exc}")
            if not isinstance(record, dict) or record.get("kind") not in KINDS:
                fail(f"{source}:{number}: not a record of `memvault export` "
                     f"(kind is one of {', '.join(KINDS)})")
            records.append(record)
    return records


async def _import(url: str | None, records: list[dict[str, Any]], force: bool, show: bool) -> dict[str, int]:
    counts = dict.fromkeys(KINDS, 0)
    async with await Memory.open(url) as memory:
        store = exporter = _exporter(memory)
        threads = [Thread.parse(_fields(r)) for r in records if r["kind"] == "thread"]
        existing = [t for t in threads if await store.get_thread(t.resource_id, t.id) is not None]
        if existing and not force:
            names = ", ".join(f"{t.resource_id}/{t.id}" for t in existing[:5])
            fail(f"the store already has {len(existing):,} of these threads ({names}); "
                 "nothing was imported (--force replaces them)")
        for thread in existing:
            await memory.delete_thread(thread_id=thread.id, resource_id=thread.resource_id)
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
                await exporter.restore_thread(current)  # after its messages: saving bumps updated_at

        with _progress(show, "records", len(records)) as advance:
            for record in records:
                kind = record["kind"]
                if kind == "message":
                    if current is None:
                        fail("a message line comes before any thread line")
                    batch.append(Message.parse({**_fields(record), "seq": None,
                                                "thread_id": current.id, "resource_id": current.resource_id}))
                    if len(batch) >= BATCH:
                        await flush()
                elif kind == "thread":
                    await close_thread()
                    current, seqs = Thread.parse(_fields(record)), {}
                elif kind == "summary":
                    await close_thread()
                    summary = Summary.parse(_fields(record))
                    if summary.through_message_id not in seqs:
                        fail(f"the summary of thread {summary.thread_id!r} covers a message not in the file")
                    await exporter.restore_summary(
                        summary.model_copy(update={"through_seq": seqs[summary.through_message_id]}))
                elif kind == "working_memory":
                    await close_thread()
                    current = None
                    await store.update_working_memory(record["resource_id"], record["key"],
                                                      _replace_with(record["content"]))
                else:
                    await close_thread()
                    current = None
                    await exporter.restore_state(State.parse(_fields(record)))
                counts[kind] += 1
                advance(1)
            await close_thread()
    return counts


def _replace_with(content: str) -> Callable[[str | None], str]:
    return lambda _current: content


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "kind"}
