"""``memvault export`` and ``memvault import``: a store's records as JSON Lines, and
``memvault import --from SYSTEM:PATH``: another system's memory database.

The format and its rules are :mod:`memvault.transfer.jsonl`'s; these commands only open the
store, show progress and print the counts (:meth:`memvault.Memory.export_records`,
:meth:`memvault.Memory.import_records`). A thread the target already has is refused (nothing is
written) unless ``--force``, which deletes it first so that it becomes exactly the exported one.
``--from`` (:meth:`memvault.Memory.import_from`) merges by the source's ids instead: running it
again changes nothing; it prints what it carried and what it could not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from memvault.cli.common import AsJson, Db, emit, fail, run
from memvault.errors import ThreadExistsError, ValidationError
from memvault.memory import Memory
from memvault.transfer.importer import read_source
from memvault.transfer.jsonl import Progress, parse_records
from memvault.transfer.seeds import ImportReport

_PLURAL = {"thread": "threads", "message": "messages", "summary": "summaries",
           "working_memory": "working memories", "state": "states"}


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {_PLURAL[kind]}" for kind, n in counts.items())


@contextmanager
def _progress(show: bool, label: str) -> Iterator[Progress | None]:
    """A progress bar on stderr fed with (done, total), or ``None`` when not shown."""
    if not show:
        yield None
        return
    with RichProgress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def export(
    resource: Annotated[str | None, typer.Option("--resource", "-r", help="Export this resource.")] = None,
    all_resources: Annotated[bool, typer.Option("--all", help="Export every resource.")] = False,
    include_keys: Annotated[bool, typer.Option(
        "--include-keys", help="With --all, also export the API key records (hashed; left out "
        "by default: they are not users' data).")] = False,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write to this file (default: stdout).")] = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Write a resource's (or every resource's) records as JSON Lines, for `memvault import`.

    Threads, messages, summaries, working memories and states, one JSON object a line with a
    "kind". Prints the counts per kind (on stderr when the lines go to stdout). Embeddings are
    not exported: `memvault reindex --embedder` rebuilds them; nor are the API key records, unless
--include-keys."""
    if (resource is None) == (not all_resources):
        fail("give --resource R or --all (one of them)")
    if output is None:
        counts = run(_export(db, resource, typer.get_text_stream("stdout"), False, include_keys))
    else:
        with output.open("w", encoding="utf-8") as sink:
            counts = run(_export(db, resource, sink, not as_json, include_keys))
    if as_json and output is not None:
        emit(counts)
    elif not as_json:
        typer.echo(f"exported {_counted(counts)}", err=output is None)


async def _export(
    url: str | None, only: str | None, sink: IO[str], show: bool, include_keys: bool
) -> dict[str, int]:
    async with await Memory.open(url) as memory:
        with _progress(show, "threads") as progress:
            return await memory.export_records(sink, resource_id=only, progress=progress,
                                               include_keys=include_keys)


def import_(
    source: Annotated[Path | None, typer.Argument(help="A JSON Lines file written by `memvault export`.",
                                                  exists=True, dir_okay=False, readable=True)] = None,
    from_: Annotated[str | None, typer.Option(
        "--from", metavar="SYSTEM:PATH", help="Import another system's memory database instead: "
        "voltagent:PATH or mastra:PATH (PATH may be a file: URL).")] = None,
    force: Annotated[bool, typer.Option(
        help="Replace the threads the store already has (default: refuse and write nothing).")] = False,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Load a file written by `memvault export`, every record exactly as it was, or (--from)
    another system's memory database.

    Messages are renumbered 1..n per thread (their order, ids and times are kept). A thread the
    store already has is an error and nothing is written, unless --force, which replaces it;
    working memories and states in the file overwrite the store's.

    --from voltagent:PATH or mastra:PATH reads a VoltAgent or Mastra LibSQL file (read-only):
    users or resources, conversations or threads, messages with their parts, working memory
    (both scopes) and workflow states. It keeps the source's ids and merges: running it again
    changes nothing. It prints the counts and what it could not carry."""
    if (source is None) == (from_ is None):
        fail("give a file written by `memvault export`, or --from SYSTEM:PATH (one of them)")
    if from_ is not None:
        if force:
            fail("--force is for files of `memvault export`; --from merges by id and needs none")
        report = run(_import_from(db, from_, not as_json))
        if as_json:
            emit(report.as_dict())
        else:
            typer.echo(_reported(report))
        return
    assert source is not None
    records = _read(source)
    counts = run(_import(db, records, force, not as_json))
    if as_json:
        emit(counts)
    else:
        typer.echo(f"imported {_counted(counts)}")


def _reported(report: ImportReport) -> str:
    counts = ", ".join(f"{n:,} {kind.replace('_', ' ')}" for kind, n in report.counts.items())
    lines = [f"imported from {report.system} {report.source}: {counts}"]
    if report.not_carried:
        lines.append("not carried:")
        lines += [f"  {n:,} {reason}" for reason, n in report.not_carried.items()]
    return "\n".join(lines)


async def _import_from(url: str | None, source: str, show: bool) -> ImportReport:
    # The source is read once here, before the target is opened, so that a bad source (missing,
    # not that system's database) leaves no new target file behind; import_from reads it again.
    await asyncio.to_thread(read_source, source)
    async with await Memory.open(url) as memory:
        with _progress(show, "records") as progress:
            return await memory.import_from(source, progress=progress)


def _read(source: Path) -> list[dict[str, Any]]:
    with source.open(encoding="utf-8") as lines:
        try:
            return parse_records(lines, str(source))
        except ValidationError as exc:
            fail(str(exc))


async def _import(url: str | None, records: list[dict[str, Any]], force: bool, show: bool) -> dict[str, int]:
    async with await Memory.open(url) as memory:
        with _progress(show, "records") as progress:
            try:
                return await memory.import_records(records, replace=force, progress=progress)
            except ThreadExistsError as exc:
                fail(f"{exc} (--force replaces them)")
