"""What the inspection commands share: the ``--db``, ``--json`` and ``--resource`` options, JSON
output, and turning a library error into exit status 1 with a message on stderr."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from memvault.errors import MemvaultError

T = TypeVar("T")

Db = Annotated[str | None, typer.Option(
    "--db", help="Store URL (default: $MEMVAULT_DB or the file in the user's data folder).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")]
Resource = Annotated[str, typer.Option("--resource", "-r", help="The resource (e.g. user) id.")]


def fail(message: str) -> NoReturn:
    """Print ``message`` on stderr and exit with status 1."""
    typer.echo(f"memvault: {message}", err=True)
    raise typer.Exit(1)


def run(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work``; a library error (bad id, unreachable store...) becomes :func:`fail`."""
    try:
        return asyncio.run(work)
    except MemvaultError as exc:
        fail(str(exc))


def emit(value: Any) -> None:
    """Print ``value`` as one line of JSON on stdout."""
    typer.echo(json.dumps(value, ensure_ascii=False))


def no_thread(thread_id: str, resource_id: str) -> str:
    """The one message for a thread that is missing or belongs to another resource."""
    return f"resource {resource_id!r} has no thread {thread_id!r}"
