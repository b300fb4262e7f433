"""``memvault delete``: delete a resource's data, or one of its threads, after a confirmation."""

from __future__ import annotations

from typing import Annotated

import typer

from memvault.cli.common import AsJson, Db, Resource, emit, fail, no_thread, run
from memvault.memory import Memory


def delete(
    resource: Resource,
    thread: Annotated[str | None, typer.Option(
        "--thread", "-t", help="Delete only this thread (with its messages and summary).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Delete a resource's data, or with --thread one of its threads.

    Without --thread: every thread, message, summary, working memory and state of the resource.
    Asks for confirmation (on stderr) unless --yes; prints what was deleted."""
    what = f"thread {thread!r} of resource {resource!r}" if thread else f"everything of resource {resource!r}"

    async def work() -> dict[str, int]:
        async with await Memory.open(db) as memory:
            if thread is not None:
                if await memory.get_thread(thread_id=thread, resource_id=resource) is None:
                    fail(no_thread(thread, resource))
                messages = await memory.count_messages(thread_id=thread, resource_id=resource)
                if not yes:
                    typer.confirm(f"Delete {what} ({messages:,} messages)?", abort=True, err=True)
                await memory.delete_thread(thread_id=thread, resource_id=resource)
                return {"threads": 1, "messages": messages}
            if not yes:
                typer.confirm(f"Delete {what}?", abort=True, err=True)
            deleted = await memory.delete_resource(resource_id=resource)
            return {"threads": deleted.threads, "messages": deleted.messages,
                    "working_memories": deleted.working_memories, "states": deleted.states, **deleted.extra}

    counts = run(work())
    if as_json:
        emit({"resource_id": resource, "thread_id": thread, "deleted": counts})
    else:
        listed = ", ".join(f"{n:,} {kind.replace('_', ' ')}" for kind, n in counts.items())
        typer.echo(f"deleted {what}: {listed}")


def purge(db: Db = None, as_json: AsJson = False) -> None:
    """Make deleted data unrecoverable from the database files: the step a right-to-erasure
    request needs after `memvault delete`.

    PostgreSQL keeps deleted rows in its table files until they are vacuumed: purge runs
    VACUUM FULL on memvault's tables (it locks each table while it rewrites it). SQLite already
    overwrites deleted text and truncates its WAL at each deletion; purge adds a VACUUM and
    truncates the WAL again (in case another process was reading at the time). Prints what
    was done."""

    async def work() -> dict[str, object]:
        async with await Memory.open(db) as memory:
            return await memory.purge()

    done = run(work())
    if as_json:
        emit({"purged": done})
    else:
        typer.echo("purged: " + (", ".join(f"{k}={v}" for k, v in done.items()) or "nothing to do"))
