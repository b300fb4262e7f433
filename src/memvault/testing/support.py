"""Helpers shared by the conformance tests (the fixtures are in :mod:`memvault.testing.plugin`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Sequence
from typing import Any

from pydantic import BaseModel

from memvault import Memory, MemoryOptions, Message, State, Summary, Thread, WorkingMemoryOptions
from memvault.testing import has


def ids(messages: Sequence[Any]) -> list[str]:
    """Message ids, from messages or search hits."""
    return [getattr(m, "message", m).id for m in messages]


async def tick() -> None:
    """Let the clock move on so that the next write has a strictly later timestamp."""
    await asyncio.sleep(0.002)


def with_options(memory: Memory, **options: Any) -> Memory:
    """Another view of the same store with other options (never closed: the fixture closes)."""
    return Memory(memory.store, MemoryOptions(**options))


def with_working_memory(memory: Memory, **options: Any) -> Memory:
    return with_options(memory, working_memory=WorkingMemoryOptions(**options))


async def save_texts(
    memory: Memory, texts: dict[str, str], *, thread_id: str, resource_id: str
) -> list[Message]:
    """Save one user message per ``{id: text}``, in order."""
    messages = [Message.user(text, id=message_id) for message_id, text in texts.items()]
    return await memory.save_messages(messages, thread_id=thread_id, resource_id=resource_id)


def dump(value: Any) -> Any:
    """A plain, comparable form of what a Memory call returned."""
    if isinstance(value, Thread | State):  # their clock readings differ from call to call
        return value.model_dump(mode="json", exclude={"created_at", "updated_at"})
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    return value


async def outcome(call: Awaitable[Any], *, replace: dict[str, str] | None = None) -> str:
    """What a call did, as text: its dumped return value or its exception's type and message.
    ``replace`` maps strings (e.g. thread ids) to placeholders so two outcomes compare."""
    try:
        result: list[Any] = ["returned", dump(await call)]
    except Exception as exc:  # the outcome is the exception: type and message
        result = ["raised", type(exc).__name__, str(exc)]
    text = json.dumps(result, sort_keys=True, ensure_ascii=False)
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    return text


async def snapshot(
    memory: Memory, resource_id: str, thread_ids: Sequence[str], words: Sequence[str] = ()
) -> dict[str, Any]:
    """Everything a user can read about a resource: threads, messages, search hits for
    ``words``, working memory (resource and per-thread scope), summaries and states. What the
    store has no capability for reads as empty (no hits, no summary, no states)."""
    scoped = with_working_memory(memory, scope="thread")
    summaries, states, search = has(memory, "summaries"), has(memory, "states"), has(memory, "full_text")
    threads = {
        tid: {
            "thread": _full(await memory.get_thread(thread_id=tid, resource_id=resource_id)),
            "messages": dump(await memory.get_messages(thread_id=tid, resource_id=resource_id)),
            "working_memory": await scoped.get_working_memory(
                resource_id=resource_id, thread_id=tid
            ),
            "summary": _full(await memory.get_summary(thread_id=tid, resource_id=resource_id))
            if summaries else None,
        }
        for tid in thread_ids
    }
    page = await memory.list_threads(resource_id=resource_id, limit=100)
    return {
        "threads": threads,
        "listed": [t.id for t in page.threads],
        "search": {  # which messages are found (scores are compared in test_isolation)
            w: [[h.message.thread_id, h.message.id]
                for h in await memory.search_messages(resource_id=resource_id, query=w)]
            if search else []
            for w in words
        },
        "working_memory": await memory.get_working_memory(resource_id=resource_id),
        "states": dump(await memory.list_states(resource_id=resource_id)) if states else [],
    }


def _full(record: Thread | Summary | None) -> Any:
    return record.model_dump(mode="json") if record else None


def tool_call_ids(messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    calls = [p.tool_call_id for m in messages for p in m.tool_calls]
    results = [p.tool_call_id for m in messages for p in m.tool_results]
    return calls, results


def assert_tool_pairs_complete(messages: Sequence[Message]) -> None:
    """No tool call without its result, no result without its call, no emptied message."""
    calls, results = tool_call_ids(messages)
    assert set(calls) == set(results), f"unpaired tool parts: calls {calls}, results {results}"
    assert all(m.parts for m in messages), "a message with no parts was returned"
