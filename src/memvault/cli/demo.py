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

from memvault.demo import run as script
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
    turns, titles = asyncio.run(_run(url))
    styles = {"user": "bold green", "tool": "yellow", "assistant": "bold blue"}
    for number, turn in enumerate(turns, 1):
        console.rule(f"turn {number} · thread [cyan]{turn.thread_id}[/] · {escape(titles[turn.thread_id])}")
        for kind, text in script.describe(turn):
            label = "tool call" if kind == "tool" else kind
            console.print(f"[{styles[kind]}]{label}[/]: {escape(str(text))}")
    last = turns[-1]
    console.rule("what the model was fed in the new thread")
    console.print(
        "Working memory and a message recalled from the first conversation reach the model"
        " in a thread it has never seen (OpenAI chat messages, assembled by a runtime turn):"
    )
    for item in last.model_input:
        body = item.get("content") or json.dumps(item.get("tool_calls"), indent=2)
        console.print(Panel(Text(str(body)), title=str(item["role"]), title_align="left"))
    found = ", ".join(f"{h.thread_id}#{h.message.seq} ({h.source})" for h in last.recalled) or "nothing"
    console.print(Panel(f"recall found: {found}", title="recall", expand=False))


async def _run(url: str) -> tuple[list[script.Turn], dict[str, str]]:
    async with await Memory.open(url, options=MemoryOptions(working_memory=script.PROFILE)) as memory:
        turns = await script.run(memory)
        titles = {}
        for turn in turns:
            thread = await memory.get_thread(thread_id=turn.thread_id, resource_id=script.RESOURCE)
            titles[turn.thread_id] = thread.title if thread is not None and thread.title else ""
        return turns, titles
