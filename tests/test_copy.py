"""``memvault copy`` and :func:`memvault.transfer.copier.copy_store`: every record of a store copied into an
empty one, verified by counts and checksums on both sides.

The round trip SQLite -> PostgreSQL -> SQLite and the CLI need ``MEMVAULT_TEST_POSTGRES_URL``
(they skip without it, and fail with ``MEMVAULT_REQUIRE_POSTGRES=1``); each uses a fresh schema,
dropped afterwards. The rest runs on the in-memory and SQLite stores.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pytest
from typer.testing import CliRunner

from memvault import Memory, MemoryOptions, Message, WorkingMemoryOptions
from memvault.cli.app import app
from memvault.errors import ConfigurationError
from memvault.model import DataPart, ImagePart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from memvault.stores.capabilities import ExportStore, supports_sentence_vectors
from memvault.transfer.copier import CopyProgress, CopyReport, Digest, copy_store, digest, threads_of

MODEL = ("test/embedder", 3)


# --------------------------------------------------------------------------------------------
# A rich store, and everything readable from one.
# --------------------------------------------------------------------------------------------


async def fill(memory: Memory) -> None:
    """Three resources: threads with tool calls, CJK and emoji, a deleted message (a seq gap),
    an empty thread, a summary, working memories of both scopes, versioned states, vectors."""
    per_thread = Memory(memory.store, MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread")))
    await memory.create_thread(resource_id="ada", thread_id="t1", title="お茶の話 🍵",
                               metadata={"tags": ["茶", "tea"], "n": 1})
    await memory.save_messages([
        Message.system("You are helpful."),
        Message.user("我喜欢绿茶 🍵 and 日本茶", metadata={"lang": "zh", "emoji": "👍🏽"}),
        Message(role="assistant", id="call-msg", parts=[
            ReasoningPart(text="look it up", signature="sig"),
            ToolCallPart(tool_call_id="c1", name="lookup", args={"q": "緑茶", "limit": 3}),
        ]),
        Message(role="tool", parts=[ToolResultPart(tool_call_id="c1", name="lookup",
                                                   output={"hits": ["sencha", "gyokuro"]})]),
        Message.assistant("Sencha and gyokuro. 😀", id="answer"),
        Message(role="user", id="gone", parts=[TextPart(text="delete me")]),
        Message(role="user", id="last", parts=[
            ImagePart(url="https://example.com/a.png", detail="low"),
            DataPart(data={"k": [1, 2.5, None, True]}, name="blob"),
        ]),
    ], thread_id="t1", resource_id="ada")
    await memory.delete_messages(["gone"], thread_id="t1", resource_id="ada")  # seq 6 is a gap now
    await memory.save_messages([Message.user("after the gap")], thread_id="t1", resource_id="ada")
    await memory.save_summary("They talked about green tea.", thread_id="t1", resource_id="ada",
                              through_message_id="last", expected_version=None)
    summary = await memory.get_summary(thread_id="t1", resource_id="ada")
    assert summary is not None and summary.through_seq == 7
    await memory.save_summary("They talked about green tea, again.", thread_id="t1", resource_id="ada",
                              through_message_id="last", expected_version=1)
    await memory.save_messages([Message.user(f"second thread {i}") for i in range(30)],
                               thread_id="t2", resource_id="ada")
    await memory.update_thread(thread_id="t2", resource_id="ada", title="renamed")
    await memory.create_thread(resource_id="bob", thread_id="empty", title=None)
    await memory.save_messages([Message.user("Ünïcödé ✓ 한국어")], thread_id="b1", resource_id="bob")
    await memory.update_working_memory("likes green tea", resource_id="ada", mode="replace")
    await per_thread.update_working_memory("in t1: sencha", resource_id="ada", thread_id="t1")
    await per_thread.update_working_memory("bob's thread note 📝", resource_id="bob", thread_id="b1")
    await memory.update_working_memory("carol only has this", resource_id="carol", mode="replace")
    for value in ({"step": 1}, {"step": 2}, {"step": 3, "名前": "値"}):
        await memory.set_state(value, resource_id="ada", key="run-1", status="suspended")
    await memory.set_state([1, "two", None], resource_id="bob", key="run-2")
    ada = await memory.get_messages(thread_id="t1", resource_id="ada")
    rows = [("ada", "t1", m.id, np.array([i, i + 0.5, -i], dtype=np.float32).tobytes())
            for i, m in enumerate(ada[:-1])]
    rows.append(("ada", "t1", ada[-1].id, b""))  # a message with nothing to embed
    rows[0] = (*rows[0], np.array([1, 0, 0, 0, 1, 0], dtype="<f2").tobytes())  # its sentences' vectors
    assert await memory.store.save_embeddings(*MODEL, rows) == len(ada)


async def snapshot(memory: Memory) -> dict[str, Any]:
    """Everything readable through Memory (plus the store's listings), seqs as positions."""
    store = memory.store
    assert isinstance(store, ExportStore)
    out: dict[str, Any] = {"resources": {}, "model": await store.embedding_model()}
    for resource_id in await store.resource_ids():
        threads = {}
        for t in await threads_of(store, resource_id):
            thread = await memory.get_thread(thread_id=t.id, resource_id=resource_id)
            assert thread is not None
            messages = await memory.get_messages(thread_id=t.id, resource_id=resource_id)
            summary = await memory.get_summary(thread_id=t.id, resource_id=resource_id)
            threads[t.id] = {
                "thread": thread.model_dump(mode="json"),
                "messages": [m.model_dump(mode="json", exclude={"seq"}) for m in messages],
                "summary": summary and summary.model_dump(mode="json", exclude={"through_seq"}),
                "summary_at": summary and [m.id for m in messages].index(summary.through_message_id),
            }
        out["resources"][resource_id] = {
            "threads": threads,
            "page": [t.id for t in (await memory.list_threads(resource_id=resource_id, limit=100)).threads],
            "working": {k: await store.get_working_memory(resource_id, k)
                        for k in await store.working_memory_keys(resource_id)},
            "states": [s.model_dump(mode="json") for s in await memory.list_states(resource_id=resource_id)],
        }
    vectors = await store.load_embeddings()
    out["vectors"] = sorted((r, t, m, v.hex()) for _, r, t, m, v in vectors)
    assert supports_sentence_vectors(store)
    keys: dict[str, list[tuple[str, str]]] = {}
    for _, r, t, m, _ in vectors:
        keys.setdefault(r, []).append((t, m))
    out["sentences"] = sorted([(r, t, m, blob.hex()) for r, found in keys.items()
                               for t, m, blob in await store.sentence_embeddings_of(r, found)])
    return out


async def seqs(memory: Memory, resource_id: str, thread_id: str) -> list[int | None]:
    return [m.seq for m in await memory.get_messages(thread_id=thread_id, resource_id=resource_id)]


# --------------------------------------------------------------------------------------------
# PostgreSQL schemas.
# --------------------------------------------------------------------------------------------


def _server() -> str:
    url = os.environ.get("MEMVAULT_TEST_POSTGRES_URL")
    problem = None if url else "set MEMVAULT_TEST_POSTGRES_URL to run the PostgreSQL copy tests"
    if url:
        try:
            import psycopg

            from memvault.stores.postgres.store import postgres_options

            psycopg.connect(postgres_options(url)[0], connect_timeout=5).close()
        except Exception as exc:
            problem = f"the PostgreSQL server at MEMVAULT_TEST_POSTGRES_URL is unreachable: {exc}"
    if problem is None and url:
        return url
    if os.environ.get("MEMVAULT_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"MEMVAULT_REQUIRE_POSTGRES=1 but {problem}", pytrace=False)
    pytest.skip(problem or "")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """The URL of a fresh schema on the test server, dropped afterwards."""
    import psycopg
    from psycopg import sql

    from memvault.stores.postgres.store import postgres_options

    server = _server()
    schema = f"memvault_test_{uuid.uuid4().hex[:16]}"
    parts = urlsplit(server)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"] + [("schema", schema)]
    yield urlunsplit(parts._replace(query=urlencode(query)))
    with psycopg.connect(postgres_options(server)[0], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
async def filled(tmp_path: Path) -> str:
    """The URL of a SQLite file holding :func:`fill`'s data."""
    url = f"sqlite:///{tmp_path}/source.db"
    async with await Memory.open(url) as memory:
        await fill(memory)
    return url


# --------------------------------------------------------------------------------------------
# The tests.
# --------------------------------------------------------------------------------------------


async def test_round_trip_sqlite_postgres_sqlite_keeps_everything(
    filled: str, pg_url: str, tmp_path: Path
) -> None:
    back = f"sqlite:///{tmp_path}/back.db"
    async with await Memory.open(filled) as a, await Memory.open(pg_url) as pg, \
            await Memory.open(back) as b:
        first = await copy_store(a, pg)
        second = await copy_store(pg.store, b.store)
        assert first.ok and second.ok, (first.mismatches, second.mismatches)
        assert first.copied == second.copied == {
            "resources": 3, "threads": 4, "messages": 38, "working_memories": 4, "states": 2,
            "summaries": 1, "embeddings": 7,
        }
        assert first.source == first.target == second.target
        expected = await snapshot(a)
        assert await snapshot(pg) == expected
        assert await snapshot(b) == expected
        assert expected["resources"]["ada"]["states"][0]["version"] == 3
        assert expected["resources"]["ada"]["threads"]["t1"]["summary"]["version"] == 2
        assert await seqs(a, "ada", "t1") == [1, 2, 3, 4, 5, 7, 8]  # the source's gap ...
        for copy in (pg, b):
            assert await seqs(copy, "ada", "t1") == [1, 2, 3, 4, 5, 6, 7]  # ... is not kept
            summary = await copy.get_summary(thread_id="t1", resource_id="ada")
            assert summary is not None and (summary.through_seq, summary.through_message_id) == (6, "last")
            # the copy is a working store: the next message follows, search finds copied text
            saved = await copy.save_messages([Message.user("new")], thread_id="t1", resource_id="ada")
            assert saved[0].seq == 8
            hits = await copy.search_messages(query="gyokuro", resource_id="ada")
            assert [h.message.id for h in hits] == ["answer"]


async def test_copy_between_in_memory_and_sqlite(tmp_path: Path) -> None:
    source = await Memory.open("memory://")
    await fill(source)
    events: list[CopyProgress] = []
    async with await Memory.open(f"sqlite:///{tmp_path}/t.db") as target:
        report = await copy_store(source, target, progress=events.append)
        assert report.ok and report.copied["messages"] == 38
        assert await snapshot(target) == await snapshot(source)
        assert len((await snapshot(target))["sentences"]) == 1  # the sentences' vectors came too
        back = await Memory.open("memory://")
        assert (await copy_store(target, back)).ok
        assert await snapshot(back) == await snapshot(source)
    phases = [e.phase for e in events]
    assert phases[-2:] == ["embeddings", "verify"]
    assert [e.thread for e in events if e.resource_id == "ada" and e.phase == "threads"] == [0, 1, 2]
    assert events[-1].messages == 38


async def test_an_empty_store_copies_to_an_empty_store(tmp_path: Path) -> None:
    async with await Memory.open(f"sqlite:///{tmp_path}/e.db") as target:
        report = await copy_store(await Memory.open("memory://"), target)
    assert report.ok and set(report.copied.values()) == {0}


async def test_a_target_that_is_not_empty_is_refused_and_left_alone(tmp_path: Path) -> None:
    source = await Memory.open("memory://")
    await fill(source)
    for seed in ("message", "working memory", "state", "vector model"):
        target = await Memory.open("memory://")
        if seed == "message":
            await target.save_messages([Message.user("mine")], thread_id="t", resource_id="other")
        elif seed == "working memory":
            await target.update_working_memory("mine", resource_id="other")
        elif seed == "state":
            await target.set_state(1, resource_id="other", key="k")
        else:
            await target.store.save_embeddings("m", 2, [])
        before = await digest(target)
        with pytest.raises(ConfigurationError, match="not empty"):
            await copy_store(source, target)
        assert await digest(target) == before, seed


async def test_the_digest_sees_any_difference() -> None:
    source = await Memory.open("memory://")
    await fill(source)
    target = await Memory.open("memory://")
    assert (await copy_store(source, target)).ok
    await target.save_messages([Message.assistant("Sencha and gyokuro! 😀", id="answer")],
                               thread_id="t1", resource_id="ada")  # edited in place
    assert (await digest(source)).mismatches(await digest(target)) == [
        "threads", "messages", "summaries", "embeddings"]  # the edit bumped the thread's updated_at
    await target.set_state({"step": 3, "名前": "値"}, resource_id="ada", key="run-1", status="suspended")
    assert "states" in (await digest(source)).mismatches(await digest(target))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memvault", "copy", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_copies_sqlite_into_postgres_and_prints_the_verification(filled: str, pg_url: str) -> None:
    done = _cli("--from", filled, "--to", pg_url)
    assert done.returncode == 0, done.stderr
    assert "verification passed" in done.stdout
    for kind, count in (("messages", "38"), ("working_memories", "4"), ("embeddings", "7")):
        line = next(line for line in done.stdout.splitlines() if f" {kind} " in line)
        assert line.split()[1:] == [count, count, count, line.split()[4], "ok"], line
    assert "resources" in done.stderr  # the progress bar

    async def check() -> None:
        async with await Memory.open(filled) as a, await Memory.open(pg_url) as pg:
            assert await snapshot(pg) == await snapshot(a)

    asyncio.run(check())
    again = _cli("--from", filled, "--to", pg_url)  # the target is not empty now
    assert again.returncode == 2
    assert "not empty" in again.stderr and "Traceback" not in again.stderr


def test_cli_json_report(filled: str, tmp_path: Path) -> None:
    done = _cli("--from", filled, "--to", f"sqlite:///{tmp_path}/t.db", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["mismatches"] == []
    assert report["source"] == report["target"] and report["copied"]["threads"] == 4


def test_cli_exits_1_and_names_the_kinds_when_verification_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = dict.fromkeys(("resources", "threads", "messages", "working_memories", "states",
                            "summaries", "embeddings"), 0)
    a = Digest(counts, dict.fromkeys(counts, "a" * 64))
    b = Digest(counts, {**a.checksums, "states": "b" * 64})

    async def broken(*args: Any, **kwargs: Any) -> CopyReport:
        return CopyReport(counts, a, b, a.mismatches(b))

    monkeypatch.setattr("memvault.cli.copy.copy_store", broken)
    result = CliRunner().invoke(app, ["copy", "--from", "memory://", "--to", f"sqlite:///{tmp_path}/x.db"])
    assert result.exit_code == 1
    assert "verification failed: states differ" in result.output
    assert "DIFFERS" in result.stdout and f"target sha256 {'b' * 64}" in result.stdout


def test_cli_reports_an_unknown_url_without_a_traceback(tmp_path: Path) -> None:
    done = _cli("--from", "nosuch://x", "--to", f"sqlite:///{tmp_path}/t.db")
    assert done.returncode == 2
    assert "unknown store URL" in done.stderr and "Traceback" not in done.stderr
