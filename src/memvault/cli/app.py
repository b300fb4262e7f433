"""The ``memvault`` command: ``memvault --help`` lists the commands."""

from __future__ import annotations

import os

import typer

from memvault.cli import bench, chat, copy, delete, demo, lookup, reindex, retention, threads, transfer
from memvault.cli import mcp as mcp_command
from memvault.cli import serve as serve_command
from memvault.errors import MemvaultError

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
    """The ``memvault`` command. A failure is one line on stderr and exit status 1, never a
    traceback: a memvault error says what went wrong; anything else is a bug, reported with its
    type (``MEMVAULT_DEBUG=1`` shows the traceback)."""
    try:
        app()
    except MemvaultError as error:
        message = str(error)
    except Exception as error:
        if os.environ.get("MEMVAULT_DEBUG"):
            raise
        message = (f"unexpected {type(error).__name__}: {error} (a bug in memvault: please report "
                   "it; MEMVAULT_DEBUG=1 shows the traceback)")
    else:
        return
    typer.echo(f"memvault: {message}", err=True)
    raise SystemExit(1)
