"""``memvault copy --from URL --to URL``: copy every record of one store into an empty one
(:mod:`memvault.transfer.copier`), with a progress bar, then verify counts and checksums on both sides.

Exit status: 0 when the copy is verified; 1 when the verification finds a difference (the
table names the kinds); 2 when nothing could be copied (a target that is not empty, an unknown
URL, an unreachable server), with the reason.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memvault.errors import MemvaultError
from memvault.memory import Memory
from memvault.transfer.copier import KINDS, CopyProgress, CopyReport, copy_store


def copy(
    source: Annotated[str, typer.Option("--from", help="URL of the store to copy from.")],
    target: Annotated[str, typer.Option("--to", help="URL of the empty store to copy into "
                                        "(a new SQLite file, or an unused PostgreSQL schema).")],
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the report as JSON (no progress bar).")] = False,
    include_keys: Annotated[bool, typer.Option(
        "--include-keys", help="Also copy the API key records (left out by default: they are "
        "not users' data).")] = False,
) -> None:
    """Copy every thread, message, working memory, state, summary and embedding into an empty store.

    Messages keep their ids and order; their seq numbers become 1..n per thread (the gaps left
    by deleted messages are not kept). The target must be empty: nothing is merged. The API key
records are copied only with --include-keys."""
    console = Console(stderr=True)
    try:
        report = asyncio.run(_copy(source, target, None if as_json else console, include_keys))
    except MemvaultError as exc:
        console.print(f"[red]memvault copy: {exc}[/red]", highlight=False)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps({
            "ok": report.ok, "copied": report.copied, "mismatches": report.mismatches,
            "source": {"counts": report.source.counts, "checksums": report.source.checksums},
            "target": {"counts": report.target.counts, "checksums": report.target.checksums},
        }))
    else:
        _print(Console(), report)
    if not report.ok:
        console.print(f"[red]verification failed: {', '.join(report.mismatches)} differ between the "
                      "source and the target[/red]", highlight=False)
        raise typer.Exit(1)


async def _copy(source: str, target: str, console: Console | None, include_keys: bool) -> CopyReport:
    async with await Memory.open(source) as src, await Memory.open(target) as dst:
        if console is None:
            return await copy_store(src, dst, include_keys=include_keys)
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[note]}"), console=console, transient=False,
        ) as bar:
            resources = bar.add_task("resources", total=None, note="")
            threads = bar.add_task("threads", total=None, note="")

            def show(p: CopyProgress) -> None:
                done = p.resource - 1 if p.phase in ("threads", "records") else p.resource
                bar.update(resources, total=p.resources, completed=done,
                           note=f"{p.resource_id or p.phase} ({p.messages:,} messages)")
                bar.update(threads, total=p.threads, completed=p.thread, note=p.phase)

            return await copy_store(src, dst, progress=show, include_keys=include_keys)


def _print(console: Console, report: CopyReport) -> None:
    """Counts per kind on both sides and the source's sha256 (first 16 hex digits; ``--json``
    has them whole); each kind that differs is then named with both checksums in full."""
    table = Table(title="verification" + (" passed" if report.ok else " FAILED"), box=box.SIMPLE_HEAD)
    for column in ("kind", "copied", "source", "target", "sha256", "check"):
        table.add_column(column, no_wrap=True, justify="right" if column in ("copied", "source", "target")
                         else "left")
    for kind in KINDS:
        table.add_row(
            kind, f"{report.copied[kind]:,}", f"{report.source.counts[kind]:,}",
            f"{report.target.counts[kind]:,}", report.source.checksums[kind][:16],
            "[red]DIFFERS[/red]" if kind in report.mismatches else "ok",
        )
    console.print(table)
    for kind in report.mismatches:
        console.print(f"{kind}: source sha256 {report.source.checksums[kind]}\n"
                      f"{' ' * len(kind)}  target sha256 {report.target.checksums[kind]}", highlight=False,
                      soft_wrap=True)
