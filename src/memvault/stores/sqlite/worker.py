"""One SQLite connection on one worker thread, with group commit.

Every call of a store runs on the worker thread, so the event loop never waits for the disk.
Writes are *group-committed*: the writes that callers submit while the worker is busy are run
together in the next transaction, and each caller's await returns once that transaction has
committed. A sequential caller gets one transaction per write; many concurrent callers (a
server with many conversations) share commits, which is where SQLite's per-transaction cost
goes. A write that raises leaves nothing behind and its caller gets the error; the others
commit.

The whole transaction is retried when another process holds the file ("database is locked"),
until ``busy_timeout`` runs out; the caller never sees "locked" before then.

At ``synchronous=NORMAL`` a small write (a turn's messages, :meth:`SqliteWorker.write_small`)
skips the hand-off to the worker thread when the worker is idle: the writes a loop submits in
one iteration of its event loop are gathered and run in one transaction right on the loop's
thread (group commit still works: concurrent conversations share it), through a second writing
connection that never checkpoints and never waits long for a lock. A commit at NORMAL writes
the WAL without syncing it, so the loop waits for no disk; the WAL checkpoints, which copy and
sync, stay on the worker (after about ``WAL_AUTOCHECKPOINT_PAGES`` pages of such writes), and a
write that finds the worker busy or the file locked goes to the worker as any other. At
``synchronous=FULL`` every commit syncs the WAL, so every write goes to the worker: the loop
never waits for an fsync. An encrypted file (SQLCipher) and ``:memory:`` keep every write on
the worker too.

The worker runs on a :class:`~memvault.stores.sqlite.cipher.Driver`: the standard library's
:mod:`sqlite3`, or SQLCipher for an encrypted file, whose connections get the key as their first
statement (:mod:`memvault.stores.sqlite.cipher`). A file that cannot be read with the key given
(or without one) raises :class:`~memvault.errors.EncryptionKeyError` on open, before anything is
written to it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from memvault.errors import (
    MemvaultError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    StoreOpenError,
)
from memvault.stores.sqlite import erase
from memvault.stores.sqlite.cipher import STDLIB, Driver, Key, apply_key, quiet_log, unreadable
from memvault.stores.sqlite.failures import (
    UNDECODABLE,
    folder_error,
    is_memory,
    open_error,
    read_only_file_system,
    store_error,
    undecodable,
)
from memvault.stores.sqlite.schema import register_functions

T = TypeVar("T")
log = logging.getLogger("memvault.sqlite")
_INLINE_WAIT = 0.05  # seconds a small read or write on the caller's thread waits for a busy file
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
"""Bytes the WAL file is truncated to after a checkpoint that reset it (``journal_size_limit``):
the log may grow past it while a reader pins it, and shrinks back at the next reset."""
WAL_AUTOCHECKPOINT_PAGES = 1000
"""A commit that leaves the WAL longer than this many pages runs a passive checkpoint
(``wal_autocheckpoint``, SQLite's default, set explicitly)."""
MMAP_BYTES = 2**31 - 2**16
"""How much of the file the full-text searches read through a memory map by default
(``mmap_size`` of the worker's search connection, :meth:`SqliteWorker.search_read`; the store's
``search_map_mb`` sets it, 0 maps nothing; SQLite caps it at its build's limit, 2 GiB less
64 KiB by default): a page read is then a memory access, not a ``pread`` into the connection's
page cache. A search reads thousands of scattered pages (with 1M messages in one resource a
pool search took p50 34 ms unmapped and 30 mapped; at 100k a turn took about 7 % less). Only
reads are mapped (writes go through ``write`` as before). The pages a search touched count in
the process's resident size as shared file pages (the operating system's file cache, which it
reclaims under pressure), not as the process's own memory; the other reads (vectors among
them) keep the unmapped connection, so loading a resource's vectors maps nothing. An
encrypted file has no search connection (SQLCipher maps nothing)."""

Body = Callable[..., Any]
PAGE = 4096
"""SQLite's default page size, for estimating what a write adds to the WAL."""


def wal_pages(size: int) -> int:
    """An upper estimate of the WAL pages a small write of ``size`` bytes of row data adds: its
    rows (twice over, for free space and the index's entries) and the few pages every save
    dirties (the thread's row and index entry, the messages' two unique indexes, the rowid
    counter, the header)."""
    return 8 + 2 * size // PAGE


def text_of(raw: bytes) -> str:
    """A TEXT value as Python reads it: UTF-8, where bytes that are not valid UTF-8 (a file
    written or damaged by something else) read as U+FFFD instead of failing the whole fetch, so
    one damaged row never makes its thread unreadable; a damaged row whose JSON no longer parses
    reads as an unreadable placeholder (:mod:`memvault.stores.decode`)."""
    return raw.decode("utf-8", "replace")


def text_in_c(body: Callable[..., T]) -> Callable[..., T]:
    """``body(conn, *args)`` for a connection whose TEXT values :mod:`sqlite3` decodes itself
    (``text_factory = str``, in C: a pool search reads about a thousand rows of six text columns,
    and :func:`text_of`, a Python call a value, cost about a third of reading them). A value
    that is not UTF-8 fails such a fetch; ``body`` then runs again, in the same transaction,
    decoding with :func:`text_of`, so what it returns is what :func:`text_of` gives. ``body``
    must only read (a search may fill and drop a temporary table: it drops it either way)."""

    @functools.wraps(body)
    def run(conn: sqlite3.Connection, *args: Any) -> T:
        if conn.text_factory is not str:
            return body(conn, *args)
        try:
            return body(conn, *args)
        except sqlite3.OperationalError as exc:
            if "UTF-8" not in str(exc):  # "Could not decode to UTF-8 column ..."
                raise
        conn.text_factory = text_of
        try:
            return body(conn, *args)
        finally:
            conn.text_factory = str

    return run


@dataclass
class _Job:
    body: Body
    args: tuple[Any, ...]
    future: asyncio.Future[Any] | None  # None: nobody waits (background work)
    loop: asyncio.AbstractEventLoop


def _settle_all(settled: list[tuple[_Job, tuple[bool, Any]]]) -> None:
    for job, (ok, value) in settled:
        if job.future is None:
            if not ok:
                log.warning("background SQLite write %s failed: %r", job.body.__name__, value)
            continue
        if job.future.done():  # the caller was cancelled; the write itself has happened or not
            continue
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)


def _settle_threadsafe(settled: list[tuple[_Job, tuple[bool, Any]]]) -> None:
    """:func:`_settle_all` from any thread: on each caller's loop, one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Job, tuple[bool, Any]]]] = {}
    for job, outcome in settled:
        by_loop.setdefault(job.loop, []).append((job, outcome))
    for loop, part in by_loop.items():
        loop.call_soon_threadsafe(_settle_all, part)


class SqliteWorker:
    """Owns the connection; ``read`` and ``write`` run a body ``fn(conn, *args)`` on it."""

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str,
        busy_timeout: float,
        driver: Driver = STDLIB,
        key: Key | None = None,
        read_only: bool = False,
        search_map: int = MMAP_BYTES,
    ) -> None:
        self.path = path
        self.search_map = search_map  # bytes of the file the search connection maps
        self.read_only = read_only
        self.memory = is_memory(path)  # SQLite's in-process database: one connection, no reader
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.driver = driver
        self._key = key  # dropped once both connections are keyed
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="memvault-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None  # for small reads on the caller's thread
        self._searcher: sqlite3.Connection | None = None  # full-text searches, mapped (MMAP_BYTES)
        self._reader_lock = threading.Lock()
        self._lock = threading.Lock()
        self._queue: list[_Job] = []
        self._draining = False  # a drain runs or is submitted, or an inline batch runs
        # small writes on the caller's thread: at NORMAL, on a plain file (an encrypted one would
        # derive its key a third time on open, for a connection of its own)
        self._inline = (synchronous.upper() != "FULL" and not read_only and not self.memory
                        and driver is STDLIB)
        self._inline_conn: sqlite3.Connection | None = None  # writes on the caller's thread
        self._conn_lock = threading.Lock()  # held by whoever uses the writing connections
        self._batches: dict[asyncio.AbstractEventLoop, list[_Job]] = {}  # inline, per loop
        self._unchecked_pages = 0  # WAL pages inline writes added since the last checkpoint
        self._closed = False  # set by close(): every later call raises StoreClosedError

    async def start(self, setup: Body) -> None:
        """Connect (creating missing folders), set the pragmas, then run ``setup`` in a write
        transaction (the schema migration), or in a read transaction when read-only. Any
        failure raises a :class:`~memvault.errors.StoreOpenError` naming the file and the cause
        (or the more precise :class:`~memvault.errors.EncryptionKeyError` /
        :class:`~memvault.errors.SchemaVersionError`)."""
        await self.run(self._connect, setup)

    def _connect(self, setup: Body) -> None:
        try:
            self._connect_steps(setup)
        except MemvaultError as exc:
            if type(exc) is StoreError and exc.__cause__ is not None:
                raise open_error(self.path, exc.__cause__, read_only=self.read_only) from exc.__cause__
            if type(exc) is StoreOpenError and not exc.location:
                raise StoreOpenError(f"cannot open the SQLite database {self.path}: {exc}",
                                     location=str(self.path)) from exc
            if type(exc) is SchemaVersionError:
                raise SchemaVersionError(f"{self.path}: {exc}") from exc
            raise
        except (self.driver.database_error, OSError) as exc:
            raise open_error(self.path, exc, read_only=self.read_only) from exc
        except UNDECODABLE as exc:  # the schema's own records are garbage
            raise StoreOpenError(
                f"cannot open the SQLite database {self.path}: its schema records cannot be read "
                f"({type(exc).__name__}: {exc}); the file may be damaged", location=str(self.path)) from exc

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the worker thread; :class:`StoreClosedError` once closed."""
        if self._closed:
            raise StoreClosedError()
        try:
            future = asyncio.get_running_loop().run_in_executor(self._executor, self._locked, fn, *args)
        except RuntimeError as exc:  # the executor shut down meanwhile (a close in another thread)
            raise StoreClosedError() from exc
        return await future

    def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` holding the writing connections (no inline write runs meanwhile)."""
        with self._conn_lock:
            return fn(*args)

    def _connect_steps(self, setup: Body) -> None:
        if not self.memory and not self.read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise folder_error(self.path, exc) from exc
        conn = self._open(self.busy_timeout)
        self._conn = conn
        self._check_readable(conn)
        if not self.memory and not self.read_only:
            self._retry(conn.execute, "PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA secure_delete = ON")  # deleted text is overwritten (:mod:`.erase`)
        if self.read_only:  # never a write, not even a migration: ``setup`` only checks
            self._retry(self._snapshot, setup, ())
        else:
            [(ok, value)] = self._retry(self._transaction, [(setup, ())])
            if not ok:
                raise value
        if self.memory:  # a second connection would see another, empty database
            self._key = None
            return
        self._reader = self._open(_INLINE_WAIT)
        self._reader.execute("PRAGMA query_only = ON")
        self._reader.execute("PRAGMA secure_delete = ON")
        if self.driver is STDLIB:
            # not query_only: a search may index pending messages in a temporary table (.search)
            searcher = self._searcher = self._open(self.busy_timeout)
            searcher.execute("PRAGMA secure_delete = ON")
            searcher.execute(f"PRAGMA mmap_size = {int(self.search_map)}")
            searcher.text_factory = str  # decoded in C, with text_of for a damaged row (text_in_c)
        if self._inline:
            inline = self._inline_conn = self._open(_INLINE_WAIT)
            inline.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
            inline.execute("PRAGMA wal_autocheckpoint = 0")  # the worker checkpoints
            inline.execute(f"PRAGMA synchronous = {self.synchronous}")
            inline.execute("PRAGMA secure_delete = ON")
        # SQLCipher derives a passphrase's key on a connection's first read: here, not in the
        # first history read (tens of milliseconds)
        self._retry(self._reader.execute, "SELECT count(*) FROM sqlite_master")
        self._key = None

    def _open(self, timeout: float) -> sqlite3.Connection:
        """A connection to the file (read-only with ``mode=ro``), keyed first thing when there
        is a key."""
        target: str | Path = self.path
        if self.read_only:
            target = f"file:{quote(str(self.path.absolute()))}?mode=ro"
            wal = Path(f"{self.path}-wal")
            if read_only_file_system(self.path.parent) and not (wal.exists() and wal.stat().st_size):
                target += "&immutable=1"  # nobody can write it, and no log to replay: no -shm needed
        conn = self.driver.connect(target, isolation_level=None, check_same_thread=False,
                                   timeout=timeout, uri=self.read_only)
        conn.text_factory = text_of
        try:
            apply_key(conn, self._key)
        except BaseException:
            conn.close()
            raise
        register_functions(conn)
        return conn

    def _check_readable(self, conn: sqlite3.Connection) -> None:
        """Read the schema once, before anything else touches the file: a file that the key (or
        its absence) cannot read raises :class:`~memvault.errors.EncryptionKeyError` here, with
        nothing written."""
        try:
            with quiet_log(conn, self.driver):  # SQLCipher would print its failed decryption
                self._retry(conn.execute, "SELECT count(*) FROM sqlite_master")
        except StoreError as exc:
            cause = exc.__cause__
            if isinstance(cause, self.driver.database_error) and not isinstance(
                    cause, self.driver.operational_error):  # "not a database": a key problem?
                error = unreadable(self.path, self._key is not None, cause)
                if error is not None:
                    raise error from cause
            raise

    @property
    def closed(self) -> bool:
        """Closed, or never opened: no call reaches the file."""
        return self._closed or self._conn is None

    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreClosedError()
        return self._conn

    async def read(self, body: Callable[..., T], *args: Any) -> T:
        """Run ``body(conn, *args)`` on one consistent snapshot (a read transaction)."""
        return await self.run(self._read, self._decoding(body), args)

    async def read_one(self, body: Callable[..., T], *args: Any) -> T:
        """Run ``body(conn, *args)``, which must read with a single statement (atomic by
        itself), without the cost of a read transaction."""
        return await self.run(self._retry, self._decoding(body), self.connection(), *args)

    def _decoding(self, body: Callable[..., T]) -> Callable[..., T]:
        """``body``, with a row it cannot decode (:data:`~.failures.UNDECODABLE`: a damaged
        file, most likely) reported as a StoreError naming the file, not a raw error."""

        @functools.wraps(body)
        def run(conn: sqlite3.Connection, *args: Any) -> T:
            try:
                return body(conn, *args)
            except MemvaultError:
                raise
            except UNDECODABLE as exc:
                raise undecodable(self.path, exc) from exc

        return run

    async def search_read(self, body: Callable[..., T], *args: Any) -> T:
        """:meth:`read` on the search connection, which reads the file through a memory map
        (:data:`MMAP_BYTES`) and decodes text in C (:func:`text_in_c`): for the full-text
        searches, which read thousands of scattered pages and rows. On the worker's connection
        when there is none (``:memory:``, an encrypted file)."""
        return await self.run(self._read_on, self._searcher, self._decoding(text_in_c(body)), args)

    def _read(self, body: Callable[..., T], args: tuple[Any, ...]) -> T:
        return self._read_on(None, body, args)

    def _read_on(self, conn: sqlite3.Connection | None, body: Callable[..., T], args: tuple[Any, ...]) -> T:
        result: T = self._retry(self._snapshot, body, args, conn)
        return result

    def _snapshot(self, body: Callable[..., T], args: tuple[Any, ...],
                  conn: sqlite3.Connection | None = None) -> T:
        """``body(conn, *args)`` in a read transaction of ``conn`` (default: the worker's)."""
        if conn is None:
            conn = self.connection()
        conn.execute("BEGIN")
        try:
            return body(conn, *args)
        finally:
            conn.execute("COMMIT")

    async def read_small(self, body: Callable[..., T], *args: Any, snapshot: bool = False) -> T:
        """Run ``body(conn, *args)``, a read of a bounded number of rows, right on the caller's
        thread: a WAL read never waits for writers, and for a few rows the hand-off to the
        worker thread would cost more than the read. A ``body`` of several statements needs
        ``snapshot=True`` (one read transaction). If the file is busy (recovery, a checkpoint),
        it goes to the worker instead."""
        body = self._decoding(body)
        reader = self._reader
        if reader is not None and self._reader_lock.acquire(blocking=False):
            try:
                if not snapshot:
                    return body(reader, *args)
                reader.execute("BEGIN")
                try:
                    return body(reader, *args)
                finally:
                    reader.execute("COMMIT")
            except self.driver.database_error as exc:
                if not self._busy(exc):
                    raise store_error(self.path, exc) from exc
            finally:
                self._reader_lock.release()
        return await (self.read(body, *args) if snapshot else self.read_one(body, *args))

    async def write(self, body: Callable[..., T], *args: Any) -> T:
        """Run ``body(conn, *args)`` in a write transaction (shared with the writes submitted
        meanwhile); returns once it has committed. ``body`` may run more than once (retries),
        so it must not change anything but the database."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._enqueue(_Job(body, args, future, loop))
        return await future

    async def write_small(self, body: Callable[..., T], *args: Any, size: int) -> T:
        """:meth:`write` for a small write (``size``: about how many bytes of rows it writes),
        run on the caller's thread when the worker is idle and the durability is NORMAL (see
        the module docstring): the writes this loop submits before it next runs its callbacks
        share one transaction. Same semantics as :meth:`write`."""
        if not self._inline:
            return await self.write(body, *args)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise StoreClosedError()
            batch = self._batches.get(loop)
            if batch is None:
                batch = self._batches[loop] = []
                loop.call_soon(self._flush, loop)
            batch.append(_Job(body, args, future, loop))
        self._unchecked_pages += wal_pages(size)
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run ``loop``'s gathered small writes in one transaction on this thread when the
        worker is idle; else (or when the file is locked) queue them for the worker."""
        with self._lock:
            jobs = self._batches.pop(loop, [])
            idle = (jobs and not self._closed and not self._draining and not self._queue
                    and self._inline_conn is not None and self._conn_lock.acquire(blocking=False))
            if not idle:
                self._queue_jobs(jobs)
                return
            self._draining = True  # writes submitted meanwhile wait for the drain started below
        outcomes: list[tuple[bool, Any]] | None = None
        try:
            outcomes = self._inline_transaction(jobs)
        finally:
            self._conn_lock.release()
            with self._lock:
                if outcomes is None:  # the file is busy: the worker waits for it, not the loop
                    self._queue[:0] = jobs
                self._draining = False
                waiting, self._queue = self._queue, []
                self._queue_jobs(waiting)
        if outcomes is not None:
            _settle_all(list(zip(jobs, outcomes, strict=True)))
        if self._unchecked_pages >= WAL_AUTOCHECKPOINT_PAGES:
            self._unchecked_pages = 0
            with self._lock:
                if not self._closed:
                    self._executor.submit(self._locked, self._checkpoint_passive)

    def _inline_transaction(self, jobs: list[_Job]) -> list[tuple[bool, Any]] | None:
        """:meth:`_transaction` on the inline connection, once; ``None`` when the file is busy
        (another process writes, or a checkpoint waits), so the worker retries it."""
        try:
            return self._transaction([(job.body, job.args) for job in jobs], self._inline_conn)
        except self.driver.database_error as exc:
            if self._busy(exc):
                return None
            return [(False, store_error(self.path, exc))] * len(jobs)
        except Exception as exc:
            return [(False, exc)] * len(jobs)

    def _checkpoint_passive(self) -> None:
        """Copy the WAL into the file as far as no reader needs it (what ``wal_autocheckpoint``
        does after a commit), for the inline writes; a failure is logged, the next one retries."""
        try:
            self.connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except (self.driver.database_error, StoreClosedError) as exc:
            log.warning("memvault: a WAL checkpoint of %s failed: %r", self.path, exc)

    def _queue_jobs(self, jobs: list[_Job]) -> None:
        """Queue ``jobs`` for the worker (under ``_lock``), starting a drain when none runs; once
        closed, they fail with :class:`StoreClosedError`."""
        if not jobs:
            return
        if self._closed and self._conn is None:
            _settle_threadsafe([(job, (False, StoreClosedError())) for job in jobs])
            return
        self._queue.extend(jobs)
        if not self._draining:
            try:
                self._executor.submit(self._drain)
            except RuntimeError:  # the executor shut down (closed meanwhile)
                waiting, self._queue = self._queue, []
                _settle_threadsafe([(job, (False, StoreClosedError())) for job in waiting])
                return
            self._draining = True

    def write_later(self, body: Body, *args: Any) -> None:
        """Queue ``body(conn, *args)`` as a write nobody waits for (it joins the next
        transaction; a failure is logged)."""
        self._enqueue(_Job(body, args, None, asyncio.get_running_loop()))

    def _enqueue(self, job: _Job) -> None:
        """Queue ``job``, starting a drain when none runs; :class:`StoreClosedError` at once
        once the store is closed (nothing is queued, so nothing waits for ever), and
        :class:`ReadOnlyStoreError` when it was opened read-only."""
        self.refuse_writes_when_read_only()
        with self._lock:
            if self._closed:
                raise StoreClosedError()
            self._queue.append(job)
            start, self._draining = not self._draining, True
            if start:
                self._executor.submit(self._drain)  # under the lock: close() cannot come between

    def refuse_writes_when_read_only(self) -> None:
        """:class:`~memvault.errors.ReadOnlyStoreError` when the file was opened read-only."""
        if self.read_only:
            raise ReadOnlyStoreError(
                f"the SQLite database {self.path} was opened read-only (?mode=ro): nothing was "
                "written; open it without mode=ro to write")

    def _drain(self) -> None:
        while True:
            with self._lock:
                jobs, self._queue = self._queue, []
                if not jobs:
                    self._draining = False
                    return
            bodies = [(job.body, job.args) for job in jobs]
            try:
                outcomes = self._locked(self._retry, self._transaction, bodies)
            except BaseException as exc:  # every caller gets the failure
                outcomes = [(False, exc)] * len(jobs)
            _settle_threadsafe(list(zip(jobs, outcomes, strict=True)))

    def _transaction(
        self, bodies: list[tuple[Body, tuple[Any, ...]]], conn: sqlite3.Connection | None = None
    ) -> list[tuple[bool, Any]]:
        """Run the bodies in one transaction (on the worker's connection, or ``conn``); returns
        (ok, result or error) per body.

        A body that raises has its error recorded, the transaction is rolled back and run again
        without it, so the others commit and the failing one leaves nothing behind. (Savepoints
        would do the same, but FTS5 flushes its pending index at every savepoint, which undoes
        what sharing the transaction saves.)"""
        failed: dict[int, BaseException] = {}
        while True:
            conn = self.connection() if conn is None else conn
            results: dict[int, Any] = {}
            conn.execute("BEGIN IMMEDIATE")
            try:
                for number, (body, args) in enumerate(bodies):
                    if number in failed:
                        continue
                    try:
                        results[number] = body(conn, *args)
                    except self.driver.operational_error:
                        raise  # the file is busy or broken: the whole transaction retries or fails
                    except self.driver.database_error as exc:  # e.g. a damaged page it read
                        failed[number] = store_error(self.path, exc)
                        break
                    except UnicodeDecodeError as exc:  # stored text that is not UTF-8: damage
                        failed[number] = undecodable(self.path, exc)
                        break
                    except Exception as exc:
                        failed[number] = exc
                        break
                else:
                    conn.execute("COMMIT")
                    return [(True, results[i]) if i in results else (False, failed[i])
                            for i in range(len(bodies))]
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("ROLLBACK")

    def _retry(self, attempt: Callable[..., T], *args: Any) -> T:
        """``attempt(*args)``, again after a pause while the file is locked by another process."""
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.005
        while True:
            try:
                return attempt(*args)
            except self.driver.database_error as exc:
                if not self._busy(exc) or time.monotonic() > deadline:
                    raise store_error(self.path, exc) from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)

    def _busy(self, exc: BaseException) -> bool:
        """``exc`` says another connection holds the file (SQLITE_BUSY: "database is locked"),
        which waiting cures; not SQLITE_LOCKED ("database table is locked"), a conflict within
        this connection that no wait ends."""
        text = str(exc).lower()
        return isinstance(exc, self.driver.operational_error) and (
            "database is locked" in text or "busy" in text)

    async def checkpoint(self) -> bool:
        """Checkpoint the WAL into the file and truncate it (after a deletion,
        :func:`~memvault.stores.sqlite.erase.checkpoint`); ``True`` when it completed."""
        return await self.run(erase.checkpoint, self.connection(), self.busy_timeout,
                              erase.CHECKPOINT_WAIT_MS, self.driver.operational_error)

    async def purge(self) -> dict[str, Any]:
        """:func:`~memvault.stores.sqlite.erase.purge` on the writing connection."""
        self.refuse_writes_when_read_only()
        return await self.run(self._retry, erase.purge, self.connection(), self.busy_timeout,
                              self.driver.operational_error)

    def connections(self) -> list[sqlite3.Connection]:
        """The open connections (the writer, the reader, the search connection, then the inline
        writer), for tests and diagnostics."""
        return [c for c in (self._conn, self._reader, self._searcher, self._inline_conn) if c is not None]

    async def close(self) -> None:
        """Close the connection once pending work is done (the writes queued before run and
        commit); closing twice is harmless. Every later call raises
        :class:`~memvault.errors.StoreClosedError` at once."""
        with self._lock:
            already, self._closed = self._closed, True
            if not already:  # gathered small writes run and commit before the connection closes
                for jobs in self._batches.values():
                    self._queue_jobs(jobs)
                self._batches.clear()
        if already:
            return
        if self._conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)

    def _close(self) -> None:
        with self._conn_lock:
            with self._reader_lock:
                if self._reader is not None:
                    self._reader.close()
                    self._reader = None
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
            if self._inline_conn is not None:
                self._inline_conn.close()
                self._inline_conn = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None
