"""``sqlite:///file.db?mode=ro``: opening writes nothing to the database file, reads and search
work (messages another process saved and did not index yet included, scored exactly as indexed
ones), and every write raises ReadOnlyStoreError with nothing written."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.errors import ReadOnlyStoreError, SchemaVersionError, StoreOpenError
from memvault.stores.sqlite.schema import LATEST, migrate
from memvault.testing.suite.test_closing import SAMPLES, _arguments

WORDS = ["fox", "river", "lamp", "quiet", "orange", "garden"]


def _digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


async def _filled(path: Path, count: int = 30) -> None:
    async with await Memory.open(f"sqlite:///{path}") as memory:
        await memory.save_messages(
            [Message.user(f"{WORDS[i % 6]} {WORDS[(i * 5) % 6]} note {i}", id=f"m{i}") for i in range(count)],
            thread_id="t", resource_id="r")
        await memory.update_working_memory("a note", resource_id="r")


async def test_opening_and_reading_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    await _filled(path)
    before = _digest(path)
    async with await Memory.open(f"sqlite:///{path}?mode=ro") as memory:
        assert len(await memory.get_history(thread_id="t", resource_id="r", last_n=5)) == 5
        assert len(await memory.get_messages(thread_id="t", resource_id="r")) == 30
        assert await memory.get_working_memory(resource_id="r") == "a note"
        assert await memory.search_messages(resource_id="r", query="fox")
        assert (await memory.recall(resource_id="r", thread_id="t", query="orange lamp")).messages is not None
    assert _digest(path) == before
    # SQLite itself creates the -shm index (and an empty -wal) a WAL reader needs, if missing
    assert _wal_size(path) == 0


async def test_every_write_is_refused_with_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    await _filled(path)
    before = _digest(path)
    writes = ["create_thread", "update_thread", "delete_thread", "save_messages", "delete_messages",
              "clear_thread", "delete_resource", "purge", "set_retention", "update_working_memory",
              "set_state", "compare_and_set_state", "delete_state", "save_summary", "delete_summary",
              "reindex", "clear_embeddings", "import_records"]
    async with await Memory.open(f"sqlite:///{path}?mode=ro") as memory:
        for name in writes:
            method = getattr(Memory, name)
            arguments = _arguments(method)
            if "resource_id" in arguments:
                arguments["resource_id"] = "r"
            if name == "import_records":
                arguments["records"] = [{"kind": "thread", "id": "n", "resource_id": "r"}]
            if name in ("update_thread", "delete_thread", "clear_thread", "delete_messages", "save_summary"):
                arguments["thread_id"] = "t"
            if name == "save_summary":
                arguments["through_message_id"] = "m3"
            with pytest.raises(ReadOnlyStoreError):
                await asyncio.wait_for(getattr(memory, name)(**arguments), 10)
        assert len(await memory.get_messages(thread_id="t", resource_id="r")) == 30
    assert _digest(path) == before
    assert SAMPLES  # the shared samples of the closing case


async def test_search_finds_what_another_process_saved_and_did_not_index(tmp_path: Path) -> None:
    """A writer process saves messages (fewer than the indexing batch, so it leaves them
    unindexed) while a read-only store searches: the reader's hits and scores equal those of a
    read-write store over the fully indexed file."""
    path = tmp_path / "m.db"
    await _filled(path, 10)
    async with await Memory.open(f"sqlite:///{path}?mode=ro") as reader:
        script = textwrap.dedent(f"""
            import asyncio, sys
            from memvault import Memory, Message
            async def main():
                async with await Memory.open("sqlite:///{path}") as memory:
                    for i in range(40):
                        message = Message.user("fox garden later " + str(i), id="w" + str(i))
                        await memory.save_messages([message], thread_id="t2", resource_id="r")
                        print(i, flush=True)
                    sys.stdin.readline()  # stays open, its messages unindexed, until told
            asyncio.run(main())
            """)
        writer = subprocess.Popen(  # noqa: ASYNC220 - a real concurrent writer process
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert writer.stdout is not None and writer.stdin is not None
            seen = 0
            while seen < 40:  # search while the writer goes on
                line = writer.stdout.readline()
                assert line, "the writer process died"
                seen = int(line) + 1
                if seen % 10 == 0:
                    hits = await reader.search_messages(resource_id="r", query="fox garden", limit=100)
                    assert {f"w{i}" for i in range(seen)} <= {h.message.id for h in hits}
            during = await reader.search_messages(resource_id="r", query="fox garden later", limit=100)
            writer.stdin.write("\n")
            writer.stdin.flush()
            assert writer.wait(60) == 0
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    async with await Memory.open(f"sqlite:///{path}") as indexed:
        await indexed.store.index_pending()  # type: ignore[attr-defined]
        after = await indexed.search_messages(resource_id="r", query="fox garden later", limit=100)
    assert [(h.message.id, round(h.score, 9)) for h in during] == [
        (h.message.id, round(h.score, 9)) for h in after]


async def test_an_older_schema_is_refused_not_migrated(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    migrate(conn, LATEST - 1)
    conn.execute("COMMIT")
    conn.close()
    before = _digest(path)
    with pytest.raises(StoreOpenError, match="older than this memvault") as caught:
        await Memory.open(f"sqlite:///{path}?mode=ro")
    assert str(path) in str(caught.value)
    assert _digest(path) == before


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "new.db"
    await _filled(path, 1)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (LATEST + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError):
        await Memory.open(f"sqlite:///{path}?mode=ro")


async def test_a_missing_file_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match="does not exist"):
        await Memory.open(f"sqlite:///{tmp_path}/sub/none.db?mode=ro")
    assert os.listdir(tmp_path) == []
