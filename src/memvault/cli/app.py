"""The ``memvault`` command: ``memvault --help`` lists the commands."""

from __future__ import annotations

import typer

from memvault.cli import bench, chat, copy, demo, reindex

app = typer.Typer(
    name="memvault",
    help="Memory for LLM agents: durable threads, history, working memory and search.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("chat")(chat.chat)
app.command("copy")(copy.copy)
app.command("demo")(demo.demo)
app.command("reindex")(reindex.reindex)
app.add_typer(bench.app, name="bench")


def main() -> None:
    app()
