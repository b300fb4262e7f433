"""Search keeps working when the full-text index cannot be written: a full disk, a read-only file
system. The index is filled lazily (before a search); when that write fails with "disk is full"
or "read-only", the search reads the unindexed messages directly, logs a warning, and returns
what it would have returned with the index.

The disk is a real, small tmpfs filled up with a file (it needs root; these tests skip without
it). A read-only file system is a tmpfs remounted read-only after a writer process was killed
with messages not indexed yet (a file system cannot be remounted read-only under an open
writer), and opened with ``?mode=ro``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memvault import Memory, Message
from memvault.errors import StoreError
from memvault.stores.sqlite.schema import unindexed
from mounts import remount, tmpfs

TEXTS = [f"{a} {b} message {i}" for i, (a, b) in enumerate(
    (a, b) for a in ("fox", "lamp", "river", "garden") for b in ("quiet", "orange", "fox", "tea"))]
QUERIES = ["fox", "quiet orange", "garden tea message", "river", "nothing-matches"]


async def _expected(folder: Path) -> dict[str, list[tuple[str, float]]]:
    """The hits of a SQLite store over the same messages, all indexed."""
    async with await Memory.open(f"sqlite:///{folder}/reference.db") as reference:
        await reference.save_messages([Message.user(t, id=f"m{i}") for i, t in enumerate(TEXTS)],
                                      thread_id="t", resource_id="r")
        return {q: _hits(await reference.search_messages(resource_id="r", query=q, limit=50))
                for q in QUERIES}


def _hits(found: list) -> list[tuple[str, float]]:  # type: ignore[type-arg]
    return [(h.message.id, round(h.score, 9)) for h in found]


def _fill(folder: Path) -> None:
    """Write a file until the file system is full."""
    try:
        with (folder / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
    except OSError:
        pass


async def test_search_on_a_full_disk(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    expected = await _expected(tmp_path)
    with tmpfs(tmp_path / "mnt", size="2m") as folder:
        memory = await Memory.open(f"sqlite:///{folder}/m.db")
        try:
            await memory.save_messages([Message.user(t, id=f"m{i}") for i, t in enumerate(TEXTS)],
                                       thread_id="t", resource_id="r")
            assert await memory.store._worker.read_one(unindexed) == len(TEXTS)  # type: ignore[attr-defined]
            _fill(folder)
            with caplog.at_level(logging.WARNING, "memvault.sqlite"):
                for query in QUERIES:
                    found = await memory.search_messages(resource_id="r", query=query, limit=50)
                    assert _hits(found) == expected[query], query
            assert "full-text indexing failed" in caplog.text and "full" in caplog.text
            with pytest.raises(StoreError, match="is full"):  # a write says why it failed
                await memory.save_messages([Message.user("x" * 100_000)], thread_id="t", resource_id="r")
            (folder / "filler").unlink()
            assert await memory.store.index_pending() == len(TEXTS)  # type: ignore[attr-defined]
            for query in QUERIES:
                found = await memory.search_messages(resource_id="r", query=query, limit=50)
                assert _hits(found) == expected[query]
        finally:
            await memory.close()


async def test_search_on_a_read_only_file_system(tmp_path: Path) -> None:
    expected = await _expected(tmp_path)
    with tmpfs(tmp_path / "mnt", size="8m") as folder:
        script = textwrap.dedent(f"""
            import asyncio, os
            from memvault import Memory, Message
            async def main():
                memory = await Memory.open("sqlite:///{folder}/m.db")
                saved = [Message.user(t, id="m" + str(i)) for i, t in enumerate({TEXTS!r})]
                await memory.save_messages(saved, thread_id="t", resource_id="r")
                os._exit(0)  # killed: no close, so nothing indexed and the log not checkpointed
            asyncio.run(main())
            """)
        writer = subprocess.run([sys.executable, "-c", script],  # noqa: ASYNC221 - a real writer process
                                capture_output=True, text=True, timeout=120)
        assert writer.returncode == 0, writer.stderr
        remount(folder, "ro")
        async with await Memory.open(f"sqlite:///{folder}/m.db?mode=ro") as memory:
            assert len(await memory.get_messages(thread_id="t", resource_id="r")) == len(TEXTS)
            for query in QUERIES:
                found = await memory.search_messages(resource_id="r", query=query, limit=50)
                assert _hits(found) == expected[query]
