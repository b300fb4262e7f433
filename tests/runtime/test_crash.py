"""Crash tests: a real child process streams a turn into a real SQLite file and is SIGKILLed.

The child runs :mod:`tests.runtime.crash_turn` (see its doc for the lines it prints). The test
kills it right after event ``k`` for a spread of ``k``, and at random times, then opens the file
and checks what a crash may leave behind:

- no message holds a tool call without its result;
- ids are unique, ``seq`` grows, and the messages are a prefix of the turn's order;
- every stored message is a version the turn really had (as the ``dangling`` policy saves it);
- every write the child acknowledged (``saved`` lines) is there, at that version or newer;
- at most the debounce window is lost: a message that was saveable throughout the events from
  ``WINDOW`` seconds before the kill on is stored at a version at least that recent.

Then it reruns the same turn (same turn id, so the same message ids) to completion and checks the
store holds exactly the full conversation, without duplicates. The parent replays the script
through a buffer to know every state of the turn.
"""

from __future__ import annotations

import asyncio
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.runtime import ConversationBuffer

from .crash_turn import EVENTS, ORDER, RESOURCE, THREAD, TURN, apply, digest, run_turn

CHILD = Path(__file__).with_name("crash_turn.py")
DELAY, DEBOUNCE = 0.035, 0.05
WINDOW = DEBOUNCE + 1.0  # the debounce, plus generous room for a slow write on a busy machine
LAST = len(EVENTS) - 1
UNKNOWN_TIME = float("inf")  # lines read after the kill: printed before it, but when is unknown


@dataclass
class Replay:
    """Every state of the scripted turn, and the version of each message the policy may save."""

    dangling: str
    states: list[list[Message]] = field(default_factory=list)
    saveable: list[dict[str, Message | None]] = field(default_factory=list)
    versions: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # id -> digest -> events

    def __post_init__(self) -> None:
        buffer = ConversationBuffer(THREAD, RESOURCE, turn_id=TURN)
        for j, event in enumerate(EVENTS):
            apply(buffer, event)
            dangling = {c.tool_call_id for c in buffer.pending_tool_calls()}
            self.states.append(buffer.messages)
            self.saveable.append({m.id: self._saveable(m, dangling) for m in buffer.messages})
            for message_id, version in self.saveable[-1].items():
                if version is not None:
                    self.versions.setdefault(message_id, {}).setdefault(digest(version), []).append(j)

    def _saveable(self, message: Message, dangling: set[str]) -> Message | None:
        parts = [p for p in message.parts if getattr(p, "tool_call_id", None) not in dangling
                 or p.type == "tool-result"]
        if len(parts) == len(message.parts):
            return message
        if self.dangling == "hold" or not parts:
            return None
        return message.model_copy(update={"parts": parts})

    def free(self, j: int, message_id: str) -> bool:
        """At event ``j``, nothing holds ``message_id`` back: it and every message before it can
        be saved (conservative: a held earlier message may not really block it)."""
        for message in self.states[j]:
            if self.saveable[j][message.id] is None:
                return False
            if message.id == message_id:
                return True
        raise AssertionError(f"{message_id} is not in the state after event {j}")


@dataclass
class Run:
    lines: list[tuple[float, str]]
    killed_at: float | None
    returncode: int
    stderr: str

    def events(self) -> list[tuple[float, int]]:
        return [(t, int(line.split()[1])) for t, line in self.lines if line.startswith("event ")]

    def describe(self) -> str:
        return " | ".join(line for _, line in self.lines)


async def run_child(db: Path, dangling: str, *, after_event: int | None = None,
                    after_seconds: float | None = None) -> Run:
    """Run the child; SIGKILL it right after it prints ``event <after_event>``, or
    ``after_seconds`` after it prints ``ready``; with neither, let it finish."""
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), str(db), dangling, str(DELAY), str(DEBOUNCE),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    lines: list[tuple[float, str]] = []
    deadline: float | None = None
    killed_at = None
    while True:
        try:
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            raw = await asyncio.wait_for(child.stdout.readline(), timeout)
        except TimeoutError:
            raw = b"kill"
        if not raw:
            break  # the child finished first
        line = raw.decode().strip()
        if line == "kill" or line == f"event {after_event}":
            if line != "kill":
                lines.append((loop.time(), line))
            try:
                child.kill()
                killed_at = loop.time()
            except ProcessLookupError:  # it had just finished
                pass
            break
        lines.append((loop.time(), line))
        if line == "ready" and after_seconds is not None:
            deadline = loop.time() + after_seconds
    rest, stderr = await child.communicate()
    lines += [(UNKNOWN_TIME, line) for line in rest.decode().splitlines()]
    return Run(lines, killed_at, await child.wait(), stderr.decode())


async def stored_messages(db: Path) -> list[Message]:
    async with await Memory.open(f"sqlite:///{db}") as memory:
        return await memory.get_messages(thread_id=THREAD, resource_id=RESOURCE)


def check_crashed(stored: list[Message], run: Run, replay: Replay) -> None:
    where = f"child output: {run.describe()}"
    ids = [m.id for m in stored]
    seqs = [m.seq for m in stored]
    assert len(set(ids)) == len(ids), where
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), where
    assert ids == ORDER[: len(ids)], where
    results = {r.tool_call_id for m in stored for r in m.tool_results}
    for message in stored:
        assert {c.tool_call_id for c in message.tool_calls} <= results, f"dangling call in {message}"
    # every stored message is a real version; `newest[id]` is the last event that had it
    newest: dict[str, int] = {}
    for message in stored:
        events = replay.versions[message.id].get(digest(message))
        assert events, f"{message.id} holds content the turn never had: {message.parts}; {where}"
        newest[message.id] = max(events)
    # acknowledged writes are durable
    for _, line in run.lines:
        if line.startswith("saved "):
            for item in line.split()[1:]:
                message_id, acked = item.split("=")
                assert message_id in newest, f"acknowledged {message_id} is missing; {where}"
                assert newest[message_id] >= max(replay.versions[message_id][acked]), where
    # at most the debounce window is lost
    assert run.killed_at is not None
    printed = [j for _, j in run.events()]
    old = [j for t, j in run.events() if t <= run.killed_at - WINDOW]
    if not old:
        return
    start, reached = max(old), min(max(printed) + 1, LAST)  # killed between applying and printing
    for message in replay.states[start]:
        if all(replay.free(j, message.id) for j in range(start, reached + 1)):
            assert newest.get(message.id, -1) >= start, (
                f"{message.id} lost more than the debounce window: stored as of event "
                f"{newest.get(message.id)}, saveable since event {start}; {where}"
            )


def check_complete(stored: list[Message], replay: Replay) -> None:
    final = replay.states[-1]
    assert [m.id for m in stored] == ORDER == [m.id for m in final]
    seqs = [m.seq for m in stored]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for got, want in zip(stored, final, strict=True):
        assert (got.role, got.parts, got.metadata) == (want.role, want.parts, want.metadata)


def scenarios(dangling: str) -> list[tuple[int | None, float | None]]:
    """Kill after event k for a spread of k (the two policies get interleaved points), at three
    random times, and once not at all."""
    offset = 0 if dangling == "hold" else 2
    points = sorted({min(LAST, k + offset) for k in range(0, LAST + 1, 5)})
    rng = random.Random(f"crash-{dangling}")
    times = [round(rng.uniform(0.0, DELAY * len(EVENTS) + 0.2), 3) for _ in range(3)]
    return [(k, None) for k in points] + [(None, s) for s in times] + [(None, None)]


@pytest.mark.parametrize("dangling", ["hold", "strip"])
async def test_killed_turn_leaves_a_consistent_store_and_reruns_cleanly(
    tmp_path: Path, dangling: str
) -> None:
    replay = Replay(dangling)
    gate = asyncio.Semaphore(3)

    async def scenario(n: int, after_event: int | None, after_seconds: float | None) -> None:
        db = tmp_path / f"{dangling}-{n}.db"
        label = f"kill after event {after_event}" if after_event is not None else (
            f"kill {after_seconds}s after ready" if after_seconds is not None else "no kill")
        async with gate:
            run = await run_child(db, dangling, after_event=after_event, after_seconds=after_seconds)
        if run.killed_at is None:  # not to be killed, or finished before its time came
            assert run.returncode == 0 and run.lines[-1][1] == "done", (label, run.stderr)
            check_complete(await stored_messages(db), replay)
        else:
            assert run.returncode == -9, (label, run.stderr)
            try:
                check_crashed(await stored_messages(db), run, replay)
            except AssertionError as exc:
                raise AssertionError(f"{label}: {exc}") from None
        # the retry: the same turn again, to completion, in this process
        await run_turn(str(db), dangling, 0.0, 0.0, lambda line: None)
        check_complete(await stored_messages(db), replay)

    await asyncio.gather(*(scenario(n, *s) for n, s in enumerate(scenarios(dangling))))
