"""``memvault bench calls``: how many store calls a turn makes before the model runs.

A proxy around the real store (:func:`counting`) records every call by name. The workload: a
resource with an earlier conversation about tea and a working-memory note, then a turn with
recall on ("Which tea do I like?") in another thread; the scripted model notes the calls made
when it is first called. Counted on each store URL given (default: ``memory://`` and a
temporary SQLite file)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memvault.llm.base import ChatMessage, ModelResponse, Tool
from memvault.llm.scripted import ScriptedModel
from memvault.memory import Memory
from memvault.model import Message
from memvault.runtime.turn import Turn, TurnOptions
from memvault.stores import open_store
from memvault.stores.capabilities import BatchReads, CompleteStore, PassageReads, PoolSearch, methods_of


class Counting:
    """Stands for a store: every method call is forwarded and its name recorded in ``calls``."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.calls: list[str] = []

    async def close(self) -> None:
        await self._store.close()


def counting(store: Any) -> Counting:
    """A proxy with every method ``store`` has of :class:`CompleteStore`, :class:`BatchReads`,
    :class:`PassageReads` and :class:`PoolSearch` (so the capability guards answer as they
    would for ``store``, and recall takes the path it takes on ``store``)."""
    kind = type(f"Counting{type(store).__name__}", (Counting,), {})
    for name in (methods_of(CompleteStore) | methods_of(BatchReads) | methods_of(PassageReads)
                 | methods_of(PoolSearch)):
        if name == "close" or not callable(getattr(store, name, None)):
            continue

        def forward(self: Counting, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            self.calls.append(_name)
            return getattr(self._store, _name)(*args, **kwargs)

        setattr(kind, name, forward)
    proxy: Counting = kind(store)
    return proxy


class Watching(ScriptedModel):
    """A scripted model that keeps the store calls made when it is first called."""

    def __init__(self, store: Counting, replies: list[Any]) -> None:
        super().__init__(replies)
        self.store = store
        self.seen: list[str] | None = None

    async def complete(self, messages: Sequence[ChatMessage], *, tools: Sequence[Tool] | None = None,
                       max_tokens: int | None = None) -> ModelResponse:
        if self.seen is None:
            self.seen = list(self.store.calls)
        return await super().complete(messages, tools=tools, max_tokens=max_tokens)


async def seed(memory: Memory) -> None:
    """The earlier conversation and the note the turn recalls."""
    await memory.save_messages(
        [Message.user("I love jasmine tea in the morning"), Message.assistant("Jasmine tea, noted."),
         Message.user("And green tea after lunch"), Message.assistant("Green tea too.")],
        thread_id="monday", resource_id="ada")
    await memory.update_working_memory("- Name: Ada", resource_id="ada")
    await memory.save_messages([Message.user("Hello"), Message.assistant("Hi Ada")],
                               thread_id="friday", resource_id="ada")


async def turn_calls(store: Counting) -> tuple[list[str], Turn]:
    """The store calls a recall-on turn makes before its model runs, and the turn."""
    memory = Memory(store)  # type: ignore[arg-type]  # the proxy has the store's methods
    await seed(memory)
    store.calls.clear()
    model = Watching(store, ["You like jasmine tea."])
    async with Turn(memory, thread_id="friday", resource_id="ada", user_message="Which tea do I like?",
                    model=model, options=TurnOptions(titles=False, summaries=None)) as turn:
        await turn.run()
    assert model.seen is not None
    return model.seen, turn


async def _count(url: str) -> dict[str, Any]:
    store = counting(await open_store(url))
    try:
        calls, _ = await turn_calls(store)
    finally:
        await store.close()
    return {"calls_before_the_model": len(calls), "calls": calls}


def run(urls: Sequence[str] = ()) -> dict[str, Any]:
    """The calls per store (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="memvault-calls-") as folder:
        chosen = list(urls) or ["memory://", f"sqlite:///{Path(folder) / 'calls.db'}"]
        return {"benchmark": "calls", "stores": {url.split(":")[0]: asyncio.run(_count(url))
                                                  for url in chosen}}
