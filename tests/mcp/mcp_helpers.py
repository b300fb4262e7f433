"""Helpers of the MCP server tests: start ``memvault mcp`` as a real stdio subprocess and
connect the SDK's own client to it; read tool results.

(No ``__init__.py`` in this folder on purpose: a package named ``mcp`` under ``tests/`` would
shadow the SDK.) The client is an async context manager used inside each test, not a fixture:
the SDK's anyio task groups must be entered and left by the same task."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

BOB_SECRET = "bob's secret plans for the zeppelin"


def server_args(resource: str, db_url: str, *extra: str) -> list[str]:
    return ["-m", "memvault", "mcp", "--resource", resource, "--db", db_url, *extra]


@asynccontextmanager
async def stdio_session(db_url: str, resource: str = "ada", errlog: Path | None = None,
                        ) -> AsyncIterator[ClientSession]:
    """``memvault mcp --resource RESOURCE --db DB_URL`` as a subprocess, with an initialised
    ``ClientSession`` over its stdin/stdout (the server's stderr goes to ``errlog``)."""
    params = StdioServerParameters(command=sys.executable, args=server_args(resource, db_url))
    with (errlog or Path(db_url.removeprefix("sqlite:///")).with_suffix(".stderr")).open("w") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def structured(result: CallToolResult) -> Any:
    """The structured result of a successful call (fails the test on an error result)."""
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return result.structured_content


def text(result: CallToolResult) -> str:
    """The text content of a result (the error message of an error result)."""
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def dump(result: CallToolResult) -> str:
    """Everything a result says, as one string (to check what it must not contain)."""
    return text(result) + json.dumps(result.structured_content)
