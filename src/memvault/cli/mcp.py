"""``memvault mcp``: serve one resource's memory to an MCP client (stdio or streamable HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

import typer

from memvault.cli.common import Db, Resource, fail
from memvault.errors import MemvaultError, MissingExtraError
from memvault.model import check_id


def mcp(
    resource: Resource,
    db: Db = None,
    transport: Annotated[str, typer.Option(
        help="stdio (the client starts this command) or http (streamable HTTP at /mcp).")] = "stdio",
    host: Annotated[str, typer.Option(help="http only: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="http only: the port.")] = 8766,
    embedder: Annotated[str | None, typer.Option(
        help="Also recall by meaning with this embedder, e.g. sentence-transformers/all-MiniLM-L6-v2 "
             "(default: none; recall works by words).")] = None,
) -> None:
    """Run an MCP server whose tools read and write RESOURCE's memory, and only RESOURCE's.

    With stdio (the default) stdout carries only the protocol and logs go to stderr; the server
    stops when the client closes stdin. With --transport http it serves streamable HTTP at
    http://HOST:PORT/mcp (127.0.0.1 by default) until Ctrl-C, to callers with a key of RESOURCE
    (`memvault keys create --resource RESOURCE`, sent as Authorization: Bearer <key>; the
    `server` extra too).
    """
    if transport not in ("stdio", "http"):
        fail(f"--transport must be stdio or http, got {transport!r}")
    try:
        resource_id = check_id(resource)
    except ValueError as error:
        fail(f"--resource: {error}")
    try:
        from memvault.mcp.server import serve
    except ImportError as error:
        fail(str(MissingExtraError("memvault mcp", "mcp", "mcp")) + f" ({error})")
    key_check = None
    if transport == "http":
        try:
            from memvault.server.keys import admits
        except MissingExtraError as error:
            fail(f"--transport http checks API keys: {error}")
        key_check = admits
        typer.echo(f"memvault: serving resource {resource_id!r} at http://{host}:{port}/mcp "
                   "(Ctrl-C stops)", err=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(resource_id, url=db, transport="http" if transport == "http" else "stdio",
                              host=host, port=port, embedder=embedder, key_check=key_check))
    except MemvaultError as error:
        fail(str(error))
