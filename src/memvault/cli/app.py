"""The ``memvault`` command: ``memvault --help`` lists the commands."""

from __future__ import annotations

import typer

from memvault.cli import bench, chat, copy, delete, demo, lookup, reindex, retention, threads, transfer
from memvault.cli import mcp as mcp_command
from memvault.cli import serve as serve_command

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
app.add_typer(threads.app, name="threads")
app.command("search")(lookup.search)
app.command("recall")(lookup.recall)
app.add_typer(lookup.working_memory, name="working-memory")
app.command("stats")(lookup.stats)
app.command("export")(transfer.export)
app.command("import")(transfer.import_)
app.command("delete")(delete.delete)
app.command("purge")(delete.purge)
app.add_typer(retention.app, name="retention")
app.command("sweep")(retention.sweep)
app.command("mcp")(mcp_command.mcp)
app.command("serve")(serve_command.serve)
app.add_typer(serve_command.keys, name="keys")
app.command("studio")(serve_command.studio)


def main() -> None:
    app()
