"""The PostgreSQL store when the server itself restarts or stops in the middle of operations.

The shared test server must never be restarted, so this module runs a PRIVATE cluster of its
own: ``initdb`` into a temporary directory, ``pg_ctl start`` on a free port of 127.0.0.1 (trust
auth, ``fsync=off``), run as the ``postgres`` OS user through ``runuser``; it is stopped and
removed afterwards, whatever happens. Without the PostgreSQL binaries, ``runuser`` or psycopg the
tests skip and say why (and fail with ``MEMVAULT_REQUIRE_POSTGRES=1``).

What must hold across a ``pg_ctl restart -m fast``: every call either succeeds or raises
:class:`~memvault.errors.StoreError` (nothing else, and never hangs); a ``save_messages`` is all
or nothing, retrying a failed one by id adds no duplicate and seqs stay gap-free; a successful
working-memory append is there exactly once, a failed one is absent unless the connection was
lost at ``COMMIT`` (then the server may have committed it); the same ``Memory`` works after the
restart. With the server stopped, a call raises StoreError promptly, and once the server is
back the next call works without reopening.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.errors import StoreError
from processes import free_port

BIN = Path(os.environ.get("MEMVAULT_PG_BIN", "/usr/lib/postgresql/15/bin"))
RESOURCE = "res"
CALL_TIMEOUT = 25.0
"""No single call may take longer than this (the pool waits at most 30 s for a connection)."""


def _unavailable(reason: str) -> None:
    if os.environ.get("MEMVAULT_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"MEMVAULT_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass
class Cluster:
    """A private PostgreSQL cluster run by the ``postgres`` OS user."""

    root: Path
    port: int
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.root / "server.log"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, schema: str) -> str:
        return (f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
                f"?schema={schema}&min_size=2&max_size=4&connect_timeout=3")

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["runuser", "-u", "postgres", "--", *args], capture_output=True,
                              text=True, timeout=timeout, check=False)

    def ctl(self, action: str, *options: str) -> None:
        done = self.run(str(BIN / "pg_ctl"), action, "-D", str(self.data), "-l", str(self.log),
                        "-w", "-t", "30", *options)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {action} failed: {done.stdout}{done.stderr}\n{self.tail()}")

    def tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return ""

    def kill(self) -> None:
        """Last resort when ``pg_ctl stop`` failed: SIGQUIT the postmaster."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGQUIT)
        except (OSError, ValueError, IndexError):
            pass


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed: pip install -e '.[postgres]'")
    missing = [p for p in (BIN / "initdb", BIN / "pg_ctl", BIN / "postgres") if not os.access(p, os.X_OK)]
    if missing or shutil.which("runuser") is None:
        _unavailable(f"a private PostgreSQL cluster needs {', '.join(map(str, missing)) or 'runuser'}")
    root = Path(tempfile.mkdtemp(prefix="memvault_pg_restart_"))
    cluster = Cluster(root, free_port())
    started = False
    try:
        try:
            shutil.chown(root, user="postgres", group="postgres")
            probe = cluster.run("true", timeout=10)
        except (LookupError, OSError, subprocess.SubprocessError) as exc:
            _unavailable(f"cannot run commands as the postgres OS user: {exc}")
        if probe.returncode != 0:
            _unavailable(f"runuser -u postgres failed: {probe.stderr.strip()}")
        init = cluster.run(str(BIN / "initdb"), "-D", str(cluster.data), "-A", "trust", "-U", "postgres",
                           "-E", "UTF8", "--no-sync", timeout=120)
        if init.returncode != 0:
            _unavailable(f"initdb failed: {init.stderr.strip()}")
        with (cluster.data / "postgresql.conf").open("a") as conf:  # kept across restarts
            conf.write(f"\nport = {cluster.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{root}'\nfsync = off\nfull_page_writes = off\n")
        started = True  # from here on, stop it whatever happens
        cluster.ctl("start")
        yield cluster
    finally:
        if started:
            try:
                cluster.ctl("stop", "-m", "immediate")
            except (RuntimeError, subprocess.SubprocessError):
                cluster.kill()
                time.sleep(1)
        shutil.rmtree(root, ignore_errors=True)


def _failed_at_commit(exc: BaseException) -> bool:
    """Whether the driver error behind this StoreError was raised while sending ``COMMIT``
    (the server may then have committed the transaction before the connection was lost)."""
    cause = exc.__cause__
    tb = cause.__traceback__ if cause is not None else None
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_commit_gen":
            return True
        tb = tb.tb_next
    return False


async def _call(coro: object) -> None:
    await asyncio.wait_for(coro, CALL_TIMEOUT)  # type: ignore[arg-type]


async def test_a_restart_during_a_loop_of_writes_loses_nothing_and_writes_nothing_twice(
    cluster: Cluster,
) -> None:
    """A saver (2-4 messages per call) and an appender loop while the server is restarted twice
    (``pg_ctl restart -m fast``); each call succeeds or raises StoreError within the timeout."""
    memory = await asyncio.wait_for(Memory.open(cluster.url("restart_loop")), 60)
    saves: list[tuple[list[str], bool]] = []
    appends: list[tuple[str, bool, bool]] = []  # (line, ok, failed at COMMIT)
    done, progress = asyncio.Event(), asyncio.Event()
    restarts: list[float] = []

    async def saver() -> None:
        call = 0
        while not done.is_set():
            ids = [f"c{call}.{i}" for i in range(2 + call % 3)]
            batch = [Message.user(f"call {call} part {i}", id=m) for i, m in enumerate(ids)]
            try:
                await _call(memory.save_messages(batch, thread_id="t", resource_id=RESOURCE))
                saves.append((ids, True))
                progress.set()
            except StoreError:
                saves.append((ids, False))
            call += 1
            await asyncio.sleep(0.002)

    async def appender() -> None:
        call = 0
        while not done.is_set():
            line = f"line {call}"
            try:
                await _call(memory.update_working_memory(line, resource_id=RESOURCE))
                appends.append((line, True, False))
            except StoreError as exc:
                appends.append((line, False, _failed_at_commit(exc)))
            call += 1
            await asyncio.sleep(0.002)

    async def ok_saves_reach(count: int) -> None:
        while sum(ok for _, ok in saves) < count:
            progress.clear()
            await progress.wait()

    async def restarter() -> None:
        try:
            for round_ in range(2):
                await asyncio.wait_for(ok_saves_reach(15 * (round_ + 1)), 40)
                began = time.monotonic()
                await asyncio.to_thread(cluster.ctl, "restart", "-m", "fast")
                restarts.append(time.monotonic() - began)
            await asyncio.wait_for(ok_saves_reach(45), 40)  # and calls work after it
        finally:
            done.set()

    try:
        await asyncio.gather(saver(), appender(), restarter())

        failed_saves = [ids for ids, ok in saves if not ok]
        failed_appends = [line for line, ok, _ in appends if not ok]
        # Check before retrying: a save is all or nothing, nothing is there twice.
        messages = await _call_result(memory.get_messages(thread_id="t", resource_id=RESOURCE))
        stored = [m.id for m in messages]
        assert [m.seq for m in messages] == list(range(1, len(messages) + 1)), "seqs are not gap-free"
        assert len(stored) == len(set(stored)), "a message id is there twice"
        present = set(stored)
        committed_anyway = 0
        for ids, ok in saves:
            there = [m in present for m in ids]
            if ok:
                assert all(there), (ids, there)
            else:
                assert all(there) or not any(there), f"partial write: {ids} {there}"
                committed_anyway += all(there)
            if all(there):  # contiguous and in the order given
                start = stored.index(ids[0])
                assert stored[start : start + len(ids)] == ids
        assert present <= {m for ids, _ in saves for m in ids}

        for ids in failed_saves:  # retry once by id: idempotent
            await _call(memory.save_messages([Message.user("retried", id=m) for m in ids],
                                             thread_id="t", resource_id=RESOURCE))
        messages = await _call_result(memory.get_messages(thread_id="t", resource_id=RESOURCE))
        stored = [m.id for m in messages]
        assert [m.seq for m in messages] == list(range(1, len(messages) + 1)), "seqs are not gap-free"
        assert sorted(stored) == sorted(m for ids, _ in saves for m in ids)

        content = await _call_result(memory.get_working_memory(resource_id=RESOURCE))
        lines = content.split("\n") if content else []
        assert len(lines) == len(set(lines)), "an append is there twice"
        appended_anyway = 0
        for line, ok, at_commit in appends:
            count = lines.count(line)
            if ok:
                assert count == 1, f"successful append {line!r} is missing"
            elif count:
                assert at_commit, f"append {line!r} failed before COMMIT but was written"
                appended_anyway += 1
        assert set(lines) <= {line for line, _, _ in appends}
        assert lines == sorted(lines, key=lambda line: int(line.split()[1])), "appends out of order"

        # the same Memory works after the restarts
        again = await _call_result(memory.save_messages([Message.user("after", id="after")],
                                                        thread_id="t", resource_id=RESOURCE))
        assert again[0].seq == len(stored) + 1
        latest = await _call_result(memory.get_messages(thread_id="t", resource_id=RESOURCE))
        assert latest[-1].id == "after"
    finally:
        await asyncio.wait_for(memory.close(), 30)

    assert len(restarts) == 2
    print(f"restarts took {', '.join(f'{s:.2f}s' for s in restarts)}; "
          f"{len(failed_saves)}/{len(saves)} saves failed ({committed_anyway} committed anyway), "
          f"{len(failed_appends)}/{len(appends)} appends failed ({appended_anyway} committed at COMMIT)")


async def _call_result(coro: object) -> object:
    return await asyncio.wait_for(coro, CALL_TIMEOUT)  # type: ignore[arg-type]


async def test_a_stopped_server_fails_calls_promptly_and_the_store_recovers_when_it_is_back(
    cluster: Cluster,
) -> None:
    memory = await asyncio.wait_for(Memory.open(cluster.url("restart_stop")), 60)
    try:
        await _call(memory.save_messages([Message.user("before", id="b")], thread_id="t",
                                         resource_id=RESOURCE))
        await asyncio.to_thread(cluster.ctl, "stop", "-m", "fast")
        try:
            for call in (memory.get_messages(thread_id="t", resource_id=RESOURCE),
                         memory.save_messages([Message.user("down", id="d")], thread_id="t",
                                              resource_id=RESOURCE)):
                began = time.monotonic()
                with pytest.raises(StoreError):
                    await asyncio.wait_for(call, CALL_TIMEOUT)
                took = time.monotonic() - began
                assert took < 10, f"a call to a stopped server took {took:.1f}s to fail"
                print(f"a call to the stopped server failed after {took:.2f}s")
        finally:
            await asyncio.to_thread(cluster.ctl, "start")
        # back: the next calls work on the same Memory
        saved = await _call_result(memory.save_messages([Message.user("after", id="a")],
                                                        thread_id="t", resource_id=RESOURCE))
        assert saved[0].seq == 2  # type: ignore[index]
        messages = await _call_result(memory.get_messages(thread_id="t", resource_id=RESOURCE))
        assert [m.id for m in messages] == ["b", "a"]  # type: ignore[attr-defined]
    finally:
        await asyncio.wait_for(memory.close(), 30)
