"""Opening is honest: every way a SQLite path can be wrong gives a typed error naming the path and
the cause, with nothing written, and ``memvault stats`` says it in one line.

All over real files and folders. Tests run as root here, which bypasses file permissions: a
folder without write permission cannot be tested as such; a read-only *file system* (a tmpfs
remounted read-only) stands in for it, and the permission checks are exercised on files under
``/proc`` (which root cannot create either).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.errors import (
    ConfigurationError,
    EncryptionKeyError,
    MemvaultError,
    StoreOpenError,
)
from memvault.stores.sqlite import SqliteStore
from mounts import remount, tmpfs


async def _open_error(url: str) -> MemvaultError:
    try:
        memory = await Memory.open(url)
    except MemvaultError as exc:
        return exc
    await memory.close()
    pytest.fail(f"{url} opened")


async def test_a_folder_in_place_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "m.db").mkdir()
    error = await _open_error(f"sqlite:///{tmp_path}/m.db")
    assert isinstance(error, StoreOpenError)
    assert str(tmp_path / "m.db") in str(error) and "is a folder" in str(error)
    assert error.location == str(tmp_path / "m.db")
    assert os.listdir(tmp_path / "m.db") == []


@pytest.mark.parametrize("below", ["m.db", "deeper/m.db"])
async def test_a_parent_that_is_a_regular_file(tmp_path: Path, below: str) -> None:
    (tmp_path / "plain").write_text("x")
    error = await _open_error(f"sqlite:///{tmp_path}/plain/{below}")
    assert isinstance(error, StoreOpenError)
    assert f"{tmp_path}/plain is a file, not a folder" in str(error)
    assert (tmp_path / "plain").read_text() == "x"


async def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"shopping list: milk, eggs, bread\n" * 200)
    before = path.read_bytes()
    error = await _open_error(f"sqlite:///{path}")
    # SQLite cannot tell a file that is not a database from an encrypted one
    assert isinstance(error, EncryptionKeyError) and isinstance(error, StoreOpenError)
    assert str(path) in str(error) and "not a SQLite database" in str(error)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


async def test_a_folder_that_cannot_be_created(tmp_path: Path) -> None:
    error = await _open_error("sqlite:////proc/self/no-such-folder/m.db")
    assert isinstance(error, StoreOpenError) and "/proc/self/no-such-folder/m.db" in str(error)


async def test_a_file_that_cannot_be_created() -> None:
    error = await _open_error("sqlite:////proc/m.db")  # not even root creates files in /proc
    assert isinstance(error, StoreOpenError) and "/proc/m.db" in str(error)


@pytest.mark.parametrize("path", ["a\x00b.db", "bad-\udc80.db", ""])
async def test_paths_sqlite_cannot_take(tmp_path: Path, path: str) -> None:
    with pytest.raises(ConfigurationError):
        await SqliteStore.open(str(tmp_path / path) if path else path)
    assert os.listdir(tmp_path) == []


async def test_a_nul_in_a_url(tmp_path: Path) -> None:
    assert isinstance(await _open_error(f"sqlite:///{tmp_path}/a%00b.db"), ConfigurationError)


async def test_a_read_only_file_system_says_so(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt") as folder:
        remount(folder, "ro")
        error = await _open_error(f"sqlite:///{folder}/m.db")
        assert isinstance(error, StoreOpenError)
        assert "read-only file system" in str(error) and f"{folder}/m.db" in str(error)


async def test_an_existing_file_on_a_read_only_file_system_names_the_cause_and_mode_ro(
        tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt") as folder:
        async with await Memory.open(f"sqlite:///{folder}/m.db") as memory:
            await memory.save_messages([Message.user("kept")], thread_id="t", resource_id="r")
        remount(folder, "ro")
        error = await _open_error(f"sqlite:///{folder}/m.db")
        assert isinstance(error, StoreOpenError)
        assert "read-only file system" in str(error) and "mode=ro" in str(error)
        async with await Memory.open(f"sqlite:///{folder}/m.db?mode=ro") as reader:
            assert [m.text for m in await reader.get_messages(thread_id="t", resource_id="r")] == ["kept"]


async def test_memory_path_is_an_in_process_database() -> None:
    """``sqlite:///:memory:`` works: one connection, so history reads see what was written."""
    async with await Memory.open("sqlite:///:memory:") as memory:
        await memory.save_messages([Message.user("hello there"), Message.assistant("hi")],
                                   thread_id="t", resource_id="r")
        assert [m.text for m in await memory.get_history(thread_id="t", resource_id="r")] == [
            "hello there", "hi"]
        assert [h.message.text for h in await memory.search_messages(resource_id="r", query="hello")] == [
            "hello there"]
        await memory.delete_thread(thread_id="t", resource_id="r")
        assert await memory.get_messages(thread_id="t", resource_id="r") == []
    assert ":memory:" not in os.listdir()


async def test_memory_path_cannot_be_read_only() -> None:
    assert isinstance(await _open_error("sqlite:///:memory:?mode=ro"), ConfigurationError)


def test_the_cli_says_it_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "folder.db").mkdir()
    (tmp_path / "plain").write_text("x")
    (tmp_path / "text.db").write_text("not a database" * 100)
    for db in (f"sqlite:///{tmp_path}/folder.db", f"sqlite:///{tmp_path}/plain/m.db",
               f"sqlite:///{tmp_path}/text.db", f"sqlite:///{tmp_path}/none.db?mode=ro"):
        done = subprocess.run([sys.executable, "-m", "memvault", "stats", "--db", db],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 1, (db, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert db.split("///")[1].split("?")[0] in lines[0]
