"""Running the API with uvicorn: :func:`bind` a socket, then :func:`serve` an app over a store.

The socket is bound before serving, so the port is known (``port=0`` picks a free one) before
the first request, e.g. to print a URL. The default host is ``127.0.0.1``: only this machine.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import uvicorn

from memvault.memory import Memory
from memvault.server.app import create_app
from memvault.server.limits import DEFAULT_MAX_BODY_BYTES

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A TCP socket bound to ``host:port`` (IPv4 or IPv6) and listening, ready for :func:`serve`:
    a connection made before the server runs waits in the backlog instead of being refused.

    The socket names TCP (``IPPROTO_TCP``), so that asyncio sets ``TCP_NODELAY`` on every
    accepted connection (it does so only for sockets whose protocol is TCP), and the listening
    socket has ``TCP_NODELAY`` too (Linux hands it on to accepted sockets): without it, Nagle's
    algorithm holds a keep-alive answer back for a delayed ACK, about 40 ms per request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def port_of(sock: socket.socket) -> int:
    port: int = sock.getsockname()[1]
    return port


def config(app: Any, *, log_level: str = "info") -> uvicorn.Config:
    """The uvicorn settings the API is served with (``memvault bench api`` serves its floor app
    with the same ones)."""
    return uvicorn.Config(app, log_level=log_level, lifespan="off", server_header=False)


async def serve(
    url: str | None,
    sock: socket.socket,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    extra_keys: Iterable[str] = (),
    handoffs: Mapping[str, str] | None = None,
    log_level: str = "info",
    on_server: Callable[[uvicorn.Server], None] | None = None,
) -> None:
    """Open the store at ``url``, serve the API on ``sock`` until stopped (Ctrl-C, or
    ``server.should_exit = True`` on the server handed to ``on_server``), then close the store."""
    async with await Memory.open(url) as memory:
        app = create_app(memory, max_body_bytes=max_body_bytes, extra_keys=extra_keys,
                         handoffs=handoffs)
        server = uvicorn.Server(config(app, log_level=log_level))
        if on_server is not None:
            on_server(server)
        await server.serve(sockets=[sock])
