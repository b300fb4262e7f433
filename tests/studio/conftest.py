"""The Studio's end-to-end fixtures: a seeded SQLite file, ``memvault studio`` serving it on a
free port, and headless Chromium from Debian's packages driven by Playwright (no browser
download: the tests skip, saying why, when ``/usr/bin/chromium`` is absent)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from memvault import Memory, MemoryOptions, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from processes import stop

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
XSS = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>window.pwned = 1</script>"
RTL = "\u202eevil.exe\u202c שלום"  # a right-to-left override, then Hebrew
EMOJI = "🧠👩🏽‍💻"
HOSTILE_TITLE = f"{SCRIPT} {RTL} {EMOJI}"
HOSTILE_TEXT = f"{XSS} {SCRIPT} {RTL} {EMOJI} end"
LONG = 1200  # messages in dave's long thread
WORKING_MEMORY = "# User\n- Name: Alice\n- Likes: green tea, Lisbon\n"
T = TypeVar("T")
URL_PATTERN = re.compile(r"http://127\.0\.0\.1:\d+/studio/#key=\S+")


@dataclass
class Seeded:
    """What the seed wrote: the database URL and the ids the tests look for."""

    db_url: str
    trip_thread: str = "trip-lisbon"
    xss_thread: str = "odd-input"
    garden_thread: str = "bob-garden"
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion in a thread of its own: Playwright's sync API keeps an
    event loop running in the test's thread, where ``asyncio.run`` is refused."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _at(day: int, minute: int) -> datetime:
    return datetime(2026, 5, day, 9, 0, tzinfo=UTC) + timedelta(minutes=minute)


async def _seed(db_url: str) -> Seeded:
    seeded = Seeded(db_url)
    memory = await Memory.open(db_url)
    try:
        await memory.create_thread(resource_id="alice", thread_id=seeded.trip_thread, title="Trip to Lisbon")
        await memory.save_messages([
            Message.user("I'm going to Lisbon in May. What's the weather like then?", created_at=_at(2, 0)),
            Message(role="assistant", created_at=_at(2, 1), parts=[
                ReasoningPart(text="The user asks about Lisbon in May: look the climate up with the tool."),
                ToolCallPart(tool_call_id="call_weather_1", name="get_weather",
                             args={"city": "Lisbon", "month": "May"}),
                ToolResultPart(tool_call_id="call_weather_1", name="get_weather",
                               output={"avg_high_c": 22, "rain_days": 6}),
                TextPart(text="Lisbon in May is mild: about 22 °C in the afternoon and 6 rainy days."),
            ]),
            Message.user("Lovely. Remember that I drink green tea, not coffee.", created_at=_at(2, 3)),
            Message.assistant("Noted: green tea, no coffee.", created_at=_at(2, 4)),
        ], thread_id=seeded.trip_thread, resource_id="alice")
        await memory.create_thread(resource_id="alice", thread_id=seeded.xss_thread, title=f"Odd {XSS}")
        await memory.save_messages([
            Message.user(f"Please store this exactly: {XSS}", created_at=_at(3, 0)),
            Message.assistant("Stored, as plain text.", created_at=_at(3, 1)),
        ], thread_id=seeded.xss_thread, resource_id="alice")
        await memory.create_thread(resource_id="alice", thread_id="hostile", title=HOSTILE_TITLE)
        await memory.save_messages([Message.user(HOSTILE_TEXT, id="hostile-1", created_at=_at(3, 5))],
                                   thread_id="hostile", resource_id="alice")
        await memory.update_working_memory(WORKING_MEMORY, resource_id="alice", mode="replace")

        await memory.create_thread(resource_id="bob", thread_id=seeded.garden_thread, title="Bob's garden")
        await memory.save_messages([
            Message.user("When should I plant tomatoes?", created_at=_at(4, 0)),
            Message.assistant("After the last frost, when nights stay above 10 °C.", created_at=_at(4, 1)),
        ], thread_id=seeded.garden_thread, resource_id="bob")

        for n in range(22):  # more than a page of threads (the Studio asks for 20)
            await memory.create_thread(resource_id="carol", thread_id=f"carol-{n:02d}", title=f"Chat {n:02d}")
        # many pages of messages (the Studio loads 200 at a time)
        await memory.create_thread(resource_id="dave", thread_id="dave-long", title="A long chat")
        await memory.save_messages([Message.user(f"line {n}", id=f"d{n:04d}") for n in range(1, LONG + 1)],
                                   thread_id="dave-long", resource_id="dave")
        await _seed_erin(memory)
        # a tool call (#50) and its result (#51) on both sides of the newest page's edge
        split = [Message.user(f"step {n}", id=f"g{n:03d}") for n in range(1, 251)]
        split[49] = Message(role="assistant", id="g050", parts=[
            ToolCallPart(tool_call_id="call_edge", name="lookup", args={"q": "edge"})])
        split[50] = Message(role="tool", id="g051", parts=[
            ToolResultPart(tool_call_id="call_edge", name="lookup", output={"found": "the edge"})])
        await memory.create_thread(resource_id="gina", thread_id="split", title="Split pair")
        await memory.save_messages(split, thread_id="split", resource_id="gina")
        # a thread id that is also a route's name (GET /v1/threads/count)
        await memory.create_thread(resource_id="frank", thread_id="count", title="A thread named count")
        await memory.save_messages([Message.user("Where is the harbour?", id="f1")], thread_id="count",
                                   resource_id="frank")
    finally:
        await memory.close()
    seeded.counts = {"alice": {"threads": 3, "messages": 7}, "bob": {"threads": 1, "messages": 2},
                     "carol": {"threads": 22, "messages": 0}, "dave": {"threads": 1, "messages": LONG},
                     "erin": {"threads": 3, "messages": 7}, "frank": {"threads": 1, "messages": 1},
                     "gina": {"threads": 1, "messages": 250}}
    return seeded


async def _seed_erin(memory: Memory) -> None:
    """erin: a tool call whose result was stored in a later ``tool`` message, a thread to rename
    and one to delete messages from; titles and metadata for the thread filter."""
    await memory.create_thread(resource_id="erin", thread_id="erin-tools", title="Weather check",
                               metadata={"project": "travel", "team": "ops"})
    await memory.save_messages([
        Message(role="assistant", id="e-call", created_at=_at(5, 0), parts=[
            ToolCallPart(tool_call_id="call_w2", name="get_weather", args={"city": "Porto"})]),
        Message(role="tool", id="e-result", created_at=_at(5, 1), parts=[
            ToolResultPart(tool_call_id="call_w2", name="get_weather",
                           output={"sky": "clear", "high_c": 19})]),
        Message.assistant("Porto will be clear, about 19 °C.", id="e-answer", created_at=_at(5, 2)),
    ], thread_id="erin-tools", resource_id="erin")
    await memory.create_thread(resource_id="erin", thread_id="erin-notes", title="Notes to tidy",
                               metadata={"project": "home"})
    notes = [Message.user(f"note {n}", id=f"note-{n}", created_at=_at(6, n)) for n in (1, 2, 3)]
    await memory.save_messages(notes, thread_id="erin-notes", resource_id="erin")
    await memory.create_thread(resource_id="erin", thread_id="erin-plan", title="Travel plan 100%_done",
                               metadata={"project": "travel"})
    await memory.save_messages([Message.user("Book the train to Porto.", created_at=_at(7, 0))],
                               thread_id="erin-plan", resource_id="erin")


@dataclass
class Studio:
    """A running ``memvault studio``: the URL it printed (with its admin key) and its output."""

    url: str
    base: str
    db_url: str
    seeded: Seeded
    output: list[str]

    @property
    def key(self) -> str:
        return self.url.split("#key=", 1)[1]

    def memory_call(self, name: str, options: MemoryOptions | None = None, **kwargs: Any) -> Any:
        """Call a method of a :class:`Memory` opened on the Studio's database, from the test."""

        async def run() -> Any:
            memory = await Memory.open(self.db_url, options=options)
            try:
                return await getattr(memory, name)(**kwargs)
            finally:
                await memory.close()

        return run_async(run)

    def cli(self, *args: str) -> str:
        """Run ``memvault ARGS --db <the Studio's database>``; its standard output."""
        done = subprocess.run([sys.executable, "-m", "memvault", *args, "--db", self.db_url],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout


Started = tuple[subprocess.Popen[str], queue.Queue[str], list[str]]


def _start(command: list[str], env: dict[str, str]) -> Started:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def drain() -> None:  # keeps reading, so the server never blocks on a full pipe
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            lines.put(line)

    threading.Thread(target=drain, daemon=True).start()
    return process, lines, output


def _serves(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1, trust_env=False).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def _launched(
    db_url: str, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str, list[str]]]:
    """``memvault studio --db DB_URL --port 0 EXTRA...`` running: the URL it printed, its base,
    and its output so far."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    command = [sys.executable, "-m", "memvault", "studio", "--db", db_url, "--port", "0", *extra]
    process, lines, output = _start(command, env)
    try:
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if process.poll() is not None:
                    break
                continue
            if match := URL_PATTERN.search(line):
                url = match.group(0)
        if url is None:
            pytest.fail(f"`memvault studio` printed no Studio URL; its output:\n{''.join(output)}")
        base = url.split("/studio/", 1)[0]
        while not _serves(f"{base}/studio/"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"`memvault studio` does not serve the page; its output:\n{''.join(output)}")
            time.sleep(0.1)
        yield url, base, output
    finally:
        stop(process)


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """``memvault studio --db sqlite:///... --port 0`` (any free port), started as a user would;
    the URL it prints (with its admin key) is the one the tests open."""
    db_url = f"sqlite:///{tmp_path_factory.mktemp('studio') / 'memvault.db'}"
    seeded = run_async(lambda: _seed(db_url))
    with _launched(db_url) as (url, base, output):
        yield Studio(url=url, base=base, db_url=db_url, seeded=seeded, output=output)


@dataclass
class Opened:
    """A ``memvault studio --open`` run whose browser is a recorder: the URL the Studio printed,
    and the command line the browser was launched with."""

    url: str
    base: str
    browser_argv: list[str]


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    """``memvault studio --open`` with ``BROWSER`` set to a script that records its command line
    (what ``ps`` would show of the browser) and exits."""
    folder = tmp_path_factory.mktemp("opened")
    record = folder / "argv.json"
    browser = folder / "browser"
    browser.write_text(f"#!{sys.executable}\nimport json, sys\n"
                       f"open({str(record)!r}, 'w').write(json.dumps(sys.argv))\n")
    browser.chmod(0o755)
    db_url = f"sqlite:///{folder / 'memvault.db'}"
    with _launched(db_url, "--open", env={"BROWSER": f"{browser} %s"}) as (url, base, _):
        deadline = time.monotonic() + 30
        while not record.exists():
            assert time.monotonic() < deadline, "the browser was not launched"
            time.sleep(0.05)
        time.sleep(0.1)
        yield Opened(url=url, base=base, browser_argv=json.loads(record.read_text()))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install Debian's chromium package to run the Studio tests")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watched:
    """A page, with what it tried to do: dialogs opened (dismissed unless ``accept_dialogs``),
    requests made, uncaught script errors."""

    page: Any
    dialogs: list[str]
    accept_dialogs: bool
    requests: list[str]
    errors: list[str]


@pytest.fixture
def watched(browser: Any, studio: Studio) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    seen = Watched(page=page, dialogs=[], accept_dialogs=False, requests=[], errors=[])

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(f"{dialog.type}: {dialog.message}")
        if seen.accept_dialogs:
            dialog.accept()
        else:
            dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("request", lambda request: seen.requests.append(request.url))
    page.on("pageerror", lambda error: seen.errors.append(str(error)))
    try:
        yield seen
    finally:
        context.close()
    # whatever the test did: the page loaded nothing from elsewhere and raised no script error
    outside = [url for url in seen.requests if not url.startswith(f"{studio.base}/")]
    assert not outside, f"the page requested other origins: {outside}"
    assert not seen.errors, f"script errors in the page: {seen.errors}"
