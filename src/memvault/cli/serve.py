"""``memvault serve`` (the HTTP API), ``memvault keys create|list|revoke`` (its API keys) and
``memvault studio`` (the Studio page with a key that lives as long as the process).

These need the ``server`` extra (FastAPI and uvicorn), imported when a command runs."""

from __future__ import annotations

import json
import socket
from typing import TYPE_CHECKING, Annotated

import typer

from memvault.cli.common import AsJson, Db, emit, fail, run
from memvault.errors import MissingExtraError
from memvault.memory import Memory

if TYPE_CHECKING:
    from memvault.server.keys import ApiKey

Host = Annotated[str, typer.Option(help="The address to listen on (127.0.0.1: this machine only).")]
MaxBody = Annotated[int, typer.Option("--max-body", min=1, help="Refuse bodies over this many bytes.")]
Name = Annotated[str | None, typer.Option("--name", help="A label for the key, shown in listings.")]


def serve(
    db: Db = None,
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port (0: any free one).")] = 8765,
    max_body: MaxBody = 1_048_576,
) -> None:
    """Serve the HTTP API (OpenAPI document at /openapi.json); callers need an API key
    (`memvault keys create`). Stop with Ctrl-C."""
    _need_server()
    from memvault.server.run import port_of
    from memvault.server.run import serve as serve_api

    sock = _bind(host, port)
    typer.echo(f"memvault API on http://{host}:{port_of(sock)}/v1 (OpenAPI: /openapi.json)", err=True)
    run(serve_api(db, sock, max_body_bytes=max_body))


def studio(
    db: Db = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port (0: any free one).")] = 8767,
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open the page in a browser.")]
    = False,
) -> None:
    """Serve the Studio page and the API on 127.0.0.1 with a new admin key that lives only as
    long as this process, and print the page's URL (the key is in the URL's #fragment, which the
    browser never sends to the server). --open opens the page with a one-time token instead, which
    the page trades for the key on loopback: the key never appears on a command line. Stop with
    Ctrl-C."""
    _need_server()
    from memvault.server.keys import new_secret
    from memvault.server.run import port_of
    from memvault.server.run import serve as serve_api

    sock = _bind("127.0.0.1", port)
    secret = new_secret()
    url = f"http://127.0.0.1:{port_of(sock)}/studio/#key={secret}"
    typer.echo(url)
    handoffs: dict[str, str] = {}
    if open_browser:
        import secrets
        import webbrowser

        token = secrets.token_urlsafe(32)
        handoffs[token] = secret
        webbrowser.open(f"http://127.0.0.1:{port_of(sock)}/studio/#handoff={token}")
    run(serve_api(db, sock, extra_keys=[secret], handoffs=handoffs))


def _need_server() -> None:
    """Exit with the install hint (not a traceback) when the ``server`` extra is missing."""
    try:
        import memvault.server  # noqa: F401
    except MissingExtraError as exc:
        fail(str(exc))


def _bind(host: str, port: int) -> socket.socket:
    """The bound socket, or exit with a message (port in use, unknown address)."""
    from memvault.server.run import bind

    try:
        return bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


keys = typer.Typer(help="Create, list and revoke the HTTP API's keys (stored hashed in the store).",
                   no_args_is_help=True, callback=_need_server)


@keys.command("create")
def keys_create(
    resource: Annotated[str | None, typer.Option(
        "--resource", "-r", help="The resource the key acts on.")] = None,
    admin: Annotated[bool, typer.Option("--admin", help="An admin key: any resource, named per request.")]
    = False,
    name: Name = None,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Create a key for one resource (--resource) or an admin key (--admin); the key is printed
    once and cannot be shown again."""
    if (resource is None) == (not admin):
        fail("give --resource RESOURCE or --admin (one of them)")
    from memvault.server.keys import Keyring

    async def work() -> tuple[str, dict[str, object]]:
        async with await Memory.open(db) as memory:
            secret, key = await Keyring(memory).create(resource_id=resource, name=name)
            return secret, _describe(key)

    secret, info = run(work())
    if as_json:
        emit({"key": secret, **info})
    else:
        typer.echo(secret)
        typer.echo(f"key id {info['key_id']}; keep the key now: it is stored hashed and cannot be shown "
                   "again", err=True)


@keys.command("list")
def keys_list(db: Db = None, as_json: AsJson = False) -> None:
    """The keys: id, name, resource (admin: none) and creation time; never the key itself."""
    from memvault.server.keys import Keyring

    async def work() -> list[dict[str, object]]:
        async with await Memory.open(db) as memory:
            return [_describe(key) for key in await Keyring(memory).list()]

    rows = run(work())
    if as_json:
        emit({"keys": rows})
        return
    for row in rows:
        owner = "admin" if row["admin"] else f"resource {json.dumps(row['resource_id'])}"
        typer.echo(f"{row['key_id']}  {row['created_at']}  {owner}  {row['name'] or ''}".rstrip())


@keys.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (see `memvault keys list`).")], db: Db = None
) -> None:
    """Revoke a key: requests with it are refused (401) from now on."""
    from memvault.server.keys import Keyring

    async def work() -> bool:
        async with await Memory.open(db) as memory:
            return await Keyring(memory).revoke(key_id)

    if not run(work()):
        fail(f"no key with id {key_id!r}")
    typer.echo(f"revoked {key_id}", err=True)


def _describe(key: ApiKey) -> dict[str, object]:
    return {"key_id": key.key_id, "name": key.name, "resource_id": key.resource_id, "admin": key.admin,
            "created_at": key.created_at}

