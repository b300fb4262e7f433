"""Several real OS processes writing one SQLite file at the same time.

Each test starts worker processes running this very file as a script (``python <this file>
<task> <db> <index> <params>``) with the interpreter running pytest. A worker opens the
database with the sync :class:`memvault.sync.Memory`, then meets the others at a barrier: it
prints ``@@wait`` and blocks on stdin until the parent, having seen every live worker reach the
barrier, answers ``go``. So the workers really start (and, in the round-based tests, every round)
together. A worker never lets an exception escape: it reports its traceback in its ``@@result``
line, and the parent asserts that no worker saw any error at all ("database is locked" included).
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memvault.stores.sqlite.schema import LATEST

WORKERS = 4
RESOURCE = "res"
Barrier = Callable[[], None]

# --------------------------------------------------------------------------------------------
# The worker side: runs in the child processes.
# --------------------------------------------------------------------------------------------


def _open(db: str, options: Any = None) -> Any:
    from memvault.sync import Memory

    return Memory.open(f"sqlite:///{db}", options=options)


def _task_save(db: str, p: int, params: dict[str, Any], barrier: Barrier) -> dict[str, Any]:
    """Save ``per_thread`` messages into each of ``threads`` in batches of 1-3, threads picked
    at random; returns the (id, seq) pairs save_messages gave back, per thread."""
    from memvault import Message

    rng = random.Random(1000 + p)
    threads = [t.format(p=p) for t in params["threads"]]
    per_thread: int = params["per_thread"]
    done = dict.fromkeys(threads, 0)
    saved: dict[str, list[list[Any]]] = {t: [] for t in threads}
    calls = 0
    with _open(db) as memory:
        barrier()
        while remaining := [t for t in threads if done[t] < per_thread]:
            thread = rng.choice(remaining)
            start = done[thread]
            stop = min(start + rng.randint(1, 3), per_thread)
            batch = [
                Message.user(f"p{p} {thread} message {i}", id=f"{thread}.p{p}.m{i}",
                             metadata={"p": p, "i": i})
                for i in range(start, stop)
            ]
            out = memory.save_messages(batch, thread_id=thread, resource_id=RESOURCE)
            if [m.id for m in out] != [m.id for m in batch]:
                raise AssertionError(f"save_messages returned {[m.id for m in out]}")
            saved[thread] += [[m.id, m.seq] for m in out]
            done[thread] = stop
            calls += 1
            if calls % 20 == 0:  # read our own write back, concurrently with the writers
                (got,) = memory.get_messages(
                    thread_id=thread, resource_id=RESOURCE, ids=[out[-1].id]
                )
                if got.seq != out[-1].seq:
                    raise AssertionError(f"read back seq {got.seq}, saved as {out[-1].seq}")
    return {"saved": saved, "calls": calls}


def _task_create(db: str, p: int, params: dict[str, Any], barrier: Barrier) -> dict[str, Any]:
    """Per round, all at once: create_thread(exist_ok=True) of one id; save_messages to a new
    thread id; save_messages of one same message id to a new thread; create_thread
    (exist_ok=False) of one id."""
    from memvault import Message
    from memvault.errors import ThreadExistsError

    result: dict[str, list[Any]] = {"exist_ok": [], "implicit": [], "same_id": [], "strict": []}
    with _open(db) as memory:
        for k in range(params["rounds"]):
            barrier()
            thread = memory.create_thread(
                resource_id=RESOURCE, thread_id=f"c{k}", title=f"by p{p}", exist_ok=True
            )
            result["exist_ok"].append([thread.id, thread.title, thread.created_at.isoformat()])
            barrier()
            (message,) = memory.save_messages(
                [Message.user(f"p{p} in s{k}", id=f"p{p}")], thread_id=f"s{k}", resource_id=RESOURCE
            )
            result["implicit"].append(message.seq)
            barrier()
            (message,) = memory.save_messages(
                [Message.user(f"p{p} in d{k}", id="same")], thread_id=f"d{k}", resource_id=RESOURCE
            )
            result["same_id"].append(message.seq)
            barrier()
            try:
                memory.create_thread(resource_id=RESOURCE, thread_id=f"x{k}", title=f"by p{p}")
            except ThreadExistsError:
                result["strict"].append(False)
            else:
                result["strict"].append(True)
    return result


def _task_wm_json(db: str, p: int, params: dict[str, Any], barrier: Barrier) -> dict[str, Any]:
    from memvault.options import MemoryOptions
    from memvault.rules.working_memory import WorkingMemoryOptions

    options = MemoryOptions(working_memory=WorkingMemoryOptions(schema={"type": "object"}))
    with _open(db, options) as memory:
        barrier()
        for i in range(params["count"]):
            content = memory.update_working_memory(
                {"facts": [f"p{p}-{i}"], f"k{p}_{i}": i}, resource_id=RESOURCE, mode="append"
            )
            note = json.loads(content)
            if note.get(f"k{p}_{i}") != i or f"p{p}-{i}" not in note["facts"]:
                raise AssertionError(f"own update missing from the returned note: {content}")
    return {}


def _task_wm_text(db: str, p: int, params: dict[str, Any], barrier: Barrier) -> dict[str, Any]:
    with _open(db) as memory:
        barrier()
        for i in range(params["count"]):
            content = memory.update_working_memory(f"p{p}-{i}", resource_id=RESOURCE)
            if f"p{p}-{i}" not in content.split("\n"):
                raise AssertionError(f"own line p{p}-{i} missing from the returned note")
    return {}


def _task_cas(db: str, p: int, params: dict[str, Any], barrier: Barrier) -> dict[str, Any]:
    """First all race to create the fresh key ``init`` (expected_version=None); then each does
    ``count`` compare-and-set increments of ``counter``, retrying whenever it loses."""
    wins: list[list[int]] = []
    lost = 0
    with _open(db) as memory:
        barrier()
        created = memory.compare_and_set_state(
            {"owner": p}, resource_id=RESOURCE, key="init", expected_version=None
        )
        barrier()
        while len(wins) < params["count"]:
            state = memory.get_state(resource_id=RESOURCE, key="counter")
            assert state is not None
            new = memory.compare_and_set_state(
                state.value + 1, resource_id=RESOURCE, key="counter", expected_version=state.version
            )
            if new is None:
                lost += 1
                continue
            wins.append([new.value, new.version])
    return {"init_won": created is not None, "wins": wins, "lost": lost}


def _task_open_fresh(db: str, p: int, params: dict[str, Any], barrier: Barrier) -> dict[str, Any]:
    """Per round, all at once: open a database file that does not exist yet, save, close."""
    from memvault import Message

    for k in range(params["rounds"]):
        barrier()
        with _open(f"{db}.{k}") as memory:
            memory.save_messages(
                [Message.user(f"p{p}", id=f"p{p}")], thread_id="t", resource_id=RESOURCE
            )
            memory.update_working_memory(f"p{p}", resource_id=RESOURCE)
    return {}


TASKS: dict[str, Callable[[str, int, dict[str, Any], Barrier], dict[str, Any]]] = {
    "save": _task_save,
    "create": _task_create,
    "wm_json": _task_wm_json,
    "wm_text": _task_wm_text,
    "cas": _task_cas,
    "open_fresh": _task_open_fresh,
}


def _worker_main(argv: list[str]) -> None:
    task, db, index, params = argv[1], argv[2], int(argv[3]), json.loads(argv[4])

    def barrier() -> None:
        print("@@wait", flush=True)
        if sys.stdin.readline().strip() != "go":
            raise RuntimeError("the parent broke the barrier")

    try:
        outcome = {"ok": TASKS[task](db, index, params, barrier)}
    except BaseException:
        outcome = {"error": traceback.format_exc()}
    print("@@result " + json.dumps(outcome), flush=True)


# --------------------------------------------------------------------------------------------
# The parent side.
# --------------------------------------------------------------------------------------------


def run_workers(
    tmp_path: Path, task: str, db: Path, n: int = WORKERS, **params: Any
) -> list[dict[str, Any]]:
    """Run ``n`` workers of ``task`` on ``db``, releasing every barrier once all live workers
    reach it. Returns their results; fails listing every worker's error (and stderr)."""
    errs = [tmp_path / f"{task}-{p}.stderr" for p in range(n)]
    procs = []
    try:
        for p in range(n):
            with errs[p].open("w") as err:
                procs.append(subprocess.Popen(
                    [sys.executable, __file__, task, str(db), str(p), json.dumps(params)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                ))
        outcomes: list[dict[str, Any] | None] = [None] * n
        live = set(range(n))
        while live:
            waiting = []
            for p in sorted(live):
                assert procs[p].stdout is not None
                while (line := procs[p].stdout.readline()) and not line.startswith("@@"):
                    pass  # stray output: not part of the protocol
                if line.startswith("@@wait"):
                    waiting.append(p)
                    continue
                live.discard(p)
                if line.startswith("@@result "):
                    outcomes[p] = json.loads(line[len("@@result "):])
                else:
                    procs[p].wait(timeout=30)
                    outcomes[p] = {"error": f"died with exit code {procs[p].returncode}"}
            for p in waiting:
                assert procs[p].stdin is not None
                procs[p].stdin.write("go\n")
                procs[p].stdin.flush()
        for proc in procs:
            proc.wait(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    problems = []
    for p, (proc, outcome) in enumerate(zip(procs, outcomes, strict=True)):
        stderr = errs[p].read_text()
        assert outcome is not None
        if "error" in outcome or proc.returncode != 0 or "locked" in stderr.lower():
            problems.append(f"--- worker {p} (exit {proc.returncode}):\n"
                            f"{outcome.get('error', '')}\nstderr:\n{stderr}")
    assert not problems, "\n".join(problems)
    return [outcome["ok"] for outcome in outcomes if outcome is not None]


def open_memory(db: Path, options: Any = None) -> Any:
    return _open(str(db), options)


def make_db(tmp_path: Path) -> Path:
    """A migrated, empty database file (so the workers contend on the data, not the schema)."""
    db = tmp_path / "shared.db"
    with open_memory(db):
        pass
    return db


def check_file(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        conn.close()


def check_thread(
    memory: Any, thread: str, expected_ids: dict[int, list[str]], returned: dict[str, int]
) -> None:
    """The thread holds exactly the expected ids (per process, in saving order), with seq
    exactly 1..N, each process's messages in its order, and the seqs save_messages returned."""
    messages = memory.get_messages(thread_id=thread, resource_id=RESOURCE)
    total = sum(len(ids) for ids in expected_ids.values())
    ids = [m.id for m in messages]
    assert len(ids) == total, f"{thread}: {len(ids)} messages, expected {total}"
    assert len(set(ids)) == total, f"{thread}: duplicated ids"
    assert set(ids) == {i for group in expected_ids.values() for i in group}
    assert [m.seq for m in messages] == list(range(1, total + 1)), f"{thread}: seq not 1..{total}"
    for p, own in expected_ids.items():
        assert [m.id for m in messages if m.metadata["p"] == p] == own, f"{thread}: p{p} order"
    assert {m.id: m.seq for m in messages} == returned, f"{thread}: returned seqs differ"
    assert all(m.text == f"p{m.metadata['p']} {thread} message {m.metadata['i']}" for m in messages)


# --------------------------------------------------------------------------------------------
# The tests.
# --------------------------------------------------------------------------------------------

pytestmark = pytest.mark.timeout(240)


def test_four_processes_append_to_one_thread(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    per_process = 500

    results = run_workers(tmp_path, "save", db, threads=["shared"], per_thread=per_process)

    returned = {i: s for r in results for i, s in r["saved"]["shared"]}
    assert len(returned) == WORKERS * per_process
    assert sorted(returned.values()) == list(range(1, WORKERS * per_process + 1))
    expected = {p: [f"shared.p{p}.m{i}" for i in range(per_process)] for p in range(WORKERS)}
    with open_memory(db) as memory:
        check_thread(memory, "shared", expected, returned)
        owners = [m.metadata["p"] for m in memory.get_messages(thread_id="shared",
                                                                resource_id=RESOURCE)]
        # the processes really ran at once: their saves interleave (hundreds of switches seen)
        switches = sum(a != b for a, b in itertools.pairwise(owners))
        assert switches > 2 * WORKERS, f"only {switches} switches: the writers did not overlap"
        page = memory.list_threads(resource_id=RESOURCE)
        assert [t.id for t in page.threads] == ["shared"]
    check_file(db)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT next_seq FROM threads").fetchall() == [(2001,)]
        assert conn.execute("SELECT count(*) FROM messages_fts").fetchone() == (2000,)
    finally:
        conn.close()


def test_four_processes_each_own_thread_plus_a_shared_one(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    per_thread = 250

    results = run_workers(
        tmp_path, "save", db, threads=["own{p}", "shared"], per_thread=per_thread
    )

    with open_memory(db) as memory:
        for p, result in enumerate(results):
            own = f"own{p}"
            returned = dict(result["saved"][own])
            check_thread(memory, own, {p: [f"{own}.p{p}.m{i}" for i in range(per_thread)]},
                         returned)
        returned = {i: s for r in results for i, s in r["saved"]["shared"]}
        expected = {p: [f"shared.p{p}.m{i}" for i in range(per_thread)] for p in range(WORKERS)}
        check_thread(memory, "shared", expected, returned)
        threads = memory.list_threads(resource_id=RESOURCE, limit=100).threads
        assert sorted(t.id for t in threads) == sorted(
            [f"own{p}" for p in range(WORKERS)] + ["shared"]
        )
    check_file(db)


def test_processes_create_the_same_thread_at_once(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    rounds = 15

    results = run_workers(tmp_path, "create", db, rounds=rounds)

    with open_memory(db) as memory:
        threads = memory.list_threads(resource_id=RESOURCE, limit=100).threads
        ids = [t.id for t in threads]
        assert len(ids) == len(set(ids)) == 4 * rounds
        assert set(ids) == {f"{kind}{k}" for kind in "cdsx" for k in range(rounds)}
        by_id = {t.id: t for t in threads}
        for k in range(rounds):
            # exist_ok: everyone got the one stored thread (the winner's title and timestamp)
            seen = {tuple(r["exist_ok"][k]) for r in results}
            assert len(seen) == 1, seen
            ((thread_id, title, created),) = seen
            stored = by_id[f"c{k}"]
            assert (thread_id, title, created) == (
                stored.id, stored.title, stored.created_at.isoformat()
            )
            # implicit creation by save_messages: one thread holding every process's message
            assert sorted(r["implicit"][k] for r in results) == list(range(1, WORKERS + 1))
            messages = memory.get_messages(thread_id=f"s{k}", resource_id=RESOURCE)
            assert sorted(m.id for m in messages) == [f"p{p}" for p in range(WORKERS)]
            assert [m.seq for m in messages] == list(range(1, WORKERS + 1))
            # one message id saved by all at once: one message (an upsert), never a duplicate
            assert [r["same_id"][k] for r in results] == [1] * WORKERS
            (message,) = memory.get_messages(thread_id=f"d{k}", resource_id=RESOURCE)
            assert (message.id, message.seq) == ("same", 1)
            assert message.text in {f"p{p} in d{k}" for p in range(WORKERS)}
            # exist_ok=False: exactly one process created it, the others got ThreadExistsError
            winners = [p for p, r in enumerate(results) if r["strict"][k]]
            assert len(winners) == 1, f"round {k}: winners {winners}"
            assert by_id[f"x{k}"].title == f"by p{winners[0]}"
    check_file(db)


def test_concurrent_json_working_memory_appends_lose_nothing(tmp_path: Path) -> None:
    from memvault.options import MemoryOptions
    from memvault.rules.working_memory import WorkingMemoryOptions

    db = make_db(tmp_path)
    count = 50

    run_workers(tmp_path, "wm_json", db, count=count)

    options = MemoryOptions(working_memory=WorkingMemoryOptions(schema={"type": "object"}))
    with open_memory(db, options) as memory:
        content = memory.get_working_memory(resource_id=RESOURCE)
    note = json.loads(content)
    expected_facts = {f"p{p}-{i}" for p in range(WORKERS) for i in range(count)}
    assert len(note["facts"]) == len(expected_facts)
    assert set(note["facts"]) == expected_facts
    expected_keys = {f"k{p}_{i}": i for p in range(WORKERS) for i in range(count)}
    assert {k: v for k, v in note.items() if k != "facts"} == expected_keys
    for p in range(WORKERS):  # each process's own appends kept its order in the list
        own = [f for f in note["facts"] if f.startswith(f"p{p}-")]
        assert own == [f"p{p}-{i}" for i in range(count)]
    check_file(db)


def test_concurrent_text_working_memory_appends_lose_nothing(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    count = 50

    run_workers(tmp_path, "wm_text", db, count=count)

    with open_memory(db) as memory:
        content = memory.get_working_memory(resource_id=RESOURCE)
    lines = content.split("\n")
    expected = [f"p{p}-{i}" for p in range(WORKERS) for i in range(count)]
    assert len(lines) == len(expected)
    assert sorted(lines) == sorted(expected)
    for p in range(WORKERS):
        assert [x for x in lines if x.startswith(f"p{p}-")] == [f"p{p}-{i}" for i in range(count)]
    check_file(db)


def test_concurrent_compare_and_set_increments(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    count = 50
    with open_memory(db) as memory:
        start = memory.set_state(0, resource_id=RESOURCE, key="counter")
        assert start.version == 1

    results = run_workers(tmp_path, "cas", db, count=count)

    total = WORKERS * count
    wins = sorted(tuple(w) for r in results for w in r["wins"])
    # every successful CAS moved the counter by exactly one: no two processes won the same step
    assert wins == [(v, v + 1) for v in range(1, total + 1)]
    init_winners = [p for p, r in enumerate(results) if r["init_won"]]
    assert len(init_winners) == 1, init_winners
    with open_memory(db) as memory:
        counter = memory.get_state(resource_id=RESOURCE, key="counter")
        assert (counter.value, counter.version) == (total, total + 1)
        init = memory.get_state(resource_id=RESOURCE, key="init")
        assert (init.value, init.version) == ({"owner": init_winners[0]}, 1)
    check_file(db)


def test_processes_open_a_new_file_at_once(tmp_path: Path) -> None:
    rounds = 4
    db = tmp_path / "sub" / "fresh.db"

    run_workers(tmp_path, "open_fresh", db, rounds=rounds)

    for k in range(rounds):
        path = Path(f"{db}.{k}")
        with open_memory(path) as memory:
            messages = memory.get_messages(thread_id="t", resource_id=RESOURCE)
            assert sorted(m.id for m in messages) == [f"p{p}" for p in range(WORKERS)]
            assert [m.seq for m in messages] == list(range(1, WORKERS + 1))
            lines = memory.get_working_memory(resource_id=RESOURCE).split("\n")
            assert sorted(lines) == [f"p{p}" for p in range(WORKERS)]
        check_file(path)
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("SELECT version FROM schema_version").fetchall() == [(LATEST,)]
        finally:
            conn.close()


if __name__ == "__main__":
    _worker_main(sys.argv)
