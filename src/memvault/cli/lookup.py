"""``memvault search``, ``memvault recall``, ``memvault working-memory show|set`` and
``memvault stats``: look into a store without writing code."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memvault.cli.common import AsJson, Db, Resource, emit, fail, no_thread, run
from memvault.memory import Memory
from memvault.model import Message
from memvault.options import MemoryOptions
from memvault.recall import RecallResult
from memvault.rules.working_memory import WorkingMemoryOptions
from memvault.transfer.stats import STAT_KINDS, store_stats

Thread = Annotated[str | None, typer.Option("--thread", "-t", help="Only this thread.")]


def _row(message: Message) -> str:
    return f"{message.created_at:%Y-%m-%d %H:%M}  {message.role:<9} {escape(message.text[:200])}"


async def _check_thread(memory: Memory, resource: str, thread: str | None) -> None:
    if thread is not None and await memory.get_thread(thread_id=thread, resource_id=resource) is None:
        fail(no_thread(thread, resource))


def search(
    query: Annotated[str, typer.Argument(help="Words to look for.")],
    resource: Resource,
    thread: Thread = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many hits.")] = 10,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Full-text search of the resource's messages (or one thread's), best first."""

    async def work() -> list[Any]:
        async with await Memory.open(db) as memory:
            await _check_thread(memory, resource, thread)
            return await memory.search_messages(resource_id=resource, query=query, thread_id=thread,
                                                limit=limit)

    hits = run(work())
    if as_json:
        emit([{"score": h.score, "message": h.message.model_dump(mode="json")} for h in hits])
        return
    table = Table(title=f"{len(hits)} hits for {escape(query)!r}")
    for column in ("score", "thread", "time", "role", "text"):
        table.add_column(column, justify="right" if column == "score" else "left")
    for h in hits:
        m = h.message
        table.add_row(f"{h.score:.3g}", escape(m.thread_id or ""), f"{m.created_at:%Y-%m-%d %H:%M}", m.role,
                      escape(m.text[:200]))
    Console().print(table)


def recall(
    query: Annotated[str, typer.Argument(help="What the agent is about to answer.")],
    resource: Resource,
    thread: Annotated[str | None, typer.Option(
        "--thread", "-t", help="The current thread: its recent window is merged in.")] = None,
    top_k: Annotated[int, typer.Option(min=1, help="At most this many hits.")] = 5,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """What recall would feed the model for QUERY: the hits, then the merged messages.

    Lexical only: the CLI opens the store without an embedder. Without --thread, the whole
    resource is searched."""

    async def work() -> RecallResult:
        async with await Memory.open(db) as memory:
            await _check_thread(memory, resource, thread)
            options = dataclasses.replace(memory.options.recall, top_k=top_k)
            if thread is None:
                options = dataclasses.replace(options, scope="resource")
            return await memory.recall(resource_id=resource, query=query, thread_id=thread, options=options)

    result = run(work())
    if as_json:
        emit(result.to_dict())
        return
    console = Console(highlight=False)
    for warning in result.warnings:
        console.print(f"[yellow]warning: {escape(warning)}[/yellow]")
    console.print(f"[bold]{len(result.hits)} hits[/bold]")
    for h in result.hits:
        console.print(f"  {h.score:.3f} {h.source:<7} {escape(h.thread_id)}  {_row(h.message)}")
    console.print(f"[bold]{len(result.messages)} messages fed to the model[/bold]")
    for m in result.messages:
        console.print(f"  {_row(m)}")


working_memory = typer.Typer(help="Show or set a resource's (or a thread's) working memory.",
                             no_args_is_help=True)


def _memory_options(thread: str | None) -> MemoryOptions:
    return MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread" if thread else "resource"))


WmThread = Annotated[str | None, typer.Option(
    "--thread", "-t", help="The thread-scoped working memory of this thread (default: the resource's).")]


@working_memory.command("show")
def working_memory_show(
    resource: Resource, thread: WmThread = None, db: Db = None, as_json: AsJson = False
) -> None:
    """Print the working memory (nothing, or null with --json, when it was never written)."""

    async def work() -> str | None:
        async with await Memory.open(db, options=_memory_options(thread)) as memory:
            await _check_thread(memory, resource, thread)
            return await memory.get_working_memory(resource_id=resource, thread_id=thread)

    content = run(work())
    if as_json:
        emit({"resource_id": resource, "thread_id": thread, "content": content})
    elif content is not None:
        typer.echo(content)


@working_memory.command("set")
def working_memory_set(
    content: Annotated[str, typer.Argument(help="The new content (text, or '-' to read stdin).")],
    resource: Resource,
    thread: WmThread = None,
    append: Annotated[bool, typer.Option(help="Merge into the current content instead of replacing it.")]
    = False,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Replace (or with --append, merge into) the working memory; prints the result."""
    if content == "-":
        content = typer.get_text_stream("stdin").read()

    async def work() -> str:
        async with await Memory.open(db, options=_memory_options(thread)) as memory:
            await _check_thread(memory, resource, thread)
            return await memory.update_working_memory(content, resource_id=resource, thread_id=thread,
                                                      mode="append" if append else "replace")

    result = run(work())
    if as_json:
        emit({"resource_id": resource, "thread_id": thread, "content": result})
    else:
        typer.echo(result)


def stats(
    resource: Annotated[str | None, typer.Option(
        "--resource", "-r", help="Only this resource (default: every resource).")] = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """How many threads, messages, summaries, working memories and states each resource has."""
    rows = run(_stats(db, resource))
    totals = {k: sum(r[k] for r in rows.values()) for k in STAT_KINDS}
    if as_json:
        emit({"resources": rows, "totals": {"resources": len(rows), **totals}})
        return
    table = Table(title=f"{len(rows):,} resources")
    table.add_column("resource")
    for kind in STAT_KINDS:
        table.add_column(kind.replace("_", " "), justify="right")
    for name, row in rows.items():
        table.add_row(escape(name), *(f"{row[k]:,}" for k in STAT_KINDS))
    table.add_row("[bold]total[/bold]", *(f"[bold]{totals[k]:,}[/bold]" for k in STAT_KINDS))
    Console().print(table)


async def _stats(url: str | None, only: str | None) -> dict[str, dict[str, int]]:
    async with await Memory.open(url) as memory:
        return await store_stats(memory.store, only)
