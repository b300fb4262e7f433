"""A TCP proxy in front of the test PostgreSQL server that loses the answer to a ``COMMIT``.

A real network fault, with nothing in memvault's code to help it: the proxy forwards a client's
``COMMIT`` to the server, waits for the server's answer (so the transaction is committed, or
not, for real), then closes both connections instead of passing the answer on. The client sees
its connection lost during ``COMMIT``: the one case where it cannot know whether its write was
applied. A pipelined ``COMMIT`` (sent with the statements before it) is caught too: the
answers to those statements pass, the ``COMMIT``'s does not. Arm it with
:meth:`CommitAnswerThief.arm`; the command tags it withheld (``COMMIT``, or ``ROLLBACK`` for a
transaction the server refused to commit) are in ``stolen``.

It speaks just enough of the PostgreSQL wire protocol to find message boundaries, so clients
must connect without TLS or GSS encryption (``sslmode=disable&gssencmode=disable``, which
:meth:`url` sets).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from postgres_server import with_params

COMMIT = b"Q" + (4 + len(b"COMMIT\x00")).to_bytes(4, "big") + b"COMMIT\x00"
"""A simple-protocol ``COMMIT``, as psycopg sends it when a transaction block ends."""
_ENDS = (b"COMMIT", b"ROLLBACK")


def _is_commit(message: bytes) -> bool:
    """A ``COMMIT``: the simple-protocol one, or the ``Parse`` of an unnamed one, as psycopg
    sends it in pipeline mode (after the transaction's statements, in the same round trip)."""
    return message == COMMIT or (message[:1] == b"P" and message[5:].startswith(b"\x00COMMIT\x00"))


@dataclass
class _Session:
    losing: bool = False


@dataclass
class CommitAnswerThief:
    host: str
    port: int
    armed: int = 0
    stolen: list[bytes] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def url(self, server_url: str, **params: str) -> str:
        """``server_url`` through this proxy, with ``params`` (e.g. ``schema``)."""
        assert self._server is not None
        parts = urlsplit(server_url)
        user = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        port = self._server.sockets[0].getsockname()[1]
        proxied = urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{port}"))
        return with_params(proxied, sslmode="disable", gssencmode="disable", **params)

    def arm(self, times: int = 1) -> None:
        """Lose the answers to the next ``times`` COMMITs (of any connection through the proxy)."""
        self.armed += times

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        server_in, server_out = await asyncio.open_connection(self.host, self.port)
        session = _Session()
        both = [asyncio.create_task(self._upstream(client_in, server_out, session)),
                asyncio.create_task(self._downstream(server_in, client_out, server_out, session))]
        self._tasks.update(both)
        try:
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in both:
                task.cancel()
            for writer in (client_out, server_out):
                writer.transport.abort()
            self._tasks.difference_update(both)

    async def _upstream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        session: _Session) -> None:
        """Client to server, message by message (the first, the startup message, has no type)."""
        length = int.from_bytes(await reader.readexactly(4), "big")
        writer.write(length.to_bytes(4, "big") + await reader.readexactly(length - 4))
        with contextlib.suppress(asyncio.IncompleteReadError):
            while True:
                head = await reader.readexactly(5)
                message = head + await reader.readexactly(int.from_bytes(head[1:], "big") - 4)
                if _is_commit(message) and self.armed:
                    self.armed -= 1
                    session.losing = True
                writer.write(message)
                await writer.drain()

    async def _downstream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          upstream: asyncio.StreamWriter, session: _Session) -> None:
        """Server to client; after an armed COMMIT, its answer ends both connections."""
        with contextlib.suppress(asyncio.IncompleteReadError):
            while True:
                head = await reader.readexactly(5)
                message = head + await reader.readexactly(int.from_bytes(head[1:], "big") - 4)
                tag = message[5:].rstrip(b"\x00")
                if session.losing and message[:1] == b"C" and tag in _ENDS:  # the COMMIT's answer
                    self.stolen.append(tag)
                    upstream.transport.abort()
                    writer.transport.abort()
                    return
                writer.write(message)
                await writer.drain()
