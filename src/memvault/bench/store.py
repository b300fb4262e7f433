"""``memvault bench store``: how fast the SQLite store writes and reads conversations.

Three systems run side by side in one process, on one workload, each on its own fresh file,
each twice: at ``synchronous=NORMAL`` and at ``synchronous=FULL`` (an fsync of the WAL per
commit), so that every ratio compares equal durability:

- **memvault** / **memvault_full**: the public async API (``Memory.open("sqlite:///...")``, and
  ``?durability=full``), one ``save_messages`` call per turn, awaited in sequence.
- **peer** / **peer_full**: the OpenAI Agents SDK's file-backed ``agents.memory.SQLiteSession``
  (WAL, one transaction per ``add_items``, run on ``asyncio.to_thread``), one session object per
  thread, created before the clock starts and reused, one ``add_items([user, assistant])`` per
  turn. The SDK sets no ``synchronous`` (SQLite's default is FULL); the bench sets it on every
  connection the session opens (:func:`_peer_type`).
- **floor** / **floor_full**: raw ``sqlite3`` on memvault's own schema
  (``sqlite.schema.migrate``) and pragmas, writing the same rows (threads row, messages with
  ``seq`` computed in Python, the FTS body as memvault stores it, indexed in batches of 512 as
  memvault does) with ``executemany`` in one transaction per turn: the same unit of durability
  as ``save_messages``. As extra information, the same rows in one single transaction
  (``floor_bulk``, NORMAL).

File bytes per message are measured after a ``wal_checkpoint(TRUNCATE)`` of each file (the
database and its WAL). With ``syscalls=True``, a short counted run of each system and durability
in a child process under ``strace`` (:mod:`memvault.bench.syscalls`) gives the fsyncs and the
bytes written per turn.

The workload: ``messages`` messages over ``threads`` threads as 2-message turns (a user message
of 20-400 characters, then an assistant message of 50-1,500), words drawn from a seeded RNG, the
threads' turns interleaved in a seeded random order like many users chatting at once. Then
``reads`` reads of the newest 20 messages of random threads. Writes and reads proceed in
blocks, the systems taking turns in a rotating order, so a noisy neighbour slows them alike.

:func:`run` returns the result as a JSON-ready dict; the targets are checked against the
measurements, never assumed.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import math
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from memvault import Memory, Message
from memvault.bench import syscalls as strace
from memvault.rules.words import fold, split_cjk
from memvault.stores.sqlite.messages import stored_body
from memvault.stores.sqlite.schema import index_pending, migrate
from memvault.stores.sqlite.store import INDEX_BATCH

if TYPE_CHECKING:
    from agents.memory import SQLiteSession

USER_CHARS = (20, 400)
ASSISTANT_CHARS = (50, 1500)
LAST_N = 20
WRITE_BLOCK = 250  # turns each system writes before the next one takes its turn
READ_BLOCK = 50

DURABILITIES = {"": "NORMAL", "_full": "FULL"}
"""A system's name suffix and its ``synchronous`` setting."""
COUNTED_TURNS = 300  # turns written under strace per system and durability (after a warm-up)
COUNTED_WARMUP = 200
COUNTED_THREADS = 10  # few, so that the warm-up opens every connection the peer will use

#: ``name: (comparison, bound)`` for each ratio the issue sets a target on, at concurrency 1
#: (memvault and the peer at equal durability); see :func:`targets`.
TARGETS: dict[str, tuple[str, float]] = {
    "write_memvault_over_peer": (">=", 2.0),
    "write_floor_over_memvault": ("<=", 1.5),
    "read_p50_memvault_over_peer": ("<=", 1.0),
    "file_bytes_memvault_over_peer": ("<=", 1.6),
}


def targets(concurrency: int) -> dict[str, tuple[str, float]]:
    """:data:`TARGETS`, where serving many conversations at once (group commit) must write at
    3x the peer, not 2x."""
    if concurrency == 1:
        return dict(TARGETS)
    return {**TARGETS, "write_memvault_over_peer": (">=", 3.0)}

_WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from "
    "or one had by word but not what all were we when your can said there use an each which she "
    "do how their if will up other about out many then them these so some her would make like "
    "him into time has look two more write go see number no way could people my than first water "
    "been call who oil its now find long down day did get come made may part over new sound take "
    "only little work know place year live me back give most very after thing our just name good "
    "sentence man think say great where help through much before line right too mean old any "
    "same tell boy follow came want show also around form three small set put end does another "
    "well large must big even such because turn here why ask went men read need land different "
    "home us move try kind hand picture again change off play spell air away animal house point "
    "page letter mother answer found study still learn should America world database memory "
    "thread message agent model token budget history search recall summary function python "
    "deploy server request response latency cache index query schema migration transaction"
).split()

_THREAD_UPSERT = (
    "INSERT INTO threads (resource_id, id, created_us, updated_us, next_seq) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT DO UPDATE SET updated_us = excluded.updated_us, next_seq = excluded.next_seq"
)
_MESSAGE_INSERT = (
    "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata, created_us,"
    " body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_LAST_N_SELECT = (
    "SELECT id, thread_id, resource_id, seq, role, parts, metadata, created_us FROM messages"
    " WHERE resource_id = ? AND thread_id = ? ORDER BY seq DESC LIMIT ?"
)


class Turn(NamedTuple):
    thread: int  # index into Workload.thread_ids
    user: str
    assistant: str


@dataclass(frozen=True)
class Workload:
    """The deterministic input every system gets: the same turns in the same order."""

    thread_ids: list[str]
    resource_ids: list[str]
    turns: list[Turn]
    reads: list[int]  # thread indexes to read, in order
    messages_per_thread: list[int]

    @property
    def messages(self) -> int:
        return 2 * len(self.turns)


def _text(rng: random.Random, low: int, high: int) -> str:
    length = rng.randint(low, high)
    words: list[str] = []
    size = 0
    while size < length:
        more = rng.choices(_WORDS, k=length // 5 + 2)
        words += more
        size += sum(len(w) + 1 for w in more)
    text = " ".join(words)[: length - 1].rstrip()
    return text[:1].upper() + text[1:] + "."


def make_workload(messages: int, threads: int, reads: int, seed: int = 1) -> Workload:
    """``messages`` as 2-message turns spread evenly over ``threads`` threads, the turns of all
    threads interleaved in a seeded random order; ``reads`` random threads to read."""
    if messages < 2 or messages % 2:
        raise ValueError(f"messages must be an even number of at least 2 (2-message turns), "
                         f"got {messages}")
    turns = messages // 2
    if not 1 <= threads <= turns:
        raise ValueError(f"threads must be from 1 to {turns} (one turn each at least), got {threads}")
    if reads < 1:
        raise ValueError(f"reads must be at least 1, got {reads}")
    rng = random.Random(seed)
    per_thread = [turns // threads + (1 if k < turns % threads else 0) for k in range(threads)]
    order = [k for k, count in enumerate(per_thread) for _ in range(count)]
    rng.shuffle(order)
    return Workload(
        thread_ids=[f"thread-{k:06d}" for k in range(threads)],
        resource_ids=[f"user-{k:06d}" for k in range(threads)],
        turns=[Turn(k, _text(rng, *USER_CHARS), _text(rng, *ASSISTANT_CHARS)) for k in order],
        reads=[rng.randrange(threads) for _ in range(reads)],
        messages_per_thread=[2 * count for count in per_thread],
    )


# The systems. Each writes a block of turns and reads a block of threads, returning the
# latency of each call in seconds; a read also checks it got the newest LAST_N messages.

Latencies = list[float]


class _Memvault:
    def __init__(self, memory: Memory, work: Workload, concurrency: int = 1) -> None:
        self.memory = memory
        self.work = work
        self.concurrency = concurrency
        self.bad_reads = 0

    async def write(self, turns: Sequence[Turn]) -> Latencies:
        return await _in_lanes(turns, self.concurrency, self._save)

    async def _save(self, turn: Turn) -> None:
        await self.memory.save_messages(
            [Message.user(turn.user), Message.assistant(turn.assistant)],
            thread_id=self.work.thread_ids[turn.thread],
            resource_id=self.work.resource_ids[turn.thread],
        )

    async def read(self, threads: Sequence[int]) -> Latencies:
        return await self._timed_reads(self.memory.get_messages, threads)

    async def history(self, threads: Sequence[int]) -> Latencies:
        return await self._timed_reads(self.memory.get_history, threads)

    async def _timed_reads(
        self, get: Callable[..., Awaitable[list[Message]]], threads: Sequence[int]
    ) -> Latencies:
        ids, resources = self.work.thread_ids, self.work.resource_ids
        clock, out = time.perf_counter, []
        for k in threads:
            start = clock()
            found = await get(thread_id=ids[k], resource_id=resources[k], last_n=LAST_N)
            out.append(clock() - start)
            self.bad_reads += _check_read(self.work, k, [m.seq for m in found])
        return out


class _Peer:
    def __init__(self, sessions: list[SQLiteSession], work: Workload, concurrency: int = 1) -> None:
        self.sessions = sessions
        self.work = work
        self.concurrency = concurrency
        self.bad_reads = 0

    async def write(self, turns: Sequence[Turn]) -> Latencies:
        return await _in_lanes(turns, self.concurrency, self._add)

    async def _add(self, turn: Turn) -> None:
        await self.sessions[turn.thread].add_items(
            [{"role": "user", "content": turn.user},
             {"role": "assistant", "content": turn.assistant}]
        )

    async def read(self, threads: Sequence[int]) -> Latencies:
        sessions, clock, out = self.sessions, time.perf_counter, []
        for k in threads:
            start = clock()
            items = await sessions[k].get_items(limit=LAST_N)
            out.append(clock() - start)
            self.bad_reads += len(items) != min(LAST_N, self.work.messages_per_thread[k])
        return out


class _Floor:
    """Raw sqlite3 on memvault's schema: what hand-written code would do for the same rows."""

    def __init__(self, path: Path, work: Workload, synchronous: str = "NORMAL") -> None:
        self.work = work
        self.bad_reads = 0
        self.next_seq = [1] * len(work.thread_ids)
        self.unindexed = 0
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")
        self.conn.execute("PRAGMA foreign_keys = OFF")
        self.conn.execute("BEGIN IMMEDIATE")
        migrate(self.conn)
        self.conn.execute("COMMIT")

    def _insert(self, turn: Turn) -> None:
        k = turn.thread
        thread_id, resource_id = self.work.thread_ids[k], self.work.resource_ids[k]
        seq = self.next_seq[k]
        stamp = time.time_ns() // 1000
        self.conn.execute(_THREAD_UPSERT, (resource_id, thread_id, stamp, stamp, seq + 2))
        self.conn.executemany(_MESSAGE_INSERT, [
            (resource_id, thread_id, uuid.uuid4().hex, seq + i, role, _parts(text), "{}", stamp,
             _body(text))
            for i, (role, text) in enumerate((("user", turn.user), ("assistant", turn.assistant)))
        ])
        self.next_seq[k] = seq + 2
        self.unindexed += 2
        if self.unindexed >= INDEX_BATCH:  # full-text indexing in batches, as memvault does
            self.unindexed = 0
            index_pending(self.conn)

    async def write(self, turns: Sequence[Turn]) -> Latencies:
        execute, insert, clock, out = self.conn.execute, self._insert, time.perf_counter, []
        for turn in turns:
            start = clock()
            execute("BEGIN IMMEDIATE")
            insert(turn)
            execute("COMMIT")
            out.append(clock() - start)
        return out

    def write_bulk(self, turns: Sequence[Turn]) -> float:
        start = time.perf_counter()
        self.conn.execute("BEGIN IMMEDIATE")
        for turn in turns:
            self._insert(turn)
        self.conn.execute("COMMIT")
        return time.perf_counter() - start

    async def read(self, threads: Sequence[int]) -> Latencies:
        execute, ids, resources = self.conn.execute, self.work.thread_ids, self.work.resource_ids
        clock, out = time.perf_counter, []
        for k in threads:
            start = clock()
            found = [
                (*row[:5], json.loads(row[5]), json.loads(row[6]), row[7])
                for row in reversed(execute(_LAST_N_SELECT, (resources[k], ids[k], LAST_N)).fetchall())
            ]
            out.append(clock() - start)
            self.bad_reads += _check_read(self.work, k, [row[3] for row in found])
        return out


async def _in_lanes(
    turns: Sequence[Turn], concurrency: int, call: Callable[[Turn], Awaitable[None]]
) -> Latencies:
    """Run ``call`` on every turn, ``concurrency`` conversations at once: a thread's turns stay
    in order in one lane (a conversation is sequential), lanes run concurrently. Returns each
    call's latency."""
    lanes: list[list[Turn]] = [[] for _ in range(concurrency)]
    for turn in turns:
        lanes[turn.thread % concurrency].append(turn)

    async def lane(queue: list[Turn]) -> Latencies:
        clock, out = time.perf_counter, []
        for turn in queue:
            start = clock()
            await call(turn)
            out.append(clock() - start)
        return out

    return [t for part in await asyncio.gather(*(lane(q) for q in lanes if q)) for t in part]


def _parts(text: str) -> str:
    """A text message's parts exactly as memvault's SQLite store keeps them (``stored_parts``:
    the text as a JSON string)."""
    return json.dumps(text, ensure_ascii=False)


def _body(text: str) -> str | bytes:
    """A text message's ``body`` exactly as memvault stores it (``stored_body``)."""
    return stored_body(text, split_cjk(fold(text)))


def _peer_type(session_type: type[SQLiteSession], synchronous: str) -> type[SQLiteSession]:
    """``session_type`` with ``PRAGMA synchronous`` set on every connection it opens (the SDK
    sets none, so SQLite's default FULL applies). It hooks the SDK's own per-connection setup,
    ``_configure_connection`` (a private method of openai-agents 0.24), and records the setting
    each connection reads back in the class's ``applied`` set, which the result reports."""
    configure = session_type._configure_connection
    applied: set[str] = set()

    def _configure_connection(conn: sqlite3.Connection) -> None:
        configure(conn)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        (level,) = conn.execute("PRAGMA synchronous").fetchone()
        applied.add(_SYNCHRONOUS.get(level, str(level)))

    return type(f"SQLiteSession{synchronous.title()}", (session_type,),
                {"_configure_connection": staticmethod(_configure_connection), "applied": applied})


_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def _check_read(work: Workload, k: int, seqs: list[int | None]) -> int:
    """1 if ``seqs`` are not the thread's newest LAST_N in order, else 0."""
    total = work.messages_per_thread[k]
    return int(seqs != list(range(max(1, total - LAST_N + 1), total + 1)))


async def _interleave(
    jobs: Mapping[str, Callable[[Sequence[Any]], Awaitable[Latencies]]],
    items: Sequence[Any],
    block: int,
    progress: Callable[[str], None] | None,
    label: str,
) -> dict[str, tuple[float, Latencies]]:
    """Feed ``items`` to every job in blocks, rotating which job goes first; per job, the total
    wall time and every call's latency."""
    spent = dict.fromkeys(jobs, 0.0)
    latencies: dict[str, Latencies] = {name: [] for name in jobs}
    names = list(jobs)
    for number, first in enumerate(range(0, len(items), block)):
        chunk = items[first : first + block]
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            latencies[name] += await jobs[name](chunk)
            spent[name] += time.perf_counter() - start
        if progress is not None:
            progress(f"{label} {min(first + block, len(items)):,}/{len(items):,}")
    return {name: (spent[name], latencies[name]) for name in names}


def _percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 4)


def _stored(path: Path, table: str, thread_column: str) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        messages, threads = conn.execute(
            f"SELECT count(*), count(DISTINCT {thread_column}) FROM {table}"
        ).fetchone()
    conn.close()
    return {"messages": int(messages), "threads": int(threads)}


def _same_rows(memvault: Path, floor: Path, work: Workload) -> bool:
    """Whether memvault and the floor stored the same rows (all but the random ids and times)
    for a few threads."""
    sql = ("SELECT resource_id, thread_id, seq, role, parts, metadata, body FROM messages"
           " WHERE thread_id = ? ORDER BY seq")
    threads_sql = "SELECT resource_id, id, next_seq FROM threads WHERE id = ?"
    with sqlite3.connect(memvault) as one, sqlite3.connect(floor) as two:
        same = all(
            one.execute(q, (work.thread_ids[k],)).fetchall()
            == two.execute(q, (work.thread_ids[k],)).fetchall()
            for k in sorted({0, len(work.thread_ids) // 2, len(work.thread_ids) - 1})
            for q in (sql, threads_sql)
        )
    one.close()
    two.close()
    return same


def _size(path: Path) -> int:
    """The bytes of a database file and its WAL after a ``wal_checkpoint(TRUNCATE)``: what the
    data takes at rest (the ``-shm`` index is not data)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    conn.close()
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _fresh_folder(db_dir: str | Path | None) -> Path:
    if db_dir is not None:
        Path(db_dir).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="memvault-bench-store-", dir=db_dir))


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


async def measure(
    *,
    messages: int = 100_000,
    threads: int = 1000,
    reads: int = 2000,
    db_dir: str | Path | None = None,
    seed: int = 1,
    concurrency: int = 1,
    db: str | None = None,
    syscalls: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark (see the module doc) and return its result as a JSON-ready dict.

    The database files go to a fresh folder inside ``db_dir`` (default: the system's temporary
    folder), removed afterwards. ``db``: also run memvault on this store URL (e.g. a
    PostgreSQL database; it must be empty), beside the others, as ``memvault_db``.
    ``syscalls``: also count fsyncs and bytes written per turn of each system under ``strace``
    (:func:`count_syscalls`; ``None`` figures and the reason when it cannot run)."""
    try:
        from agents.memory import SQLiteSession
    except ImportError as exc:  # pragma: no cover - the bench extra is missing
        raise RuntimeError(
            "the peer, openai-agents, is not installed: pip install 'memvault[bench]'"
        ) from exc

    def say(text: str) -> None:
        if progress is not None:
            progress(text)

    say("generating the workload")
    work = make_workload(messages, threads, reads, seed)
    folder = _fresh_folder(db_dir)
    paths = {name: folder / f"{name}.db" for name in (*WRITERS, "floor_bulk")}
    try:
        result = await _measure(work, folder, paths, SQLiteSession, say, seed, concurrency, db)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if syscalls:
        say("counting fsyncs under strace")
        result["syscalls"] = count_syscalls(threads=threads, seed=seed, concurrency=concurrency,
                                            db_dir=db_dir)
    return result


WRITERS = ("memvault", "memvault_full", "peer", "peer_full", "floor", "floor_full")
"""The systems timed side by side (``floor_bulk`` runs after them)."""


async def _measure(
    work: Workload,
    folder: Path,
    paths: dict[str, Path],
    session_type: type[SQLiteSession],
    say: Callable[[str], None],
    seed: int,
    concurrency: int,
    db: str | None = None,
) -> dict[str, Any]:
    say("opening the stores")
    mine = {f"memvault{suffix}": _Memvault(await Memory.open(
        f"sqlite:///{paths['memvault' + suffix]}?durability={level.lower()}"), work, concurrency)
        for suffix, level in DURABILITIES.items()}
    other = _Memvault(await Memory.open(db), work, concurrency) if db else None
    start = time.perf_counter()
    peer_types = {suffix: _peer_type(session_type, level) for suffix, level in DURABILITIES.items()}
    peers = {f"peer{suffix}": _Peer([kind(session_id=t, db_path=paths["peer" + suffix])
                                     for t in work.thread_ids], work, concurrency)
             for suffix, kind in peer_types.items()}
    peer_setup = (time.perf_counter() - start) / len(peers)
    floors = {f"floor{suffix}": _Floor(paths["floor" + suffix], work, level)
              for suffix, level in DURABILITIES.items()}
    bulk = _Floor(paths["floor_bulk"], work)
    systems: dict[str, _Memvault | _Peer | _Floor] = {**mine, **peers, **floors}
    try:
        writers = {name: systems[name].write for name in WRITERS}
        if other is not None:
            writers["memvault_db"] = other.write
        writes = await _interleave(writers, work.turns, WRITE_BLOCK, say, "writing turns")
        say("writing the floor's single transaction")
        bulk_seconds = bulk.write_bulk(work.turns)
        readers = {name: systems[name].read for name in WRITERS}
        readers["memvault_history"] = mine["memvault"].history
        if other is not None:
            readers["memvault_db"] = other.read
        reads = await _interleave(readers, work.reads, READ_BLOCK, say, "reading threads")
        bad_reads = {name: systems[name].bad_reads for name in WRITERS}
        if other is not None:
            bad_reads["memvault_db"] = other.bad_reads
            say("counting what memvault stored in --db")
            db_stored = await _stored_through(other.memory, work)
        # SQLiteSession keeps one connection per worker thread it ran on (information only).
        peer_connections = sum(len(getattr(s, "_connections", ()))
                               for p in peers.values() for s in p.sessions) // len(peers)
    finally:
        for memvault in mine.values():
            await memvault.memory.close()
        if other is not None:
            await other.memory.close()
        for peer in peers.values():
            for session in peer.sessions:
                session.close()
        for floor in (*floors.values(), bulk):
            floor.conn.close()

    say("counting what each system stored")
    stored = {
        name: _stored(path, "agent_messages" if name.startswith("peer") else "messages",
                      "session_id" if name.startswith("peer") else "thread_id")
        for name, path in paths.items()
    }
    same_rows = _same_rows(paths["memvault"], paths["floor"], work)
    peer_synchronous = {"peer" + suffix: sorted(getattr(kind, "applied", set()))
                        for suffix, kind in peer_types.items()}
    result = _result(work, folder, paths, writes, bulk_seconds, reads, bad_reads, stored,
                     same_rows, peer_setup, peer_connections, seed, concurrency)
    result["peer_synchronous_applied"] = peer_synchronous
    if db:
        seconds, turns = writes["memvault_db"]
        read = reads["memvault_db"][1]
        sqlite = result["systems"]["memvault"]
        result["systems"]["memvault_db"] = {
            "url": _without_password(db),
            "messages_per_s": round(work.messages / seconds, 1),
            "read_p50_ms": _ms(statistics.median(read)),
            "read_p99_ms": _ms(_percentile(read, 0.99)),
            "write_s": round(seconds, 3),
            "turn_p50_ms": _ms(statistics.median(turns)),
            "turn_p99_ms": _ms(_percentile(turns, 0.99)),
            "stored": db_stored,
            "bad_reads": bad_reads["memvault_db"],
        }
        result["db_over_sqlite"] = {
            "write": round(work.messages / seconds / sqlite["messages_per_s"], 3),
            "read_p50": round(_ms(statistics.median(read)) / sqlite["read_p50_ms"], 3),
        }
    return result


async def _stored_through(memory: Memory, work: Workload) -> dict[str, int]:
    """Messages and threads memvault holds for the workload, read through its API."""
    messages = 0
    for thread, resource in zip(work.thread_ids, work.resource_ids, strict=True):
        messages += len(await memory.get_messages(thread_id=thread, resource_id=resource))
    return {"messages": messages, "threads": len(work.thread_ids)}


def _without_password(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def _result(
    work: Workload,
    folder: Path,
    paths: dict[str, Path],
    writes: dict[str, tuple[float, Latencies]],
    bulk_seconds: float,
    reads: dict[str, tuple[float, Latencies]],
    bad_reads: dict[str, int],
    stored: dict[str, dict[str, int]],
    same_rows: bool,
    peer_setup: float,
    peer_connections: int,
    seed: int,
    concurrency: int,
) -> dict[str, Any]:
    n = work.messages
    systems: dict[str, dict[str, Any]] = {}
    for name in WRITERS:
        seconds, turn_latencies = writes[name]
        read_latencies = reads[name][1]
        size = _size(paths[name])
        systems[name] = {
            "messages_per_s": round(n / seconds, 1),
            "read_p50_ms": _ms(statistics.median(read_latencies)),
            "read_p99_ms": _ms(_percentile(read_latencies, 0.99)),
            "write_s": round(seconds, 3),
            "turn_p50_ms": _ms(statistics.median(turn_latencies)),
            "turn_p99_ms": _ms(_percentile(turn_latencies, 0.99)),
            "stored": stored[name],
            "bad_reads": bad_reads[name],
            "file_bytes": size,
            "file_bytes_per_message": round(size / n, 1),
        }
    history = reads["memvault_history"][1]
    systems["memvault"]["history_p50_ms"] = _ms(statistics.median(history))
    systems["memvault"]["history_p99_ms"] = _ms(_percentile(history, 0.99))
    bulk_size = _size(paths["floor_bulk"])
    systems["floor_bulk"] = {
        "messages_per_s": round(n / bulk_seconds, 1),
        "read_p50_ms": None,
        "read_p99_ms": None,
        "write_s": round(bulk_seconds, 3),
        "stored": stored["floor_bulk"],
        "file_bytes": bulk_size,
        "file_bytes_per_message": round(bulk_size / n, 1),
    }
    for name in ("peer", "peer_full"):
        systems[name]["setup_s"] = round(peer_setup, 3)
        systems[name]["connections"] = peer_connections

    def ratios(suffix: str) -> dict[str, float]:
        mv, peer, floor = (systems[name + suffix] for name in ("memvault", "peer", "floor"))
        return {
            "write_memvault_over_peer": round(mv["messages_per_s"] / peer["messages_per_s"], 3),
            "write_floor_over_memvault": round(floor["messages_per_s"] / mv["messages_per_s"], 3),
            "read_p50_memvault_over_peer": round(mv["read_p50_ms"] / peer["read_p50_ms"], 3),
            "file_bytes_memvault_over_peer": round(mv["file_bytes"] / peer["file_bytes"], 3),
        }

    goals = targets(concurrency)

    def met(values: dict[str, float]) -> dict[str, bool]:
        return {name: (values[name] >= bound if op == ">=" else values[name] <= bound)
                for name, (op, bound) in goals.items()}

    counts_ok = all(s == {"messages": n, "threads": len(work.thread_ids)} for s in stored.values())
    main, with_full = ratios(""), ratios("_full")
    return {
        "benchmark": "store",
        "config": {
            "messages": n,
            "threads": len(work.thread_ids),
            "turns": len(work.turns),
            "reads": len(work.reads),
            "seed": seed,
            "concurrency": concurrency,
            "user_chars": list(USER_CHARS),
            "assistant_chars": list(ASSISTANT_CHARS),
            "read_last_n": LAST_N,
            "write_block_turns": WRITE_BLOCK,
            "read_block": READ_BLOCK,
            "db_dir": str(folder),
            "write_unit": "each save_messages / add_items call returns after its turn is "
                          "committed; with concurrency 1 that is one transaction per turn; with "
                          "more, memvault's group commit lets concurrent turns share one "
                          "(the peer commits each call alone). floor: one transaction per "
                          "turn, sequential; floor_bulk: all turns in one transaction",
            "concurrency_meaning": "memvault and the peer serve this many conversations at "
                                   "once (asyncio tasks; each conversation's turns in order); "
                                   "the floor is sequential raw sqlite3",
            "durability": {
                "memvault": "WAL, synchronous=NORMAL (durability=normal, the default)",
                "memvault_full": "WAL, synchronous=FULL (durability=full: fsync per commit)",
                "peer": "WAL, synchronous=NORMAL (set by the bench on each connection)",
                "peer_full": "WAL, synchronous=FULL (SQLite's default; set explicitly)",
                "floor": "WAL, synchronous=NORMAL (memvault's schema and pragmas)",
                "floor_full": "WAL, synchronous=FULL (memvault's schema and pragmas)",
            },
            "file_bytes": "database + WAL after PRAGMA wal_checkpoint(TRUNCATE), per file",
            "peer_usage": "one SQLiteSession(session_id=thread, db_path=file) per thread, all "
                          "created before timing (setup_s) and reused, so each keeps its "
                          "per-worker-thread connections; add_items([user, assistant]) per turn, "
                          "get_items(limit=20) per read, on the loop's default executor",
            "memvault_usage": "save_messages([Message.user, Message.assistant]) per turn, "
                              "building the Message objects inside the timed call; "
                              "get_messages(last_n=20) per read, get_history(last_n=20) reported "
                              "as history_*",
            "floor_reads": "SELECT of the newest 20 rows + json.loads of parts and metadata, "
                           "synchronous, no worker thread",
            "order": "systems take turns in blocks, rotating which goes first",
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": sys.version.split()[0],
                "sqlite": sqlite3.sqlite_version,
                "memvault": _version("memvault"),
                "openai_agents": _version("openai-agents"),
            },
        },
        "systems": systems,
        "ratios": main,
        "ratios_durability_full": with_full,
        "targets": {name: f"{op} {bound:g}" for name, (op, bound) in goals.items()},
        "targets_met": met(main),
        "targets_met_durability_full": met(with_full),
        "counts_ok": counts_ok,
        "reads_ok": not any(bad_reads.values()),
        "same_rows_memvault_floor": same_rows,
    }


def count_syscalls(
    *, threads: int = 1000, seed: int = 1, concurrency: int = 1, turns: int = COUNTED_TURNS,
    db_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Per system and durability, the fsyncs (``fsync`` + ``fdatasync``) and the bytes written
    (``pwrite``: WAL frames, and checkpoints into the database file) per turn, over ``turns``
    turns of the workload written after a warm-up of :data:`COUNTED_WARMUP` turns, each system
    in its own child process under ``strace`` (:mod:`memvault.bench.syscalls`). memvault and
    the peer serve ``concurrency`` conversations at once, as in the timed run.

    The turns go to at most :data:`COUNTED_THREADS` threads: the peer opens a connection per
    session and executor thread on first use, and each new connection syncs the WAL and its
    folder once; with few sessions the warm-up opens them all, so the count is that of the
    steady state (in the timed run they are opened once per session and thread, over ~100
    turns per session)."""
    messages = 2 * (turns + COUNTED_WARMUP)
    threads = max(1, min(threads, COUNTED_THREADS))
    out: dict[str, Any] = {"method": "strace -f -e trace=fsync,fdatasync,pwrite64 on a child "
                                     "process, counted between markers (open, warm-up and close "
                                     "left out)",
                           "turns": turns, "warmup_turns": COUNTED_WARMUP, "threads": threads,
                           "concurrency": concurrency, "systems": {}}
    for name in WRITERS:
        folder = _fresh_folder(db_dir)
        try:
            counted = strace.count(["-m", "memvault.bench.store", name, str(messages),
                                      str(threads), str(seed), str(concurrency), str(folder)])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if isinstance(counted, str):
            out["systems"][name] = None
            out["unavailable"] = counted
            continue
        out["systems"][name] = {"fsyncs_per_turn": round(counted.syncs / turns, 3),
                                "bytes_written_per_turn": round(counted.written_bytes / turns)}
    return out


async def _counted_child(name: str, messages: int, threads: int, seed: int, concurrency: int,
                         folder: Path) -> None:
    """The child of :func:`count_syscalls`: system ``name`` writes the workload's first
    :data:`COUNTED_WARMUP` turns, then the rest between the markers."""
    from agents.memory import SQLiteSession

    work = make_workload(messages, threads, 1, seed)
    level = "FULL" if name.endswith("_full") else "NORMAL"
    path = folder / f"{name}.db"
    system: _Memvault | _Peer | _Floor
    if name.startswith("memvault"):
        system = _Memvault(await Memory.open(f"sqlite:///{path}?durability={level.lower()}"), work,
                           concurrency)
    elif name.startswith("peer"):
        kind = _peer_type(SQLiteSession, level)
        system = _Peer([kind(session_id=t, db_path=path) for t in work.thread_ids], work, concurrency)
    else:
        system = _Floor(path, work, level)
    await system.write(work.turns[:COUNTED_WARMUP])
    strace.mark(strace.START)
    await system.write(work.turns[COUNTED_WARMUP:])
    strace.mark(strace.END)
    if isinstance(system, _Memvault):
        await system.memory.close()


def run(
    *,
    messages: int = 100_000,
    threads: int = 1000,
    reads: int = 2000,
    db_dir: str | Path | None = None,
    seed: int = 1,
    concurrency: int = 1,
    db: str | None = None,
    syscalls: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """:func:`measure` on a new event loop."""
    return asyncio.run(measure(messages=messages, threads=threads, reads=reads, db_dir=db_dir,
                               seed=seed, concurrency=concurrency, db=db, syscalls=syscalls,
                               progress=progress))


if __name__ == "__main__":  # the counted child of count_syscalls
    _name, _messages, _threads, _seed, _concurrency, _folder = sys.argv[1:7]
    asyncio.run(_counted_child(_name, int(_messages), int(_threads), int(_seed), int(_concurrency),
                               Path(_folder)))
