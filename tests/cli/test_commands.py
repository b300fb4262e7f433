"""The inspection commands (threads, search, recall, working-memory, stats, export/import, delete),
in process with typer's CliRunner, and ``threads list`` once as a real subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memvault import Memory, Message
from memvault.cli.app import app
from memvault.model import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from memvault.options import MemoryOptions
from memvault.rules.working_memory import WorkingMemoryOptions

runner = CliRunner()
WHEN = datetime(2024, 5, 8, 10, 0, tzinfo=UTC)


async def _seed(url: str) -> None:
    async with await Memory.open(url) as memory:
        await memory.create_thread(resource_id="ada", thread_id="t1", title="Weather", metadata={"tag": "x"})
        saved = await memory.save_messages([
            Message.user("what is the weather in Paris?", created_at=WHEN),
            Message(role="assistant", created_at=WHEN, parts=[
                ReasoningPart(text="I should call the weather tool.\nSecond line."),
                ToolCallPart(tool_call_id="call1", name="weather", args={"city": "Paris"})]),
            Message(role="tool", created_at=WHEN, parts=[
                ToolResultPart(tool_call_id="call1", name="weather", output={"sky": "sunny"})]),
            Message(role="assistant", created_at=WHEN, parts=[TextPart(text="It is sunny in Paris.")],
                    metadata={"model": "m"}),
        ], thread_id="t1", resource_id="ada")
        await memory.save_messages([Message.user("I like green tea")], thread_id="t2", resource_id="ada")
        await memory.save_messages([Message.user("bob's secret plans")], thread_id="secret",
                                   resource_id="bob")
        await memory.save_summary("Ada asked about the weather.", thread_id="t1", resource_id="ada",
                                  through_message_id=saved[1].id, expected_version=None)
        await memory.update_working_memory("Name: Ada", resource_id="ada")
        await memory.set_state({"step": 2}, resource_id="ada", key="run1", status="suspended")
    async with await Memory.open(url, options=MemoryOptions(
            working_memory=WorkingMemoryOptions(scope="thread"))) as memory:
        await memory.update_working_memory("thread notes", resource_id="ada", thread_id="t1")


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/cli.db"
    asyncio.run(_seed(url))
    return url


def _ok(*args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result.stdout


def _json(*args: str) -> Any:
    return json.loads(_ok(*args, "--json"))


def test_threads_list(db: str) -> None:
    listed = _json("threads", "list", "--resource", "ada", "--db", db)
    assert sorted((t["id"], t["messages"]) for t in listed) == [("t1", 4), ("t2", 1)]
    one = _json("threads", "list", "-r", "ada", "--limit", "1", "--db", db)
    assert [t["id"] for t in one] in (["t1"], ["t2"])
    assert "Weather" in _ok("threads", "list", "-r", "ada", "--db", db)


def test_threads_show_pairs_each_tool_call_with_its_result(db: str) -> None:
    shown = _json("threads", "show", "t1", "-r", "ada", "--db", db)
    assert shown["thread"]["title"] == "Weather"
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool", "assistant"]
    text = _ok("threads", "show", "t1", "-r", "ada", "--db", db)
    lines = text.splitlines()
    call = next(i for i, line in enumerate(lines) if "→ weather" in line)
    assert "← " in lines[call + 1] and "sunny" in lines[call + 1]
    assert "tool " not in text.split("→ weather")[1].split("It is sunny")[0]  # the tool message is folded
    assert "(reasoning" in text and "Second line" not in text
    assert "2024-05-08 10:00:00" in text and "It is sunny in Paris." in text


@pytest.mark.parametrize("args", [["threads", "show", "nope", "-r", "ada"],
                                  ["threads", "show", "secret", "-r", "ada"],
                                  ["search", "plans", "-r", "ada", "--thread", "secret"],
                                  ["recall", "plans", "-r", "ada", "--thread", "secret"],
                                  ["working-memory", "show", "-r", "ada", "--thread", "nope"],
                                  ["working-memory", "set", "x", "-r", "ada", "--thread", "secret"],
                                  ["delete", "-r", "ada", "--thread", "secret", "--yes"]])
def test_a_missing_thread_and_another_resources_thread_fail_alike(db: str, args: list[str]) -> None:
    result = runner.invoke(app, [*args, "--db", db, "--json"])
    assert result.exit_code == 1
    assert result.stdout == ""
    thread = args[args.index("--thread") + 1] if "--thread" in args else args[2]
    assert result.stderr == f"memvault: resource 'ada' has no thread '{thread}'\n"


def test_search(db: str) -> None:
    hits = _json("search", "weather", "-r", "ada", "--db", db)
    assert hits and hits[0]["message"]["thread_id"] == "t1"
    assert _json("search", "secret plans", "-r", "ada", "--db", db) == []
    assert "green tea" in _ok("search", "tea", "-r", "ada", "--db", db)


def test_recall(db: str) -> None:
    result = _json("recall", "green tea", "-r", "ada", "--db", db)
    assert any(h["thread_id"] == "t2" for h in result["hits"])
    assert "hits" in _ok("recall", "tea", "-r", "ada", "--thread", "t1", "--db", db)


def test_working_memory_show_and_set(db: str) -> None:
    assert _ok("working-memory", "show", "-r", "ada", "--db", db) == "Name: Ada\n"
    assert _json("working-memory", "show", "-r", "ada", "-t", "t1", "--db", db)["content"] == "thread notes"
    assert _json("working-memory", "show", "-r", "nobody", "--db", db)["content"] is None
    replaced = _json("working-memory", "set", "Name: Ada L.", "-r", "ada", "--db", db)
    assert replaced["content"] == "Name: Ada L."
    _ok("working-memory", "set", "-", "-r", "ada", "-t", "t2", "--db", db, input="from stdin")
    assert _ok("working-memory", "show", "-r", "ada", "-t", "t2", "--db", db) == "from stdin\n"


def test_stats(db: str) -> None:
    stats = _json("stats", "--db", db)
    assert stats["resources"]["ada"] == {"threads": 2, "messages": 5, "summaries": 1,
                                         "working_memories": 2, "states": 1}
    assert stats["totals"]["resources"] == 2 and stats["totals"]["messages"] == 6
    assert list(_json("stats", "-r", "bob", "--db", db)["resources"]) == ["bob"]
    assert "total" in _ok("stats", "--db", db)


async def _everything(url: str) -> dict[str, Any]:
    """Everything readable through Memory, per resource."""
    seen: dict[str, Any] = {}
    async with await Memory.open(url) as memory:
        for resource in ("ada", "bob"):
            page = await memory.list_threads(resource_id=resource, limit=100)
            threads = {}
            for t in page.threads:
                summary = await memory.get_summary(thread_id=t.id, resource_id=resource)
                threads[t.id] = {
                    "thread": t.model_dump(),
                    "messages": [m.model_dump() for m in
                                 await memory.get_messages(thread_id=t.id, resource_id=resource)],
                    "summary": None if summary is None else summary.model_dump(),
                }
            state = await memory.get_state(resource_id=resource, key="run1")
            seen[resource] = {
                "threads": threads, "working_memory": await memory.get_working_memory(resource_id=resource),
                "state": None if state is None else state.model_dump(),
                "search": [h.message.id for h in
                           await memory.search_messages(resource_id=resource, query="tea")],
            }
    async with await Memory.open(url, options=MemoryOptions(
            working_memory=WorkingMemoryOptions(scope="thread"))) as memory:
        seen["thread_wm"] = await memory.get_working_memory(resource_id="ada", thread_id="t1")
    return seen


def test_export_import_round_trip_is_lossless(db: str, tmp_path: Path) -> None:
    dump = tmp_path / "all.jsonl"
    counts = _json("export", "--all", "-o", str(dump), "--db", db)
    assert counts == {"thread": 3, "message": 6, "summary": 1, "working_memory": 2, "state": 1}
    kinds = [json.loads(line)["kind"] for line in dump.read_text().splitlines()]
    assert kinds[:6] == ["thread", "message", "message", "message", "message", "summary"]
    target = f"sqlite:///{tmp_path}/copy.db"
    assert _json("import", str(dump), "--db", target) == counts
    assert asyncio.run(_everything(target)) == asyncio.run(_everything(db))

    refused = runner.invoke(app, ["import", str(dump), "--db", target])
    assert refused.exit_code == 1 and "--force" in refused.stderr
    assert "imported" in _ok("import", str(dump), "--db", target, "--force")
    assert asyncio.run(_everything(target)) == asyncio.run(_everything(db))


def test_export_and_import_with_progress_bars(db: str, tmp_path: Path) -> None:
    dump = tmp_path / "ada.jsonl"
    assert "exported 2 threads, 5 messages" in _ok("export", "-r", "ada", "-o", str(dump), "--db", db)
    out = _ok("import", str(dump), "--db", f"sqlite:///{tmp_path}/ada.db")
    assert "imported 2 threads, 5 messages, 1 summaries, 2 working memories, 1 states" in out


def test_export_to_stdout_and_one_resource(db: str) -> None:
    lines = [json.loads(line) for line in _ok("export", "-r", "bob", "--db", db, "--json").splitlines()]
    assert (lines[0]["kind"], lines[0]["id"]) == ("thread", "secret")
    assert {r["kind"] for r in lines} == {"thread", "message"}
    assert runner.invoke(app, ["export", "--db", db]).exit_code == 1


def test_import_rejects_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "thread"}\nnot json\n')
    result = runner.invoke(app, ["import", str(bad), "--db", f"sqlite:///{tmp_path}/x.db"])
    assert result.exit_code == 1 and "bad.jsonl:2: not JSON" in result.stderr


def test_delete_a_thread_asks_first(db: str) -> None:
    declined = runner.invoke(app, ["delete", "-r", "ada", "--thread", "t1", "--db", db], input="n\n")
    assert declined.exit_code == 1
    assert len(_json("threads", "list", "-r", "ada", "--db", db)) == 2
    out = _ok("delete", "-r", "ada", "--thread", "t1", "--db", db, input="y\n")
    assert "deleted thread 't1' of resource 'ada': 1 threads, 4 messages" in out
    assert [t["id"] for t in _json("threads", "list", "-r", "ada", "--db", db)] == ["t2"]


def test_delete_a_resource_with_yes(db: str) -> None:
    deleted = _json("delete", "-r", "ada", "--yes", "--db", db)["deleted"]
    assert deleted["threads"] == 2 and deleted["messages"] == 5 and deleted["states"] == 1
    assert list(_json("stats", "--db", db)["resources"]) == ["bob"]


def test_threads_list_as_a_real_subprocess(db: str) -> None:
    done = subprocess.run([sys.executable, "-m", "memvault", "threads", "list", "--resource", "bob",
                           "--db", db, "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert [t["id"] for t in json.loads(done.stdout)] == ["secret"]
