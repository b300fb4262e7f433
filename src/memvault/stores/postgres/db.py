"""Running the PostgreSQL store's transactions on a psycopg connection pool.

Pool connections are in autocommit mode with ``search_path`` set to the store's schema. A
*write* runs its body in one transaction; a *read* runs its statements as they come (each sees
the latest committed data). A transaction that meets a deadlock or a serialization failure is
rolled back and run again from the start (a few times), so those never reach the caller; a
refused connection, or one lost too often (below), raises :class:`~memvault.errors.StoreError`
with the server's reason.

A connection lost during a call (a restart, a failover, an idle reaper, ``pg_terminate_backend``,
a network fault) is discarded and the call goes on with another connection, transparently:

- a read is run again (reads are idempotent);
- a write is run again from the start when its connection was lost before its ``COMMIT`` was
  sent: the server rolled the transaction back, nothing of it was written;
- a write whose connection was lost *during* ``COMMIT`` may have been committed (the answer was
  lost, not necessarily the commit). Only a write that applies once however often it runs
  (:meth:`Database.write_idempotent`: a save by message id, a write carrying an operation id,
  see :mod:`~.ops`) is run again; any other raises :class:`~memvault.errors.StoreError` saying
  that it may or may not have been applied. It is never partly written.

A write can also be *pipelined* (:meth:`Database.write_pipelined`, a save of messages):
``BEGIN``, its statements and ``COMMIT`` go to the server in one network round trip instead of
one each; it is idempotent, so a connection lost during that round trip runs it again.

A call that meets lost connections more than ``max_size + 1`` times in a row raises StoreError.
The connections say ``application_name=memvault`` unless the URL names another.

A call that gets no pooled connection within ``PROBE_AFTER`` seconds connects to the server
directly: when that fails (the server is stopped or unreachable) the call raises StoreError with
the server's reason at once, rather than waiting out the pool's whole ``timeout``; when it
succeeds the pool is only busy, and the call goes on waiting. Calls that wait at the same time
share one probe (see ``Database._check_server``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar

import psycopg
from psycopg import AsyncConnection, AsyncCursor, errors, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memvault.errors import MemvaultError, StoreError

Conn: TypeAlias = AsyncConnection[TupleRow]
Cursor: TypeAlias = AsyncCursor[TupleRow]
"""An executed statement's cursor on a :data:`Conn`."""
P = ParamSpec("P")
T = TypeVar("T")
RETRIES = 8
"""Times a transaction is run again after a deadlock or serialization failure."""
Fetch: TypeAlias = Callable[[], Awaitable[T]]
"""What a :meth:`Database.write_pipelined` body returns: reads its results after the round trip."""
PROBE_AFTER = 2.0
"""Seconds to wait for a pooled connection before checking that the server can be reached."""


class Database:
    """A pool of connections to one schema. ``where`` names the server for error messages."""

    def __init__(
        self, conninfo: str, schema: str, *, where: str, min_size: int = 1, max_size: int = 10,
        timeout: float = 30.0,
    ) -> None:
        self.schema = schema
        self.where = where
        self.conninfo = conninfo
        kwargs: dict[str, object] = {"autocommit": True}
        if "application_name" not in conninfo_to_dict(conninfo):
            kwargs["application_name"] = "memvault"
        self.pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            conninfo, kwargs=kwargs, min_size=min_size, max_size=max_size,
            timeout=timeout, configure=self._configure, open=False, name=f"memvault:{schema}",
        )
        self._probing = asyncio.Lock()
        self._probed_at = -PROBE_AFTER

    async def _configure(self, conn: Conn) -> None:
        await set_search_path(conn, self.schema)

    async def open(self, wait_seconds: float) -> None:
        """Open the pool, waiting until its ``min_size`` connections are made."""
        try:
            await self.pool.open(wait=True, timeout=wait_seconds)
        except PoolTimeout as exc:
            await self.pool.close()  # else its workers would go on trying to connect
            raise StoreError(
                f"could not open connections to PostgreSQL at {self.where}: {reason(exc)}"
            ) from exc

    async def close(self) -> None:
        await self.pool.close()

    async def read(self, body: Callable[Concatenate[Conn, P], Awaitable[T]], *args: P.args,
                   **kwargs: P.kwargs) -> T:
        """Run ``body(conn, ...)`` on a pooled connection, outside an explicit transaction;
        again on another connection when this one turns out to have been closed by the server."""
        for _ in range(self._stale_retries()):
            conn: Conn | None = None
            try:
                async with self._connection() as conn:
                    return await body(conn, *args, **kwargs)
            except MemvaultError:
                raise
            except psycopg.Error as exc:  # a lost connection, a pool timeout, ...
                if conn is None or not conn.broken:
                    raise self.failure(exc) from exc
        raise self.failure(psycopg.OperationalError("every pooled connection was closed by the server"))

    async def write(self, body: Callable[Concatenate[Conn, P], Awaitable[T]], *args: P.args,
                    **kwargs: P.kwargs) -> T:
        """Run ``body(conn, ...)`` in one transaction, again from the start after a deadlock,
        a serialization failure, or a connection lost before ``COMMIT``; an exception from
        ``body`` rolls it back. A connection lost during ``COMMIT`` raises StoreError."""
        return await self._write(False, lambda conn, progress: _transaction(
            conn, progress, body, *args, **kwargs))

    async def write_idempotent(self, body: Callable[Concatenate[Conn, P], Awaitable[T]],
                               *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`write` for a ``body`` whose second run, after a first one committed, changes
        nothing and returns what the first returned: run again after a connection lost during
        ``COMMIT`` too."""
        return await self._write(True, lambda conn, progress: _transaction(
            conn, progress, body, *args, **kwargs))

    async def write_pipelined(self, body: Callable[Concatenate[Conn, P], Awaitable[Fetch[T]]],
                              *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`write_idempotent` in one network round trip: ``body(conn, ...)`` only sends its
        statements (it must not read a result) and returns a function that reads them once
        the transaction is over. ``BEGIN``, the statements and ``COMMIT`` go to the server
        together (psycopg's pipeline mode); each statement still sees what the ones before it
        did, and the first one that fails rolls the transaction back. A connection lost
        during the round trip may have been lost during ``COMMIT``: ``body`` must apply once
        however often it runs, as for :meth:`write_idempotent`."""
        return await self._write(True, lambda conn, progress: _pipelined(
            conn, progress, body, *args, **kwargs))

    async def _write(self, idempotent: bool, attempt: Callable[[Conn, _Progress], Awaitable[T]]) -> T:
        """Run ``attempt`` on a pooled connection until it succeeds, as :meth:`write` says."""
        retried = lost = 0
        while True:
            conn: Conn | None = None
            progress = _Progress()
            try:
                async with self._connection() as conn:
                    return await attempt(conn, progress)
            except (errors.DeadlockDetected, errors.SerializationFailure) as exc:
                if retried == RETRIES:
                    raise self.failure(exc) from exc
                await asyncio.sleep(random.uniform(0, 0.01 * 2**retried))
                retried += 1
            except MemvaultError:
                raise
            except psycopg.Error as exc:  # a lost connection, a pool timeout, ...
                if conn is None or not conn.broken:
                    raise self.failure(exc) from exc
                lost += 1
                if (progress.committing and not idempotent) or lost >= self._stale_retries():
                    raise self.failure(exc, committing=progress.committing) from exc

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Conn]:
        """A pooled connection; StoreError soon, not after the pool's ``timeout``, when none
        is ready and the server cannot be reached."""
        wait = min(PROBE_AFTER, self.pool.timeout)
        try:
            conn = await self.pool.getconn(timeout=wait)
        except PoolTimeout:
            await self._check_server()  # none ready: is the server down, or the pool only busy?
            conn = await self.pool.getconn(timeout=max(self.pool.timeout - wait, 0.001))
        try:
            yield conn
        finally:
            await self.pool.putconn(conn)

    async def _check_server(self) -> None:
        """StoreError if the server cannot be reached. One probe connection at a time, and
        none again within ``PROBE_AFTER`` seconds of one that answered: a busy pool with many
        waiting calls must not open a connection per call (that would exhaust the server's
        ``max_connections``). A server refusing for too many clients is up: not a failure."""
        async with self._probing:
            loop = asyncio.get_running_loop()
            if loop.time() - self._probed_at < PROBE_AFTER:
                return
            try:
                probe = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            except errors.TooManyConnections:
                pass
            except psycopg.Error as exc:
                raise self.failure(exc) from exc
            else:
                await probe.close()
            self._probed_at = loop.time()

    def _stale_retries(self) -> int:
        """Connections to try per call: every pooled one may have been closed, plus a new one."""
        return self.pool.max_size + 1

    def failure(self, exc: Exception, *, committing: bool = False) -> StoreError:
        """StoreError naming the server and its reason; ``committing``: the connection was
        lost during ``COMMIT``, so the write may have been applied."""
        unknown = (" (the connection was lost during COMMIT: the write may or may not have been"
                   " applied; read before writing again)") if committing else ""
        return StoreError(f"PostgreSQL at {self.where} failed: {reason(exc)}{unknown}")


@dataclass
class _Progress:
    """How far one run of a write got: ``committing`` once ``COMMIT`` may have been sent."""

    committing: bool = False


async def _transaction(
    conn: Conn, progress: _Progress, body: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
) -> T:
    """One run of a :meth:`Database.write` body in a transaction."""
    async with conn.transaction():
        result: T = await body(conn, *args, **kwargs)
        progress.committing = True  # leaving the block sends COMMIT
    return result


async def _pipelined(
    conn: Conn, progress: _Progress, body: Callable[..., Awaitable[Fetch[T]]], *args: Any, **kwargs: Any
) -> T:
    """One run of a :meth:`Database.write_pipelined` body: the whole transaction in one round trip."""
    progress.committing = True  # COMMIT goes with the statements
    async with pipelined_transaction(conn):
        fetch = await body(conn, *args, **kwargs)
    return await fetch()


@asynccontextmanager
async def pipelined_transaction(conn: Conn) -> AsyncIterator[None]:
    """A transaction of the statements the block sends, in one network round trip: ``BEGIN``,
    the statements and ``COMMIT`` are sent together when the block ends (pipeline mode), so
    the block must not read a result (read them after it). A statement that fails, or an
    exception in the block, rolls the whole transaction back and is raised."""
    try:
        # BEGIN and COMMIT as plain statements: conn.transaction() would sync the pipeline
        # (a round trip) after BEGIN and again after the block
        async with conn.pipeline():
            await conn.execute("BEGIN")
            yield
            await conn.execute("COMMIT")
    except Exception:
        if not conn.broken and conn.info.transaction_status != TransactionStatus.IDLE:
            await conn.execute("ROLLBACK")  # a failed statement left the transaction open
        raise


def reason(exc: Exception) -> str:
    """An exception's message on one line (libpq's span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


async def set_search_path(conn: Conn, schema: str) -> None:
    """Make ``schema`` the connection's only schema (``pg_catalog`` is always searched)."""
    await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
