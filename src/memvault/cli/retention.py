"""``memvault retention`` (set, clear and show the policies) and ``memvault sweep`` (erase the
expired messages now). See :mod:`memvault.retention` for what a policy does."""

from __future__ import annotations

from typing import Annotated

import typer

from memvault.cli.common import AsJson, Db, emit, run
from memvault.memory import Memory
from memvault.retention import format_max_age, parse_max_age

app = typer.Typer(help="How long messages are kept: the store's policy and each resource's.",
                  no_args_is_help=True)
ForResource = Annotated[str | None, typer.Option(
    "--resource", "-r", help="The resource (e.g. user) whose own policy this is (default: the store's).")]


def _scope(resource: str | None) -> str:
    return "the store" if resource is None else f"resource {resource!r}"


def _apply(age: str | None, resource: str | None, db: str | None, as_json: bool, said: str) -> None:
    """Set (``age``) or remove (``None``) a policy, then print what was done."""

    async def work() -> None:
        async with await Memory.open(db) as memory:
            await memory.set_retention(None if age is None else parse_max_age(age), resource_id=resource)

    run(work())
    if as_json:
        emit({"resource_id": resource, "max_age": age})
    else:
        typer.echo(f"{_scope(resource)} {said}")


@app.command("set")
def set_(
    age: Annotated[str, typer.Argument(help="The maximum age: a number and a unit, e.g. 90d, 12h, 2w.")],
    resource: ForResource = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Keep messages for AGE: messages older than that are never read again, and the sweep
    (background, or `memvault sweep`) erases them. A resource's policy replaces the store's."""
    _apply(age, resource, db, as_json, f"keeps messages for {age}")


@app.command("clear")
def clear(resource: ForResource = None, db: Db = None, as_json: AsJson = False) -> None:
    """Remove a policy: the store's (messages are then kept until deleted, unless their resource
    has its own) or a resource's (it then follows the store's)."""
    _apply(None, resource, db, as_json, "has no retention policy of its own now")


@app.command("show")
def show(db: Db = None, as_json: AsJson = False) -> None:
    """Every policy: the store's, then each resource's."""

    async def work() -> dict[str | None, str]:
        async with await Memory.open(db) as memory:
            return {key: format_max_age(age) for key, age in (await memory.retention_policies()).items()}

    policies = run(work())
    if as_json:
        emit({"store": policies.pop(None, None), "resources": policies})
        return
    if not policies:
        typer.echo("no retention policy: messages are kept until deleted")
    for key, age in policies.items():
        typer.echo(f"{_scope(key)}: {age}")


def sweep(resource: ForResource = None, db: Db = None, as_json: AsJson = False) -> None:
    """Erase the expired messages now (of every resource, or of one), with their derived data,
    and the threads they leave empty and idle. An open memvault (a server, an agent) also does
    this in the background, hourly by default."""

    async def work() -> dict[str, int]:
        async with await Memory.open(db) as memory:
            return await memory.sweep(resource_id=resource)

    swept = run(work())
    if as_json:
        emit({"resource_id": resource, "swept": swept})
    else:
        typer.echo(f"swept {swept['messages']:,} expired messages, {swept['threads']:,} threads left empty, "
                   f"in {swept['resources']:,} resources")
