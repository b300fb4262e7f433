"""``memvault bench api``: the HTTP API under load, over keep-alive connections on loopback.

Real server processes, separate from the load generator (so client and server share no GIL):

- **the API**: ``python -m memvault serve --db URL --port 0``, the production command, with its
  uvicorn settings (:func:`memvault.server.run.config`: access log at ``info`` included);
- **the floor**: a bare FastAPI app of one unauthenticated route (``GET /floor``, ``{"ok":
  true}``) served by the same uvicorn settings in its own process (``python -m
  memvault.bench.api floor``): what the server stack costs before memvault does anything. It
  lives here, never in the production app.

Layouts: ``sqlite`` (one process over a SQLite file) and, given a PostgreSQL URL, ``postgres_1``
(one process) and ``postgres_N`` (``processes`` processes over the same fresh schema, each on
its own port, the connections spread round-robin): how app instances scale out. Each layout
gets a fresh store (a temporary file, or a schema ``bench_api_<random>`` dropped afterwards),
one resource key for reads (a seeded thread of ``seed_messages`` messages) and one for writes.

Routes: the floor, ``GET /v1/me``, ``GET /v1/threads/{t}/messages?last_n=20``, ``POST
/v1/threads/{t}/messages`` (one message per request, each with a unique id, each connection on
its own thread of the writing resource) and ``POST /v1/recall`` (words only). Each runs at each
concurrency level: that many keep-alive connections, each sending its requests one after the
other (a closed loop), with a warm-up first. The client is a minimal asyncio HTTP/1.1 client
(one request per connection at a time, ``Content-Length`` bodies); its CPU share (``client_cpu``,
in cores), the servers' (``servers_cpu``) and the whole machine's (``machine_cpu``: PostgreSQL
included), from ``/proc``, are reported per cell, so a saturated client or machine shows.

After each layout the writing resource is counted: the distinct message ids stored must equal
the acknowledged posts (``lost``, ``duplicated`` and ``unacknowledged`` are reported).

:func:`run` returns the result as a JSON-ready dict; the targets are checked against the
measurements, never assumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import memvault
from memvault.bench.schemas import drop_schema, fresh_name, with_schema
from memvault.memory import Memory
from memvault.model import Message

HOST = "127.0.0.1"
ROUTES = ("floor", "me", "get_messages", "post_messages", "recall")
LAST_N = 20
READER, WRITER = "bench-reader", "bench-writer"
SEEDED_THREAD = "seeded"
START_TIMEOUT = 60.0
REQUEST_TIMEOUT = 60.0
#: The issue's targets: each route's p50 at concurrency 1 within this many times the floor's,
#: and under this many milliseconds; N processes over PostgreSQL at least this many times one
#: process's requests per second for ``POST .../messages``.
FLOOR_RATIO_MAX = 3.0
P50_MAX_MS = 10.0
SCALE_OUT_MIN = 2.5

_WORDS = (
    "the of and to in is you that it was for on are as with they at be this have from or one had "
    "by word but not what all were we when your can said there use each which she do how their "
    "if will up other about out many then them these so some her would make like him into time "
    "has look two more write go see number no way could people my than first water been call "
    "who oil now find long down day did get come made may part over new sound take only little "
    "work know place year live me back give most very after thing our just name good sentence "
    "man think say great where help through much before line right too mean old any same tell "
    "boy follow came want show also around form three small set put end does another well large "
    "must big even such because turn here why ask went men read need land different home us move "
    "try kind hand picture again change off play spell air away animal house point page letter "
    "mother answer found study still learn should america world quetzal xylophone harbour lantern"
).split()


# ----------------------------------------------------------------------------------------------
# The floor server (run in its own process: ``python -m memvault.bench.api floor``)


def floor_app() -> Any:
    """A bare FastAPI app: one unauthenticated route, ``GET /floor``. Benchmark only."""
    from fastapi import FastAPI

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/floor")
    async def floor() -> dict[str, bool]:
        return {"ok": True}

    return app


def serve_floor() -> None:
    """Serve :func:`floor_app` on a free loopback port with the API's uvicorn settings, after
    printing the same line ``memvault serve`` prints (with the port) to stderr."""
    import uvicorn

    from memvault.server.run import bind, config, port_of

    sock = bind(HOST, 0)
    print(f"memvault API on http://{HOST}:{port_of(sock)}/v1 (floor)", file=sys.stderr, flush=True)
    asyncio.run(uvicorn.Server(config(floor_app())).serve(sockets=[sock]))


# ----------------------------------------------------------------------------------------------
# Server processes


@dataclass
class _Server:
    process: subprocess.Popen[bytes]
    log: Path
    port: int = 0


def _environment() -> dict[str, str]:
    """This process's environment, with the folder memvault is imported from first on
    PYTHONPATH: the servers run the same code as the benchmark."""
    env = dict(os.environ)
    source = str(Path(memvault.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _start(argv: Sequence[str], folder: Path) -> _Server:
    log = folder / f"server-{uuid.uuid4().hex[:8]}.log"
    with log.open("wb") as err:
        process = subprocess.Popen([sys.executable, *argv], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err, env=_environment())
    return _Server(process, log)


def _wait_port(server: _Server) -> int:
    """The port from the server's first line on stderr (``... http://127.0.0.1:PORT/v1 ...``)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        text = server.log.read_text(errors="replace")
        marker = f"http://{HOST}:"
        if marker in text:
            server.port = int(text.split(marker, 1)[1].split("/", 1)[0])
            return server.port
        if server.process.poll() is not None:
            raise RuntimeError(f"the server exited ({server.process.returncode}): {text[-2000:]}")
        time.sleep(0.05)
    raise RuntimeError(f"the server did not start within {START_TIMEOUT:.0f} s")


def _stop(servers: Sequence[_Server]) -> None:
    for server in servers:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGINT)
    for server in servers:
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@contextlib.contextmanager
def _servers(argvs: Sequence[Sequence[str]], folder: Path) -> Iterator[list[_Server]]:
    servers: list[_Server] = []
    try:
        servers.extend(_start(argv, folder) for argv in argvs)
        for server in servers:
            _wait_port(server)
        yield servers
    finally:
        _stop(servers)


def _cpu_seconds(pids: Sequence[int]) -> float | None:
    """User + system CPU seconds of the processes so far (``None`` without ``/proc``)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _machine_busy() -> tuple[float, float] | None:
    """``(busy, total)`` CPU seconds of the whole machine so far, from ``/proc/stat``."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return (sum(values[:8]) - idle) / tick, sum(values[:8]) / tick


# ----------------------------------------------------------------------------------------------
# The load generator: a minimal HTTP/1.1 client over keep-alive connections


class _Connection:
    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        """Send one request (complete bytes), read the answer: ``(status, body)``."""
        assert self.reader is not None and self.writer is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
                break
        if length is None:
            raise RuntimeError(f"an answer without Content-Length: {head!r}")
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


def _get(path: str, key: str | None) -> bytes:
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    return f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n{auth}\r\n".encode()


def _post(path: str, key: str, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


@dataclass
class _Keys:
    reader: str
    writer: str


@dataclass
class _Route:
    """How a route's requests are made: ``make(connection index, request number)`` and the
    answer's expected status; posted ids (acknowledged by a 201) are collected in ``posted``."""

    make: Callable[[int, int], tuple[bytes, str | None]]
    status: int
    api: bool = True
    posted: list[str] = field(default_factory=list)


def _routes(keys: _Keys, tag: str) -> dict[str, _Route]:
    me = _get("/v1/me", keys.reader)
    history = _get(f"/v1/threads/{SEEDED_THREAD}/messages?last_n={LAST_N}", keys.reader)
    floor = _get("/floor", None)
    queries = [" ".join(random.Random(i).sample(_WORDS, 4)) for i in range(64)]
    recalls = [_post("/v1/recall", keys.reader, {"query": q, "thread_id": SEEDED_THREAD})
               for q in queries]

    def post(conn: int, n: int) -> tuple[bytes, str | None]:
        message_id = f"{tag}-{conn}-{n}-{uuid.uuid4().hex[:8]}"
        body = {"messages": [{"id": message_id, "role": "user",
                              "parts": [{"type": "text", "text": f"note {message_id}: {queries[n % 64]}"}]}]}
        return _post(f"/v1/threads/post-{conn}/messages", keys.writer, body), message_id

    return {
        "floor": _Route(lambda c, n: (floor, None), 200, api=False),
        "me": _Route(lambda c, n: (me, None), 200),
        "get_messages": _Route(lambda c, n: (history, None), 200),
        "post_messages": _Route(post, 201),
        "recall": _Route(lambda c, n: (recalls[(c + n) % len(recalls)], None), 200),
    }


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _drive(route: _Route, ports: Sequence[int], concurrency: int, requests: int,
                 warmup: int, pids: Sequence[int]) -> dict[str, Any]:
    """``requests`` requests (at least one per connection) over ``concurrency`` connections,
    connection ``i`` to ``ports[i % len(ports)]``, after ``warmup`` untimed ones per connection."""
    connections = [_Connection(ports[i % len(ports)]) for i in range(concurrency)]
    await asyncio.gather(*(c.open() for c in connections))
    per = max(1, -(-requests // concurrency))
    latencies: list[float] = []
    errors: list[str] = []

    async def one(index: int, conn: _Connection, number: int, timed: bool) -> None:
        raw, posted = route.make(index, number)
        start = time.perf_counter()
        status, body = await asyncio.wait_for(conn.request(raw), REQUEST_TIMEOUT)
        if timed:
            latencies.append(time.perf_counter() - start)
        if status != route.status:
            errors.append(f"{status}: {body[:200]!r}")
        elif posted is not None:
            route.posted.append(posted)

    async def loop(index: int, conn: _Connection, first: int, count: int, timed: bool) -> None:
        for number in range(first, first + count):
            await one(index, conn, number, timed)

    try:
        await asyncio.gather(*(loop(i, c, 0, warmup, False) for i, c in enumerate(connections)))
        cpu_server, cpu_client, machine = _cpu_seconds(pids), time.process_time(), _machine_busy()
        started = time.perf_counter()
        await asyncio.gather(*(loop(i, c, warmup, per, True) for i, c in enumerate(connections)))
        elapsed = time.perf_counter() - started
        cpu_client = time.process_time() - cpu_client
        after, machine_after = _cpu_seconds(pids), _machine_busy()
    finally:
        await asyncio.gather(*(c.close() for c in connections))
    if errors:
        raise RuntimeError(f"{len(errors)} unexpected answers, e.g. {errors[0]}")
    ms = [v * 1000 for v in latencies]
    return {
        "requests": len(ms),
        "requests_per_s": round(len(ms) / elapsed, 1),
        "p50_ms": round(statistics.median(ms), 3),
        "p99_ms": round(_percentile(ms, 0.99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "client_cpu": round(cpu_client / elapsed, 2),
        "servers_cpu": (None if cpu_server is None or after is None
                        else round((after - cpu_server) / elapsed, 2)),
        "machine_cpu": (None if machine is None or machine_after is None
                        else round((machine_after[0] - machine[0]) / elapsed, 2)),
    }


# ----------------------------------------------------------------------------------------------
# Layouts


async def _prepare(url: str, seed_messages: int, seed: int) -> _Keys:
    """Keys for the reading and the writing resource, and the seeded thread."""
    from memvault.server.keys import Keyring

    rng = random.Random(seed)
    async with await Memory.open(url) as memory:
        keyring = Keyring(memory)
        reader, _ = await keyring.create(resource_id=READER, name="bench reader")
        writer, _ = await keyring.create(resource_id=WRITER, name="bench writer")
        messages = []
        for i in range(seed_messages):
            text = " ".join(rng.choices(_WORDS, k=rng.randint(8, 60)))
            messages.append(Message.user(text) if i % 2 == 0 else Message.assistant(text))
        for start in range(0, len(messages), 100):
            await memory.save_messages(messages[start:start + 100], thread_id=SEEDED_THREAD,
                                       resource_id=READER)
    return _Keys(reader, writer)


async def _count(url: str, posted: Sequence[str]) -> dict[str, int]:
    """Stored against acknowledged posts of the writing resource."""
    stored: list[str] = []
    async with await Memory.open(url) as memory:
        rows = (await memory.stats(resource_id=WRITER))["messages"]
        cursor: str | None = None
        while True:
            page = await memory.list_threads(resource_id=WRITER, limit=100, cursor=cursor)
            for thread in page.threads:
                stored.extend(m.id for m in await memory.get_messages(
                    thread_id=thread.id, resource_id=WRITER))
            cursor = page.next_cursor
            if cursor is None:
                break
    acknowledged, distinct = set(posted), set(stored)
    return {
        "acknowledged": len(posted),
        "stored_rows": rows,
        "stored_distinct_ids": len(distinct),
        "lost": len(acknowledged - distinct),
        "duplicated": rows - len(distinct),
        "unacknowledged": len(distinct - acknowledged),
    }


def _layout(name: str, url: str, processes: int, *, folder: Path, concurrency: Sequence[int],
            requests: int, warmup: int, seed_messages: int, seed: int,
            progress: Callable[[str], None]) -> dict[str, Any]:
    progress(f"{name}: seeding")
    keys = asyncio.run(_prepare(url, seed_messages, seed))
    routes = _routes(keys, name)
    api = [["-m", "memvault", "serve", "--db", url, "--port", "0"]] * processes
    floors = [["-m", "memvault.bench.api", "floor"]] * processes
    cells: dict[str, dict[str, Any]] = {}
    with _servers(floors, folder) as floor_servers, _servers(api, folder) as api_servers:
        for route_name, route in routes.items():
            servers = api_servers if route.api else floor_servers
            ports, pids = [s.port for s in servers], [s.process.pid for s in servers]
            cells[route_name] = {}
            for level in concurrency:
                progress(f"{name}: {route_name} at concurrency {level}")
                cells[route_name][str(level)] = asyncio.run(
                    _drive(route, ports, level, requests, warmup, pids))
    progress(f"{name}: counting")
    counts = asyncio.run(_count(url, routes["post_messages"].posted))
    low = str(min(concurrency))
    floor_p50 = cells["floor"][low]["p50_ms"]
    ratios = {r: round(cells[r][low]["p50_ms"] / floor_p50, 2) for r in ROUTES if r != "floor"}
    return {"processes": processes, "routes": cells, "p50_over_floor": ratios,
            "at_concurrency": int(low), "counts": counts}


def run(
    *,
    postgres: str | None = None,
    concurrency: Sequence[int] = (1, 16, 64),
    requests: int = 2000,
    warmup: int = 20,
    processes: int = 4,
    seed_messages: int = 200,
    seed: int = 1,
    sqlite: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure every layout (see the module) and return the JSON-ready result."""
    say = progress or (lambda text: None)
    concurrency = sorted(set(concurrency))
    layouts: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="memvault-bench-api-") as tmp:
        folder = Path(tmp)

        def measure(name: str, url: str, count: int) -> dict[str, Any]:
            return _layout(name, url, count, folder=folder, concurrency=concurrency, requests=requests,
                           warmup=warmup, seed_messages=seed_messages, seed=seed, progress=say)

        if sqlite:
            layouts["sqlite"] = measure("sqlite", f"sqlite:///{folder / 'bench.db'}", 1)
        if postgres is not None:
            for count in dict.fromkeys((1, processes)):
                schema = fresh_name("bench_api")
                try:
                    layouts[f"postgres_{count}"] = measure(f"postgres_{count}",
                                                           with_schema(postgres, schema), count)
                finally:
                    asyncio.run(drop_schema(postgres, schema))
    return _result(layouts, postgres=postgres, concurrency=concurrency, requests=requests,
                   warmup=warmup, processes=processes, seed_messages=seed_messages)


def _result(layouts: dict[str, dict[str, Any]], *, postgres: str | None, concurrency: Sequence[int],
            requests: int, warmup: int, processes: int, seed_messages: int) -> dict[str, Any]:
    low, high = str(min(concurrency)), str(max(concurrency))
    targets: dict[str, Any] = {}
    met: dict[str, bool] = {}
    for name, layout in layouts.items():
        for route, ratio in layout["p50_over_floor"].items():
            met[f"{name}.{route}.p50_within_{FLOOR_RATIO_MAX:g}x_floor"] = ratio <= FLOOR_RATIO_MAX
            met[f"{name}.{route}.p50_under_{P50_MAX_MS:g}ms"] = (
                layout["routes"][route][low]["p50_ms"] <= P50_MAX_MS)
        met[f"{name}.nothing_lost_or_duplicated"] = (
            layout["counts"]["lost"] == 0 and layout["counts"]["duplicated"] == 0)
    scale: dict[str, Any] | None = None
    one, many = layouts.get("postgres_1"), layouts.get(f"postgres_{processes}")
    if one is not None and many is not None and processes > 1:
        per_level = {level: round(many["routes"]["post_messages"][level]["requests_per_s"]
                                  / one["routes"]["post_messages"][level]["requests_per_s"], 2)
                     for level in map(str, concurrency)}
        scale = {"route": "post_messages", "processes": processes, "ratio_per_concurrency": per_level,
                 "ratio": per_level[high], "at_concurrency": int(high)}
        met[f"postgres_{processes}_over_postgres_1.post_messages"] = per_level[high] >= SCALE_OUT_MIN
    targets = {
        "p50_over_floor": f"<= {FLOOR_RATIO_MAX:g} at concurrency {low}",
        "p50_ms": f"<= {P50_MAX_MS:g} at concurrency {low}",
        "scale_out": f"postgres_{processes} >= {SCALE_OUT_MIN:g}x postgres_1 requests/s of "
                     f"post_messages at concurrency {high}",
        "counts": "lost == duplicated == 0",
    }
    return {
        "benchmark": "api",
        "config": {
            "concurrency": list(concurrency), "requests_per_cell": requests,
            "warmup_per_connection": warmup, "processes": processes, "seed_messages": seed_messages,
            "last_n": LAST_N, "postgres": postgres is not None,
            "client": "asyncio HTTP/1.1, one keep-alive connection per concurrent caller, closed loop",
            "server": "python -m memvault serve (uvicorn, h11, access log at info); floor: a bare "
                      "FastAPI route with the same uvicorn settings, in its own process",
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "python": platform.python_version()},
        },
        "layouts": layouts,
        "scale_out": scale,
        "targets": targets,
        "targets_met": met,
    }


if __name__ == "__main__":
    if sys.argv[1:] == ["floor"]:
        with contextlib.suppress(KeyboardInterrupt):
            serve_floor()
    else:
        sys.exit("usage: python -m memvault.bench.api floor")
