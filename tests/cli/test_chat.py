"""``memvault chat``: real subprocesses on a real SQLite file (offline, and against a real
OpenAI-compatible server on loopback), and the session logic in-process."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from memvault import Memory
from memvault.cli.chat import INSTRUCTIONS, OFFLINE_NOTICE, ChatSession, choose_model
from memvault.demo.offline_model import facts_of, offline_model, offline_reply
from memvault.llm import OpenAIChatModel
from memvault.runtime.summaries import DEFAULT_INSTRUCTIONS as SUMMARY_INSTRUCTIONS
from memvault.runtime.titles import TITLE_INSTRUCTIONS

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
needs_httpx = pytest.mark.skipif(importlib.util.find_spec("httpx") is None,
                                 reason="httpx is not installed: pip install 'memvault[openai]'")


def _load_chat_server() -> Any:
    """``tests/llm/chat_server.py`` (tests/cli is not a package, so it is loaded by path)."""
    name = "memvault_tests_chat_server"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "llm" / "chat_server.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


chat_server = _load_chat_server()


def _chat(db: Path, lines: list[str], *args: str) -> str:
    """Run ``memvault chat`` with ``lines`` on stdin and no OpenAI variables; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "memvault", "chat", "--db", f"sqlite:///{db}", *args],
        input="".join(f"{line}\n" for line in lines), capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(db.parent)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _stored(db: Path, resource: str) -> list[tuple[str | None, list[tuple[str, str]], str | None]]:
    """Each thread of ``resource``, oldest first: (title, [(role, text)], working memory)."""
    async with await Memory.open(f"sqlite:///{db}") as memory:
        page = await memory.list_threads(resource_id=resource)
        note = await memory.get_working_memory(resource_id=resource)
        return [
            (thread.title,
             [(m.role, m.text) for m in await memory.get_messages(thread_id=thread.id, resource_id=resource)],
             note)
            for thread in reversed(page.threads)
        ]


def test_offline_chat_remembers_across_threads(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    out = _chat(db, ["Hi, I'm Ada", "/memory", "/threads", "/new", "what's my name?", "/recall", "/quit",
                     "never read"], "--offline", "--resource", "ada")
    assert OFFLINE_NOTICE in out
    first = re.search(r"thread (\w+) \(new\)", out)
    second = re.search(r"new thread (\w+)", out)
    assert first and second
    memory_shown = out.split("you> /memory", 1)[1].split("you> /threads", 1)[0]
    assert "- Name: Ada" in memory_shown
    threads_shown = out.split("you> /threads", 1)[1].split("you> /new", 1)[0]
    assert f"*  1. {first[1]} · Hi, I'm Ada · " in threads_shown  # offline titles: the first words
    assert '· update_working_memory(memory="- Name: Ada")' in out
    assert "assistant> Noted, name: Ada. I'll remember that." in out
    assert "assistant> I remember: Name: Ada. I recalled 1 passage from earlier conversations." in out
    recall_shown = out.split("you> /recall", 1)[1]
    assert f"thread {first[1]} (Hi, I'm Ada) · " in recall_shown
    assert "user: Hi, I'm Ada" in recall_shown and "assistant: Noted, name: Ada." in recall_shown
    assert "never read" not in out

    threads = asyncio.run(_stored(db, "ada"))
    assert [title for title, _, _ in threads] == ["Hi, I'm Ada", "what's my name?"]
    (_, told, note), (_, asked, _) = threads
    assert note == "- Name: Ada"
    assert told[0] == ("user", "Hi, I'm Ada")
    assert told[-1] == ("assistant", "Noted, name: Ada. I'll remember that.")
    assert asked == [("user", "what's my name?"),
                     ("assistant", "I remember: Name: Ada. I recalled 1 passage from earlier conversations.")]


def test_continuing_a_thread_shows_its_last_messages(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    first = _chat(db, ["I live in Lyon"], "--resource", "ada")  # no URL, no key: offline; EOF ends it
    thread = re.search(r"thread (\w+) \(new\)", first)
    assert OFFLINE_NOTICE in first and thread
    again = _chat(db, ["/thread", "/quit"], "--resource", "ada", "--thread", thread[1])
    assert f"thread {thread[1]} · I live in Lyon" in again
    assert "user: I live in Lyon" in again and "assistant: Noted, lives in: Lyon." in again
    assert f"current thread {thread[1]}" in again


@pytest.fixture
def server() -> Iterator[Any]:
    with chat_server.running_server() as server:
        yield server


async def _seed_note(db: Path) -> None:
    async with await Memory.open(f"sqlite:///{db}") as memory:
        await memory.update_working_memory("- Name: Ada", resource_id="ada")


@needs_httpx
def test_chat_streams_from_an_openai_compatible_server(tmp_path: Path, server: Any) -> None:
    db = tmp_path / "chat.db"
    asyncio.run(_seed_note(db))
    server.reply("Hello Ada, good to see you again.", piece=2)  # the answer; the title is an echo
    out = _chat(db, ["hello", "/quit"], "--resource", "ada", "--base-url", server.url, "--api-key", "test",
                "--model", "m")
    assert OFFLINE_NOTICE not in out
    assert f"model m at {server.url}" in out
    assert "assistant> Hello Ada, good to see you again.\n" in out

    streamed = [r for r in server.requests if r.body.get("stream")]
    assert len(streamed) == 1
    request = streamed[0]
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == "Bearer test"
    messages = request.body["messages"]
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith(INSTRUCTIONS)
    assert "<working_memory>\n- Name: Ada\n</working_memory>" in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": "hello"}
    assert "update_working_memory" in {tool["function"]["name"] for tool in request.body["tools"]}

    [(title, saved, _)] = asyncio.run(_stored(db, "ada"))
    assert saved == [("user", "hello"), ("assistant", "Hello Ada, good to see you again.")]
    assert title == "echo: hello"  # made by the server in the background; exit waited for it


# in-process: the session's logic


def _console() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=200)


def _output(console: Console) -> str:
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


@pytest.fixture
async def memory() -> AsyncIterator[Memory]:
    async with await Memory.open("memory://") as memory:
        yield memory


@needs_httpx
async def test_model_errors_are_shown_in_red_and_the_chat_goes_on(memory: Memory, server: Any) -> None:
    server.fail_next(401, {"error": {"message": "Incorrect API key provided"}})
    server.fail_next(500, {"error": {"message": "the model crashed"}})
    console = _console()
    async with OpenAIChatModel("m", base_url=server.url, api_key="test", max_retries=0) as model:
        session = ChatSession(memory, model, resource_id="ada", thread_id="t", console=console)
        assert await session.handle("first")
        assert await session.handle("second")
        assert await session.handle("third")
    raw = _output(console)
    text = ANSI.sub("", raw)
    assert text.count("model error: ") == 2
    assert "Incorrect API key provided" in text and "the model crashed" in text
    assert re.search(r"\x1b\[1;31mmodel error: [^\n]*Incorrect API key", raw)  # bold red
    assert "assistant> echo: third" in text
    saved = await memory.get_messages(thread_id="t", resource_id="ada")
    assert [(m.role, m.text) for m in saved] == [
        ("user", "first"), ("user", "second"), ("user", "third"), ("assistant", "echo: third")]


async def test_commands(memory: Memory) -> None:
    console = Console(file=io.StringIO(), width=200)
    session = ChatSession(memory, offline_model(), resource_id="ada", thread_id="one", console=console)
    for line in ["/recall", "/memory", "/nope", "", "/help", "I love jazz", "/recall", "/new",
                 "//etc is a folder", "/threads", "/thread 2", "/thread o", "/thread fresh"]:
        assert await session.handle(line)
    assert not await session.handle("/QUIT")
    out = _output(console)
    assert "nothing yet: recall runs with each message you send" in out
    assert "(empty: nothing remembered yet)" in out
    assert "unknown command /nope: /help lists the commands" in out
    assert "/thread ID    switch to a conversation" in out
    assert "recall found nothing for your last message" in out
    assert "assistant> Noted, likes: jazz. I'll remember that." in out
    assert "assistant> I remember: Likes: jazz." in out  # "//" sends a message starting with "/"
    assert re.search(r"\*  1\. \w+ · /etc is a folder · ", out)
    assert "   2. one · I love jazz · " in out
    assert "thread one · I love jazz" in out  # "/thread 2" and "/thread o" (a unique start) switch
    assert session.thread_id == "fresh"  # an unknown id is a new thread
    assert await memory.get_thread(thread_id="fresh", resource_id="ada") is None


def test_choose_model_runs_offline_without_a_server_or_key() -> None:
    assert choose_model(env={}).offline
    assert choose_model(env={"OPENAI_API_KEY": "k"}, offline=True).offline
    online = choose_model(env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "MEMVAULT_MODEL": "qwen"})
    assert not online.offline and online.description == "model qwen at http://127.0.0.1:9/v1"
    keyed = choose_model(api_key="k", env={})
    assert keyed.description == "model gpt-4o-mini at https://api.openai.com/v1"


def test_the_offline_model_notes_facts_and_answers_from_memory() -> None:
    assert facts_of("Hi, I\u2019m Ada and I like green tea!") == ["- Name: Ada", "- Likes: green tea"]
    assert facts_of("my name is Ada Lovelace.") == ["- Name: Ada Lovelace"]
    assert facts_of("My name is Ada and I like green tea") == ["- Name: Ada", "- Likes: green tea"]
    assert facts_of("my name is Ada Lovelace from London") == ["- Name: Ada Lovelace"]
    assert facts_of("I'm tired") == []
    assert offline_reply([{"role": "system", "content": TITLE_INSTRUCTIONS},
                          {"role": "user", "content": "one two three four five six"}], None) == (
        "one two three four five")
    prompt = "Previous summary:\nold\n\nNew messages:\nuser: hi\n\nassistant: hello"
    summary = offline_reply([{"role": "system", "content": SUMMARY_INSTRUCTIONS},
                             {"role": "user", "content": prompt}], None)
    assert summary == "old\n- hi"
    known = [{"role": "system", "content": "x\n<working_memory>\n- Name: Ada\n</working_memory>"},
             {"role": "user", "content": "I'm Ada"}]
    tools = [{"type": "function", "function": {"name": "update_working_memory"}}]
    assert offline_reply(known, tools) == "I remember: Name: Ada."  # nothing new: no tool call
