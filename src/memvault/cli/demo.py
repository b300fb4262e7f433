"""``memvault demo``: the main job on the embedded default (a SQLite file), offline."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from memvault import demo as script
from memvault.memory import Memory
from memvault.options import MemoryOptions


def demo(
    db: Annotated[
        str | None,
        typer.Option(help="Store URL. Default: a new SQLite file in a temporary folder."),
    ] = None,
) -> None:
    """Teach memvault facts in one conversation, get them back in another (offline, scripted model)."""
    url = db or f"sqlite:///{Path(tempfile.mkdtemp(prefix='memvault-demo-')) / 'demo.db'}"
    console = Console()
    console.print(f"[bold]memvault demo[/] · store [cyan]{url}[/] · resource [cyan]{script.RESOURCE}[/]")
    turns = asyncio.run(_run(url))
    for number, turn in enumerate(turns, 1):
        said = [m for m in turn.saved if m.role != "user"]
        console.rule(f"turn {number} · thread [cyan]{turn.thread_id}[/]")
        console.print(f"[bold green]user[/]: {escape(turn.saved[0].text)}")
        for message in said:
            for call in message.tool_calls:
                console.print(f"[yellow]tool call[/] {escape(call.name)}({escape(json.dumps(call.args))})")
            if message.text:
                console.print(f"[bold blue]assistant[/]: {escape(message.text)}")
    last = turns[-1]
    console.rule("what the model was fed in the new thread")
    console.print(
        "Working memory and a message found by search in the first conversation reach the model"
        " in a thread it has never seen (OpenAI chat messages):"
    )
    for item in last.model_input:
        body = item.get("content") or json.dumps(item.get("tool_calls"), indent=2)
        console.print(Panel(Text(str(body)), title=item["role"], title_align="left"))
    found = ", ".join(f"{h.message.thread_id}#{h.message.seq}" for h in last.recalled) or "nothing"
    console.print(Panel(f"search found: {found}", title="recall", expand=False))


async def _run(url: str) -> list[script.Turn]:
    async with await Memory.open(url, options=MemoryOptions(working_memory=script.PROFILE)) as memory:
        return await script.run(memory)
