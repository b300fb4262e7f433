"""The sync twin after close: every call raises StoreClosedError at once (no raw RuntimeError
from a closed event loop, no hang); closing twice is harmless. Methods are enumerated by
introspection, with the arguments of the conformance case (memvault.testing.suite.test_closing)."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from memvault import Message
from memvault.errors import StoreClosedError
from memvault.sync import Memory
from memvault.testing.suite.test_closing import HARMLESS, _arguments


def _within(seconds: float, call: Any) -> Any:
    """``call()`` on a thread; fails the test if it has not returned after ``seconds``."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("ok", call()))
        except BaseException as exc:
            outcome.append(("error", exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"{call} hung"
    return outcome[0]


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_every_sync_call_after_close_is_refused(url: str, tmp_path: Path) -> None:
    memory = Memory.open(f"sqlite:///{tmp_path}/s.db" if url == "sqlite" else url)
    memory.save_messages([Message.user("hi")], thread_id="closed-thread", resource_id="closed-res")
    memory.close()
    names = sorted(n for n, _ in inspect.getmembers(Memory, inspect.isfunction) if not n.startswith("_"))
    assert "save_messages" in names and "recall_reader" in names
    for name in names:
        if name in HARMLESS | {"open"}:
            continue
        method = getattr(Memory, name)
        kind, value = _within(5, lambda m=method: m(memory, **_arguments(m)))
        assert kind == "error" and isinstance(value, StoreClosedError), f"{name}: {kind} {value!r}"
    for name in HARMLESS:  # nothing left to do: no error
        assert _within(5, getattr(memory, name))[0] == "ok", name
    for _ in range(3):  # no state stuck behind a refusal
        kind, value = _within(5, lambda: memory.save_messages(
            [Message.user("again")], thread_id="closed-thread", resource_id="closed-res"))
        assert isinstance(value, StoreClosedError)
    assert _within(5, memory.close)[0] == "ok"
