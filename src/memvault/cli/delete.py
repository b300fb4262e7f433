"""``memvault delete``: delete a resource's data, or one of its threads, after a confirmation."""

from __future__ import annotations

from typing import Annotated

import typer

from memvault.cli.common import AsJson, Db, Resource, emit, fail, no_thread, run
from memvault.memory import Memory
from memvault.transfer.copier import messages_of


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
                messages = sum([len(p) async for p in messages_of(memory.store, resource, thread)])
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
