"""``memvault threads list`` and ``memvault threads show``: a resource's threads, and one thread's
messages with each tool call shown right above its result."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memvault.cli.common import AsJson, Db, Resource, emit, fail, no_thread, run
from memvault.memory import Memory
from memvault.model import Message, ReasoningPart, TextPart, Thread, ToolCallPart, ToolResultPart
from memvault.transfer.copier import messages_of

app = typer.Typer(help="List a resource's threads, or show one thread's messages.", no_args_is_help=True)


@app.command("list")
def list_threads(
    resource: Resource,
    limit: Annotated[int, typer.Option(min=1, help="At most this many threads.")] = 20,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """The resource's threads, most recently active first, with their message counts."""
    rows = run(_list(db, resource, limit))
    if as_json:
        emit([{**t.model_dump(mode="json"), "messages": n} for t, n in rows])
        return
    table = Table(title=f"threads of {resource}")
    for column in ("id", "title", "messages", "updated"):
        table.add_column(column, justify="right" if column == "messages" else "left")
    for thread, count in rows:
        table.add_row(escape(thread.id), escape(thread.title or ""), f"{count:,}",
                      thread.updated_at.strftime("%Y-%m-%d %H:%M"))
    Console().print(table)


async def _list(url: str | None, resource: str, limit: int) -> list[tuple[Thread, int]]:
    async with await Memory.open(url) as memory:
        threads: list[Thread] = []
        cursor: str | None = None
        while len(threads) < limit:
            page = await memory.list_threads(resource_id=resource, limit=limit - len(threads), cursor=cursor)
            threads.extend(page.threads)
            if (cursor := page.next_cursor) is None:
                break
        return [(t, await _count(memory, resource, t.id)) for t in threads]


async def _count(memory: Memory, resource: str, thread_id: str) -> int:
    return sum([len(page) async for page in messages_of(memory.store, resource, thread_id)])


@app.command("show")
def show(
    thread: Annotated[str, typer.Argument(help="The thread id.")],
    resource: Resource,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Every message of a thread in order, with its role, time and text.

    A tool call is shown with its result right under it; reasoning is dimmed and cut to one line.
    --json prints the thread and its messages as stored."""
    found, messages = run(_show(db, resource, thread))
    if as_json:
        emit({"thread": found.model_dump(mode="json"),
              "messages": [m.model_dump(mode="json") for m in messages]})
        return
    console = Console(highlight=False)
    console.print(f"[bold]{escape(found.title or found.id)}[/bold]  ({escape(found.id)}, "
                  f"{len(messages):,} messages)")
    results = {r.tool_call_id: r for m in messages for r in m.tool_results}
    calls = {c.tool_call_id for m in messages for c in m.tool_calls}
    for message in messages:
        lines = _lines(message, results, calls)
        if not lines:  # a message of tool results, each already shown under its call
            continue
        console.print(f"\n[bold cyan]{message.role}[/bold cyan] [dim]{message.created_at:%Y-%m-%d %H:%M:%S}"
                      f"  {escape(message.id)}[/dim]")
        for line in lines:
            console.print(line, soft_wrap=True)


def _lines(message: Message, results: dict[str, ToolResultPart], calls: set[str]) -> list[str]:
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(escape(part.text))
        elif isinstance(part, ReasoningPart):
            first = part.text.strip().splitlines()[0] if part.text.strip() else ""
            lines.append(f"[dim italic]  (reasoning, {len(part.text):,} chars) "
                         f"{escape(first[:100])}[/dim italic]")
        elif isinstance(part, ToolCallPart):
            lines.append(f"[yellow]  → {escape(part.name)}({escape(_compact(part.args))})[/yellow]")
            result = results.get(part.tool_call_id)
            lines.append(_result(result) if result is not None else "[dim]    ← (no result)[/dim]")
        elif isinstance(part, ToolResultPart):
            if part.tool_call_id not in calls:  # its call is not in the thread
                lines.append(_result(part))
        else:
            lines.append(f"[dim]  {escape(f'[{part.type}]')}[/dim]")
    return lines


def _result(part: ToolResultPart) -> str:
    colour = "red" if part.is_error else "green"
    return f"[{colour}]    ← {escape(_compact(part.output))}[/{colour}]"


def _compact(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "…"


async def _show(url: str | None, resource: str, thread_id: str) -> tuple[Thread, list[Message]]:
    async with await Memory.open(url) as memory:
        found = await memory.get_thread(thread_id=thread_id, resource_id=resource)
        if found is None:
            fail(no_thread(thread_id, resource))
        messages = [m async for page in messages_of(memory.store, resource, thread_id) for m in page]
        return found, messages
