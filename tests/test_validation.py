"""Bad input raises memvault's typed ValidationError and writes nothing (checked on a real SQLite
file, read back through a separate connection); store URLs and the default location."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from memvault import (
    Memory,
    MemoryOptions,
    Message,
    MessageTooLargeError,
    ValidationError,
    WorkingMemoryOptions,
)
from memvault.errors import ConfigurationError
from memvault.stores import default_url

TABLES = ("threads", "messages", "working_memory", "states", "messages_fts_data")


def snapshot(path: Path) -> dict[str, list[str]]:
    """Every row of every table, read through a connection of our own."""
    with closing(sqlite3.connect(path)) as conn:
        return {t: sorted(map(repr, conn.execute(f"SELECT * FROM {t}"))) for t in TABLES}


@dataclass
class Vault:
    memory: Memory
    path: Path

    async def refuses(
        self, call: Callable[[Memory], Awaitable[Any]], error: type[Exception] = ValidationError
    ) -> None:
        before = snapshot(self.path)
        with pytest.raises(error):
            await call(self.memory)
        assert snapshot(self.path) == before, "a refused call wrote something"


async def open_vault(tmp_path: Path, options: MemoryOptions | None = None) -> Vault:
    path = tmp_path / "v.db"
    memory = await Memory.open(f"sqlite:///{path}", options=options)
    await memory.save_messages([Message.user("seed words", id="seed")], thread_id="t", resource_id="r")
    await memory.update_working_memory("a note", resource_id="r", thread_id="t")
    await memory.set_state({"step": 1}, resource_id="r", key="run")
    return Vault(memory, path)


@pytest.fixture
async def vault(tmp_path: Path) -> AsyncIterator[Vault]:
    vault = await open_vault(tmp_path)
    yield vault
    await vault.memory.close()


def text_parts(text: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def message(**fields: Any) -> dict[str, Any]:
    return {"role": "user", "parts": text_parts("fine"), **fields}


class Opaque:
    pass


LONG = "x" * 257
BAD_MESSAGES = [
    pytest.param(message(role="robot"), id="unknown-role"),
    pytest.param(message(role=None), id="role-none"),
    pytest.param(message(parts=[{"type": "video", "url": "https://x"}]), id="unknown-part-type"),
    pytest.param(message(parts=[{"text": "no type"}]), id="part-without-type"),
    pytest.param(message(parts="hello"), id="parts-a-string"),
    pytest.param(message(parts=text_parts(5)), id="text=5"),
    pytest.param(message(parts=text_parts(None)), id="text=None"),
    pytest.param(message(parts=[{"type": "tool-call", "tool_call_id": "c", "name": "f",
                                 "args": {1, 2}}]), id="args-a-set"),
    pytest.param(message(parts=[{"type": "tool-call", "tool_call_id": "c", "name": "f",
                                 "args": Opaque()}]), id="args-an-object"),
    pytest.param(message(parts=[{"type": "tool-call", "tool_call_id": "c", "name": "f",
                                 "args": {"x": float("nan")}}]), id="args-nan"),
    pytest.param(message(parts=[{"type": "tool-result", "tool_call_id": "", "output": 1}]),
                 id="empty-tool-call-id"),
    pytest.param(message(parts=[{"type": "data", "data": b"raw"}]), id="data-bytes"),
    pytest.param(message(created_at="sometime last week"), id="created_at-garbage"),
    pytest.param(message(created_at=[2024]), id="created_at-list"),
    pytest.param(message(metadata="meta"), id="metadata-a-string"),
    pytest.param(message(metadata=[1, 2]), id="metadata-a-list"),
    pytest.param(message(metadata={"tags": {"a", "b"}}), id="metadata-set"),
    pytest.param(message(metadata={"raw": b"x"}), id="metadata-bytes"),
    pytest.param(message(metadata={"x": float("nan")}), id="metadata-nan"),
    pytest.param(message(metadata={"x": [float("inf")]}), id="metadata-inf"),
    pytest.param(message(metadata={"x": Opaque()}), id="metadata-object"),
    pytest.param(message(metadata={1: "x"}), id="metadata-int-key"),
    pytest.param(message(metadata={"nested": {2: "x"}}), id="metadata-nested-int-key"),
    pytest.param(message(parts=text_parts("bad \ud800 text")), id="surrogate-in-text"),
    pytest.param(message(metadata={"k\udfff": 1}), id="surrogate-in-metadata-key"),
    pytest.param(message(metadata={"k": ["\ud800"]}), id="surrogate-in-metadata-value"),
    pytest.param(message(parts=text_parts("nul \x00 byte")), id="nul-in-text"),
    pytest.param(message(id="a\x00b"), id="nul-in-id"),
    pytest.param(message(metadata={"k\x00": 1}), id="nul-in-metadata-key"),
    pytest.param(message(metadata={"k": {"deep": "v\x00"}}), id="nul-in-metadata-value"),
    pytest.param(message(id=""), id="empty-id"),
    pytest.param(message(id=" \t\n"), id="whitespace-id"),
    pytest.param(message(id=LONG), id="id-over-256"),
    pytest.param(message(id=5), id="id-an-int"),
    pytest.param(message(seq="first"), id="seq-not-int"),
    pytest.param(message(colour="red"), id="unknown-field"),
    pytest.param(5, id="an-int"),
    pytest.param("hello", id="a-string"),
    pytest.param(None, id="none"),
    pytest.param(("user", "hi"), id="a-tuple"),
    pytest.param(Opaque(), id="an-object"),
]


@pytest.mark.parametrize("thread_id", ["t", "fresh"])
@pytest.mark.parametrize("bad", BAD_MESSAGES)
async def test_a_bad_last_message_fails_the_whole_batch(vault: Vault, bad: Any, thread_id: str) -> None:
    good = [Message.user("first good"), message(id="second-good")]
    await vault.refuses(
        lambda m: m.save_messages([*good, bad], thread_id=thread_id, resource_id="r")
    )


def test_long_id_limit_is_inclusive() -> None:
    assert Message(role="user", id="x" * 256).id == "x" * 256


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param(Message.user("one message, not a list"), id="bare-message"),
        pytest.param(message(), id="bare-dict"),
        pytest.param("hello", id="a-string"),
    ],
)
async def test_messages_must_come_as_a_list(vault: Vault, messages: Any) -> None:
    await vault.refuses(lambda m: m.save_messages(messages, thread_id="t", resource_id="r"))


BAD_IDS = [
    pytest.param("", id="empty"),
    pytest.param("   ", id="whitespace"),
    pytest.param(LONG, id="over-256"),
    pytest.param("t\x00", id="nul"),
    pytest.param("t\ud800", id="lone-surrogate"),
    pytest.param(5, id="int"),
]


@pytest.mark.parametrize("bad_id", BAD_IDS)
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda m, i: m.save_messages([message()], thread_id=i, resource_id="r"),
                     id="save-thread_id"),
        pytest.param(lambda m, i: m.save_messages([message()], thread_id="t", resource_id=i),
                     id="save-resource_id"),
        pytest.param(lambda m, i: m.create_thread(thread_id=i, resource_id="r"), id="create-thread"),
        pytest.param(lambda m, i: m.create_thread(resource_id=i), id="create-resource"),
        pytest.param(lambda m, i: m.delete_thread(thread_id=i, resource_id="r"), id="delete-thread"),
        pytest.param(lambda m, i: m.clear_thread(thread_id="t", resource_id=i), id="clear-resource"),
        pytest.param(lambda m, i: m.delete_resource(resource_id=i), id="delete-resource"),
        pytest.param(lambda m, i: m.delete_messages([i], thread_id="t", resource_id="r"),
                     id="delete-message-id"),
        pytest.param(lambda m, i: m.update_working_memory("x", resource_id=i), id="wm-resource"),
        pytest.param(lambda m, i: m.set_state(1, resource_id="r", key=i), id="state-key"),
        pytest.param(lambda m, i: m.get_thread(thread_id=i, resource_id="r"), id="get-thread"),
        pytest.param(lambda m, i: m.search_messages(resource_id=i, query="seed"),
                     id="search-resource"),
    ],
)
async def test_bad_ids_are_refused(vault: Vault, call: Callable, bad_id: Any) -> None:
    await vault.refuses(lambda m: call(m, bad_id))




@pytest.mark.parametrize(
    "bad_id",
    [
        pytest.param("", id="empty"),
        pytest.param(None, id="none"),
        pytest.param("   ", id="whitespace"),
        pytest.param(LONG, id="over-256"),
        pytest.param("t\x00", id="nul"),
        pytest.param("t\ud800", id="lone-surrogate"),
        pytest.param(5, id="int"),
    ],
)
async def test_thread_scoped_working_memory_refuses_bad_thread_ids(
    tmp_path: Path, bad_id: Any
) -> None:
    options = MemoryOptions(working_memory=WorkingMemoryOptions(scope="thread"))
    vault = await open_vault(tmp_path, options)
    try:
        await vault.refuses(lambda m: m.update_working_memory("x", resource_id="r", thread_id=bad_id))
    finally:
        await vault.memory.close()




def cyclic() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


BAD_CALLS = [
    # message ids given as one string
    pytest.param(lambda m: m.delete_messages("seed", thread_id="t", resource_id="r"),
                 id="delete_messages-ids-string"),
    pytest.param(lambda m: m.get_messages(ids="seed", thread_id="t", resource_id="r"),
                 id="get_messages-ids-string"),
    pytest.param(lambda m: m.get_messages(ids=[None], thread_id="t", resource_id="r"),
                 id="get_messages-ids-none"),
    pytest.param(lambda m: m.get_messages(ids=[""], thread_id="t", resource_id="r"),
                 id="get_messages-ids-empty"),
    pytest.param(lambda m: m.get_messages(ids=["seed"], before="seed", thread_id="t",
                                          resource_id="r"), id="get_messages-ids-and-cursor"),
    pytest.param(lambda m: m.get_messages(last_n=-1, thread_id="t", resource_id="r"),
                 id="get_messages-negative-last_n"),
    pytest.param(lambda m: m.get_messages(first_n="3", thread_id="t", resource_id="r"),
                 id="get_messages-first_n-string"),
    pytest.param(lambda m: m.get_messages(last_n=1, first_n=1, thread_id="t", resource_id="r"),
                 id="get_messages-last_n-and-first_n"),
    pytest.param(lambda m: m.get_messages(message_range=-2, ids=["seed"], thread_id="t",
                                          resource_id="r"), id="get_messages-negative-range"),
    pytest.param(lambda m: m.get_messages(before="x\ud800", thread_id="t", resource_id="r"),
                 id="get_messages-before-surrogate"),
    pytest.param(lambda m: m.get_messages(after="\udc00", thread_id="t", resource_id="r"),
                 id="get_messages-after-surrogate"),
    pytest.param(lambda m: m.get_messages(ids=["\ud800"], thread_id="t", resource_id="r"),
                 id="get_messages-ids-surrogate"),
    # bad limits
    *[
        pytest.param(lambda m, limit=limit: m.list_threads(resource_id="r", limit=limit),
                     id=f"list_threads-limit-{limit!r}")
        for limit in (0, -1, 10_001, True, 1.5, "5", None)
    ],
    *[
        pytest.param(lambda m, limit=limit: m.search_messages(resource_id="r", query="seed",
                                                              limit=limit),
                     id=f"search-limit-{limit!r}")
        for limit in (0, -1, 10_001, True, 1.5, "5", None)
    ],
    pytest.param(lambda m: m.list_threads(resource_id="r", cursor="not a cursor!"),
                 id="list_threads-garbage-cursor"),
    pytest.param(lambda m: m.list_threads(resource_id="r", cursor="bm9jb2xvbg"),
                 id="list_threads-cursor-without-separator"),
    pytest.param(lambda m: m.search_messages(resource_id="r", query=5), id="search-query-int"),
    # threads
    pytest.param(lambda m: m.create_thread(resource_id="r", title="a\x00"), id="title-nul"),
    pytest.param(lambda m: m.create_thread(resource_id="r", metadata={"x": float("nan")}),
                 id="thread-metadata-nan"),
    pytest.param(lambda m: m.create_thread(resource_id="r", metadata="meta"),
                 id="thread-metadata-string"),
    pytest.param(lambda m: m.create_thread(resource_id="r", metadata=[]),
                 id="thread-metadata-empty-list"),
    pytest.param(lambda m: m.update_thread(thread_id="t", resource_id="r", title=5),
                 id="update-title-int"),
    pytest.param(lambda m: m.update_thread(thread_id="t", resource_id="r", metadata=["x"]),
                 id="update-metadata-list"),
    pytest.param(lambda m: m.update_thread(thread_id="t", resource_id="r", metadata={"a": {1}}),
                 id="update-metadata-set"),
    # messages, more
    pytest.param(lambda m: m.save_messages([message(metadata=cyclic())], thread_id="t",
                                           resource_id="r"), id="metadata-cycle"),
    # states and working memory
    pytest.param(lambda m: m.set_state(float("nan"), resource_id="r", key="run"), id="state-nan"),
    pytest.param(lambda m: m.set_state({"a": {1}}, resource_id="r", key="run"), id="state-set"),
    pytest.param(lambda m: m.set_state(1, resource_id="r", key="run", status="a\x00"),
                 id="state-status-nul"),
    pytest.param(lambda m: m.update_working_memory(5, resource_id="r"), id="wm-not-text"),
    pytest.param(lambda m: m.update_working_memory("x\ud800", resource_id="r"), id="wm-surrogate"),
    pytest.param(lambda m: m.update_working_memory("x", resource_id="r", mode="merge"),
                 id="wm-unknown-mode"),
]


@pytest.mark.parametrize("call", BAD_CALLS)
async def test_bad_arguments_are_refused(vault: Vault, call: Callable) -> None:
    await vault.refuses(call)


async def test_nothing_of_a_refused_batch_is_written_and_the_thread_still_works(
    vault: Vault,
) -> None:
    batch = [Message.user(f"good {i}", id=f"g{i}") for i in range(5)] + [message(role="robot")]
    await vault.refuses(lambda m: m.save_messages(batch, thread_id="t", resource_id="r"))
    saved = await vault.memory.save_messages(batch[:-1], thread_id="t", resource_id="r")
    assert [m.seq for m in saved] == [2, 3, 4, 5, 6]  # no seq was used up by the refused batch


# -- size limit --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "big",
    [
        pytest.param(Message.user("x" * 2000), id="text"),
        pytest.param(Message.user("hi", metadata={"blob": "y" * 2000}), id="metadata"),
        pytest.param(message(parts=text_parts("é" * 600)), id="utf8-bytes-not-chars"),
    ],
)
async def test_a_message_over_the_limit_is_refused(tmp_path: Path, big: Any) -> None:
    vault = await open_vault(tmp_path, MemoryOptions(max_message_bytes=1000))
    try:
        await vault.refuses(
            lambda m: m.save_messages([Message.user("ok"), big], thread_id="t", resource_id="r"),
            MessageTooLargeError,
        )
        await vault.memory.save_messages([Message.user("z" * 900)], thread_id="t", resource_id="r")
    finally:
        await vault.memory.close()


def test_message_too_large_is_a_validation_error() -> None:
    assert issubclass(MessageTooLargeError, ValidationError)


async def test_the_default_limit_accepts_a_megabyte(vault: Vault) -> None:
    text = "word " * 200_000
    await vault.memory.save_messages([Message.user(text, id="big")], thread_id="t", resource_id="r")
    (back,) = await vault.memory.get_messages(ids=["big"], thread_id="t", resource_id="r")
    assert back.text == text


# -- what is accepted --------------------------------------------------------------------------


async def test_dict_messages_in_our_shape_are_accepted(vault: Vault) -> None:
    original = Message(
        role="assistant",
        id="m2",
        parts=[
            {"type": "text", "text": "looking it up"},
            {"type": "tool-call", "tool_call_id": "c1", "name": "lookup", "args": {"q": "tea"}},
        ],
        metadata={"model": "x", "n": [1, 2.5, None, True]},
    )
    dicts = [
        {"role": "user", "id": "m1", "parts": [{"type": "text", "text": "hi"}]},
        original.model_dump(mode="json"),
        {"role": "tool", "id": "m3", "parts": [{"type": "tool-result", "tool_call_id": "c1",
                                                "output": {"ok": True}}],
         "created_at": "2024-05-01T12:00:00+02:00"},
    ]
    saved = await vault.memory.save_messages(dicts, thread_id="d", resource_id="r")
    back = await vault.memory.get_messages(thread_id="d", resource_id="r")
    assert [m.id for m in saved] == [m.id for m in back] == ["m1", "m2", "m3"]
    assert back[1].parts == original.parts
    assert back[1].metadata == original.metadata
    assert back[2].created_at.isoformat() == "2024-05-01T10:00:00+00:00"


# -- URLs and the default location -------------------------------------------------------------


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize(
    "url",
    [
        "nosuch://x",
        "http://example.com/db",
        "postgresql://localhost/db?max_size=0",
        "sqlite:///x.db?bogus=1",
        "sqlite:///x.db?durability=1&bogus=1",
        "sqlite:///x.db?durability=fast",
        "sqlite:///x.db?busy_timeout=soon",
        "sqlite://",
        "sqlite:///",
        "x.db",
    ],
)
async def test_bad_urls_raise_configuration_error(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError):
        await Memory.open(url)
    assert listing(tmp_path) == []


@pytest.mark.parametrize("value", ["nan", "-5"])
async def test_busy_timeout_must_be_a_sane_number(value: str, tmp_path: Path) -> None:
    try:
        memory = await Memory.open(f"sqlite:///{tmp_path}/b.db?busy_timeout={value}")
    except ConfigurationError:
        return
    await memory.close()
    pytest.fail(f"busy_timeout={value} was accepted")


def test_configuration_error_is_a_memvault_value_error() -> None:
    from memvault import MemvaultError

    assert issubclass(ConfigurationError, MemvaultError)
    assert issubclass(ConfigurationError, ValueError)


async def test_default_url_honours_memvault_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/from-env.db"
    monkeypatch.setenv("MEMVAULT_DB", url)
    assert default_url() == url
    async with await Memory.open() as memory:
        await memory.save_messages([Message.user("hi")], thread_id="t", resource_id="r")
    assert (tmp_path / "from-env.db").exists()


def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """Point the user data folder into tmp_path (honoured by platformdirs on Linux)."""
    monkeypatch.delenv("MEMVAULT_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / name))
    monkeypatch.chdir(tmp_path)
    expected = platformdirs.user_data_path("memvault", appauthor=False) / "memvault.db"
    if not expected.is_relative_to(tmp_path):
        pytest.skip("this platform's data folder does not follow XDG_DATA_HOME")
    return expected


async def test_default_url_is_an_absolute_path_in_the_user_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMVAULT_DB", raising=False)
    url = default_url()
    assert url.startswith("sqlite:///")
    path = Path(url.removeprefix("sqlite:///"))
    assert path.is_absolute()
    assert path == platformdirs.user_data_path("memvault", appauthor=False) / "memvault.db"

    expected = data_home(tmp_path, monkeypatch, "data")
    assert default_url() == f"sqlite:///{expected}"
    async with await Memory.open() as memory:
        await memory.save_messages([Message.user("hi")], thread_id="t", resource_id="r")
    assert expected.is_file()
    assert listing(tmp_path) == ["data"]  # nothing in the working directory


async def test_default_location_with_url_characters_in_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = data_home(tmp_path, monkeypatch, "my#data?dir")
    async with await Memory.open() as memory:
        await memory.save_messages([Message.user("hi")], thread_id="t", resource_id="r")
    assert expected.is_file()
