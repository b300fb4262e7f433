"""A damaged SQLite file never gives a raw error or a hang: opening it and every call on it either
works or raises a memvault error (a StoreOpenError or StoreError naming the file).

The damage is real: garbage bytes written into a real database file, or the file cut short.
Hypothesis picks where and what; ``MEMVAULT_CORRUPTION_EXAMPLES`` runs more cases (default 25).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.errors import MemvaultError, SchemaVersionError, StoreError, StoreOpenError

EXAMPLES = int(os.environ.get("MEMVAULT_CORRUPTION_EXAMPLES", "25"))
TIMEOUT = 20.0
PAGE = 4096

Call = Callable[[Memory], Awaitable[Any]]
CALLS: list[tuple[str, Call]] = [
    ("get_history", lambda m: m.get_history(thread_id="t0", resource_id="r")),
    ("get_messages", lambda m: m.get_messages(thread_id="t1", resource_id="r")),
    ("list_threads", lambda m: m.list_threads(resource_id="r")),
    ("search", lambda m: m.search_messages(resource_id="r", query="garden lamp")),
    ("recall", lambda m: m.recall(resource_id="r", thread_id="t0", query="river fox")),
    ("note", lambda m: m.get_working_memory(resource_id="r")),
    ("states", lambda m: m.list_states(resource_id="r")),
    ("stats", lambda m: m.stats(resource_id="r")),
    ("save", lambda m: m.save_messages([Message.user("after damage")], thread_id="t0", resource_id="r")),
    ("delete", lambda m: m.delete_messages(["m3"], thread_id="t1", resource_id="r")),
    ("set_state", lambda m: m.set_state(resource_id="r", key="k2", value={"v": 2})),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real database of a few hundred messages over several pages, closed (no -wal left)."""
    path = tmp_path_factory.mktemp("pristine") / "m.db"

    async def fill() -> None:
        async with await Memory.open(f"sqlite:///{path}") as memory:
            words = ["garden", "lamp", "river", "fox", "quiet", "tea"]
            for t in range(3):
                await memory.save_messages(
                    [Message.user(f"{words[i % 6]} {words[(i * 5) % 6]} " + "text " * 40, id=f"m{i}")
                     for i in range(150)], thread_id=f"t{t}", resource_id="r")
            await memory.update_working_memory("the note", resource_id="r")
            await memory.set_state(resource_id="r", key="k", value={"v": 1})
            await memory.store.index_pending()  # type: ignore[attr-defined]

    asyncio.run(fill())
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return path


async def _exercise(path: Path) -> list[str]:
    """Open ``path`` and make every call; the names of the outcomes. Fails the test on a raw
    error or a hang."""
    outcomes: list[str] = []
    failed: MemvaultError | None = None
    try:
        memory = await asyncio.wait_for(Memory.open(f"sqlite:///{path}"), TIMEOUT)
    except MemvaultError as exc:
        failed = exc
    if failed is not None:  # garbage may also read as a newer schema version
        assert isinstance(failed, StoreOpenError | StoreError | SchemaVersionError), repr(failed)
        assert str(path) in str(failed), str(failed)
        return [f"open: {type(failed).__name__}"]
    try:
        for name, call in CALLS:
            try:
                await asyncio.wait_for(call(memory), TIMEOUT)
                outcomes.append(f"{name}: ok")
            except MemvaultError as exc:
                outcomes.append(f"{name}: {type(exc).__name__}")
    finally:
        with contextlib.suppress(MemvaultError):
            await asyncio.wait_for(memory.close(), TIMEOUT)
    return outcomes


def _copy(pristine: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.iterdir():
        leftover.unlink()
    target = folder / "m.db"
    shutil.copyfile(pristine, target)
    return target


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_garbage_bytes_anywhere(pristine: Path, tmp_path: Path, data: st.DataObject) -> None:
    path = _copy(pristine, tmp_path / "case")
    size = path.stat().st_size
    with path.open("r+b") as file:
        for _ in range(data.draw(st.integers(1, 4), label="patches")):
            page = data.draw(st.integers(0, size // PAGE - 1), label="page")
            offset = page * PAGE + data.draw(st.integers(0, PAGE - 1), label="offset")
            garbage = data.draw(st.binary(min_size=1, max_size=PAGE), label="garbage")
            file.seek(offset)
            file.write(garbage[: size - offset])
    asyncio.run(_exercise(path))


@settings(max_examples=max(EXAMPLES // 2, 5), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keep=st.floats(0.0, 0.99))
def test_a_file_cut_short(pristine: Path, tmp_path: Path, keep: float) -> None:
    path = _copy(pristine, tmp_path / "case")
    with path.open("r+b") as file:
        file.truncate(int(path.stat().st_size * keep))
    asyncio.run(_exercise(path))


async def test_a_damaged_page_found_on_a_read_names_the_file(pristine: Path, tmp_path: Path) -> None:
    """Page 1 is intact, so the file opens; a page of messages is garbage: the reads that meet
    it raise a StoreError that says the file is damaged and names it."""
    path = _copy(pristine, tmp_path / "case")
    size = path.stat().st_size
    with path.open("r+b") as file:
        for page in range(size // PAGE // 2, size // PAGE - 1):
            file.seek(page * PAGE)
            file.write(os.urandom(PAGE))
    outcomes = await _exercise(path)
    assert any("StoreError" in o for o in outcomes), outcomes
    memory = await Memory.open(f"sqlite:///{path}")
    try:
        errors: list[StoreError] = []
        for thread in ("t0", "t1", "t2"):
            try:
                await memory.get_messages(thread_id=thread, resource_id="r")
            except StoreError as exc:
                errors.append(exc)
        assert errors and all("damaged" in str(e) and str(path) in str(e) for e in errors), errors
    finally:
        await memory.close()
