"""Property test: full-text search accepts any string, and every store finds what the reference
store (``memory://``) finds for it, message for message.

Queries are arbitrary text (punctuation, operators of every search syntax, CJK, emoji, NUL, lone
surrogates) mixed with the corpus's own words, so that most of them match something. A search
may only ever return hits; an exception, typed or not, fails the test.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Message
from memvault.testing import has

T = TypeVar("T")

R = "alice"
CORPUS = [
    "What's it? Nobody knows.", "it's raining again", "rain is wet, as usual", "I run; she runs",
    "plan A or plan B", "s", "the the the", "我喜欢中文和茶", "日本語のテキスト", "한국어 텍스트",
    "emoji 🌏 party 🎉", "café naïve résumé", "Ελληνικά γράμματα", "ПРИВЕТ мир", "x y z 42 3.14",
    "incredibly psychology apology", "don't stop-believing", "NEAR(a b) AND OR NOT", "'' | '' <-> !",
    "中" * 40, "tea " * 50,
]
WORDS = sorted({w for text in CORPUS for w in text.replace(",", " ").split()} | {"is", "as", "S"})
SEPARATORS = st.sampled_from([" ", "'", "\"", "&", "|", "!", "(", ")", ":", "*", "<->", "\\", "\x00", ""])
PIECES = st.one_of(st.sampled_from(WORDS), st.text(max_size=6),
                   st.text(alphabet=st.characters(codec="utf-8"), max_size=4),
                   st.sampled_from(["\ud800", "\x00", "中文", "🎉", "'s"]))
QUERY = st.one_of(
    st.text(max_size=40),
    st.lists(st.tuples(PIECES, SEPARATORS), max_size=8).map(lambda ps: "".join(p + s for p, s in ps)),
)


async def _open(factory: Any, folder: Path, stack: AsyncExitStack) -> tuple[Memory, Memory]:
    """The store under test and the reference store, both holding :data:`CORPUS`."""
    memory = await stack.enter_async_context(factory.memory(folder))
    if not has(memory, "full_text"):
        pytest.skip(f"{type(memory.store).__name__} ({factory.id}) has no full_text capability")
    reference = await stack.enter_async_context(await Memory.open("memory://"))
    for store in (memory, reference):
        await store.save_messages([Message.user(t, id=f"m{i}") for i, t in enumerate(CORPUS)],
                                  thread_id="t", resource_id=R)
    return memory, reference


async def _found(memory: Memory, query: str) -> list[str]:
    hits = await memory.search_messages(resource_id=R, query=query, limit=len(CORPUS) + 1)
    return sorted(h.message.id for h in hits)


def for_any_query(
    store_factory: Any, setup: Callable[[Any, Path, AsyncExitStack], Awaitable[T]],
    check: Callable[[asyncio.AbstractEventLoop, T, str], None], *, examples: int,
) -> None:
    """Hypothesis over :data:`QUERY`: ``check(loop, opened, query)`` for each example, where
    ``opened`` is what ``setup(store_factory, folder, stack)`` opened once in a temporary
    folder (closed with ``stack`` at the end), every call on one event loop."""
    loop = asyncio.new_event_loop()
    stack = AsyncExitStack()
    try:
        with tempfile.TemporaryDirectory() as folder:
            try:
                opened = loop.run_until_complete(setup(store_factory, Path(folder), stack))

                @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
                @given(query=QUERY)
                def run(query: str) -> None:
                    check(loop, opened, query)

                run()
            finally:
                loop.run_until_complete(stack.aclose())
    finally:
        loop.close()


def test_any_query_finds_what_the_reference_finds(store_factory: Any) -> None:
    def check(loop: asyncio.AbstractEventLoop, opened: tuple[Memory, Memory], query: str) -> None:
        memory, reference = opened
        got = loop.run_until_complete(_found(memory, query))
        assert got == loop.run_until_complete(_found(reference, query)), query

    for_any_query(store_factory, _open, check, examples=300)
