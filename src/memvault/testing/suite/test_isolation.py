"""Isolation between resources: another resource's thread is exactly a missing thread.

``CALLS`` lists every Memory method that takes a ``resource_id``; a new method fails
``test_every_method_is_in_the_table`` until a row is added for it.
"""

from __future__ import annotations

import inspect
import io
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memvault import Memory, Message, ToolCallPart, ToolResultPart
from memvault.recall import RecallOptions
from memvault.testing import has
from memvault.testing.support import outcome, save_texts, snapshot, with_working_memory

ALICE, BOB, NOBODY = "alice", "res-bob", "res-nobody"
ALICE_THREAD, MISSING_THREAD = "thread-of-alice", "thread-nobody-has"
ALICE_MESSAGES = [
    Message.user("alice asks about the weather", id="m1"),
    Message(role="assistant", id="m2",
            parts=[ToolCallPart(tool_call_id="c1", name="weather", args={"city": "Oslo"})]),
    Message(role="tool", id="m3", parts=[ToolResultPart(tool_call_id="c1", output="alice snow")]),
    Message.assistant("snow in Oslo, alice", id="m4"),
]
WORDS = ["alice", "weather", "snow"]


@dataclass(frozen=True)
class Call:
    """``memory.<method>(*args, resource_id=..., [thread_id=...], **kwargs)``; ``scope`` is the
    working-memory scope of the Memory it runs on."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    scope: str = "thread"
    needs: tuple[str, ...] = ()  # the optional capabilities the call uses

    def __str__(self) -> str:
        extra = [repr(a)[:20] for a in self.args] + [f"{k}={v!r}"[:24] for k, v in self.kwargs.items()]
        return f"{self.method}({', '.join(extra)})" + ("" if self.scope == "thread" else "[resource]")

    def run(self, memory: Memory, resource_id: str, thread_id: str) -> Any:
        view = with_working_memory(memory, scope=self.scope)
        method = getattr(view, self.method)
        ids = {"resource_id": resource_id}
        if "thread_id" in inspect.signature(method).parameters:
            ids["thread_id"] = thread_id
        return method(*self.args, **{**ids, **self.kwargs})


FIXED = datetime(2024, 1, 1, tzinfo=UTC)
CALLS = [
    Call("create_thread", kwargs={"title": "new title"}),
    Call("create_thread", kwargs={"exist_ok": True}),
    Call("get_thread"),
    Call("list_threads"),
    Call("list_threads", kwargs={"title_contains": "ALICE", "order_by": "created_at", "direction": "asc"}),
    Call("list_threads", kwargs={"metadata": {"owner": "alice"}, "offset": 0}),
    Call("count_threads"),
    Call("count_threads", kwargs={"title_contains": "alice", "metadata": {"owner": "alice"}}),
    Call("update_thread", kwargs={"title": "hijacked"}),
    Call("update_thread", kwargs={"metadata": {"owner": "someone"}}),
    Call("delete_thread"),
    Call("save_messages", ([Message.user("overwrite", id="m1", created_at=FIXED)],)),
    Call("get_messages"),
    Call("get_messages", kwargs={"last_n": 2}),
    Call("get_messages", kwargs={"ids": ["m1", "m3"], "message_range": 1}),
    Call("get_messages", kwargs={"after": "m1"}),
    Call("get_messages", kwargs={"before": "m4", "first_n": 1}),
    Call("get_history"),
    Call("get_history", kwargs={"last_n": 2, "max_tokens": 100}),
    Call("delete_messages", (["m1", "m2"],)),
    Call("clear_thread"),
    Call("delete_resource"),
    Call("search_messages", kwargs={"query": "alice weather"}, needs=("full_text",)),
    Call("search_messages", kwargs={"query": "alice weather", "thread_id": None}, needs=("full_text",)),
    Call("get_working_memory"),
    Call("get_working_memory", scope="resource"),
    Call("update_working_memory", ("new note",)),
    Call("update_working_memory", ("new note",), scope="resource"),
    Call("get_working_memory", kwargs={"scope": "resource"}),
    Call("update_working_memory", ("new note",), {"scope": "resource"}),
    Call("delete_working_memory"),
    Call("delete_working_memory", scope="resource"),
    Call("working_memory_instructions"),
    Call("working_memory_instructions", scope="resource"),
    Call("get_state", kwargs={"key": "run-1"}, needs=("states",)),
    Call("set_state", ("new value",), {"key": "run-1"}, needs=("states",)),
    Call("compare_and_set_state", ("new value",), {"key": "run-1", "expected_version": 1}, needs=("states",)),
    Call("compare_and_set_state", ("new value",), {"key": "run-1", "expected_version": None},
         needs=("states",)),
    Call("list_states", needs=("states",)),
    Call("set_state", ("new value",), {"key": "run-2", "workflow_id": "wf"}, needs=("states",)),
    Call("compare_and_set_state", ("new value",), {"key": "run-2", "expected_version": None, "status": "x"},
         needs=("states",)),
    Call("update_state", kwargs={"key": "run-1", "merge": {"step": 9}}, needs=("states",)),
    Call("update_state", kwargs={"key": "run-1", "status": "done", "expected_version": 1}, needs=("states",)),
    Call("list_states", kwargs={"workflow_id": "wf"}, needs=("states",)),
    Call("list_suspended", needs=("states",)),
    Call("list_suspended", kwargs={"workflow_id": "wf"}, needs=("states",)),
    Call("list_states", kwargs={"status": "running"}, needs=("states",)),
    Call("delete_state", kwargs={"key": "run-1"}, needs=("states",)),
    Call("get_summary", needs=("summaries",)),
    Call("stats", needs=("export",)),
    Call("count_messages"),
    Call("read_turn", kwargs={"last_n": 3}),
    Call("read_turn", kwargs={"last_n": 3}, scope="resource"),
    Call("export_records", (io.StringIO(),),
         needs=("export", "states", "summaries", "embeddings", "full_text")),
    Call("save_summary", ("a hijacked summary",), {"through_message_id": "m2", "expected_version": 1},
         needs=("summaries",)),
    Call("save_summary", ("a hijacked summary",), {"through_message_id": "m2", "expected_version": None},
         needs=("summaries",)),
    Call("delete_summary", needs=("summaries",)),
    Call("recall", kwargs={"query": "alice weather"}, needs=("full_text",)),
    Call("recall", kwargs={"query": "alice weather", "options": RecallOptions(scope="thread")},
         needs=("full_text",)),
    Call("set_retention", (timedelta(days=1),), needs=("retention",)),
    Call("set_retention", (None,), needs=("retention",)),
    Call("get_retention", needs=("retention",)),
    Call("sweep", needs=("retention",)),
]


async def _populate_alice(memory: Memory) -> None:
    await memory.create_thread(resource_id=ALICE, thread_id=ALICE_THREAD, title="Alice's",
                               metadata={"owner": "alice"})
    await memory.save_messages(ALICE_MESSAGES, thread_id=ALICE_THREAD, resource_id=ALICE)
    await save_texts(memory, {"o1": "alice again"}, thread_id="other-of-alice", resource_id=ALICE)
    await with_working_memory(memory, scope="thread").update_working_memory(
        "alice's thread note", resource_id=ALICE, thread_id=ALICE_THREAD)
    await memory.update_working_memory("alice's note", resource_id=ALICE)
    if has(memory, "states"):
        await memory.set_state({"step": 1}, resource_id=ALICE, key="run-1", status="running")
        await memory.set_state({"step": 2}, resource_id=ALICE, key="run-2", status="suspended",
                               workflow_id="wf", thread_id=ALICE_THREAD)
    if has(memory, "summaries"):
        await memory.save_summary("alice asked about Oslo's weather", thread_id=ALICE_THREAD,
                                  resource_id=ALICE, through_message_id="m2", expected_version=None)


def test_every_method_is_in_the_table() -> None:
    scoped = {
        name for name, fn in inspect.getmembers(Memory, inspect.iscoroutinefunction)
        if not name.startswith("_") and "resource_id" in inspect.signature(fn).parameters
    }
    assert scoped - {c.method for c in CALLS} == set()


@pytest.mark.parametrize(
    "call", [pytest.param(c, marks=pytest.mark.capability(*c.needs), id=str(c)) for c in CALLS]
)
async def test_other_resource_sees_a_missing_thread(memory: Memory, call: Call) -> None:
    """Bob calling with Alice's thread id gets what anyone gets for a thread that does not
    exist (same value, same exception and message), and Alice's data does not change."""
    await _populate_alice(memory)
    threads = [ALICE_THREAD, "other-of-alice"]
    before = await snapshot(memory, ALICE, threads, WORDS)

    expected = await outcome(call.run(memory, NOBODY, MISSING_THREAD),
                             replace={NOBODY: "<resource>", MISSING_THREAD: "<thread>"})
    got = await outcome(call.run(memory, BOB, ALICE_THREAD),
                        replace={BOB: "<resource>", ALICE_THREAD: "<thread>"})

    assert got == expected
    assert await snapshot(memory, ALICE, threads, WORDS) == before


async def test_other_resource_sees_none_of_alices_data(memory: Memory) -> None:
    await _populate_alice(memory)
    assert (await memory.list_threads(resource_id=BOB)).threads == []
    search = has(memory, "full_text")
    for word in WORDS if search else []:
        assert await memory.search_messages(resource_id=BOB, query=word) == []
    assert await memory.get_working_memory(resource_id=BOB) is None
    if has(memory, "states"):
        assert await memory.list_states(resource_id=BOB) == []
    # Bob's own thread with Alice's id is a separate thread
    await memory.save_messages([Message.user("bob's weather", id="m1")],
                               thread_id=ALICE_THREAD, resource_id=BOB)
    if search:
        hits = await memory.search_messages(resource_id=BOB, query="weather")
        assert [(h.message.resource_id, h.message.text) for h in hits] == [(BOB, "bob's weather")]
    alice = await memory.get_messages(thread_id=ALICE_THREAD, resource_id=ALICE)
    assert [m.id for m in alice] == ["m1", "m2", "m3", "m4"]
    assert alice[0].text == "alice asks about the weather"


SHARED_WORDS = ["green", "tea", "please", "coffee", "time", "secret", "garden", "paint", "中文"]
QUERIES = ["green tea", "tea", "coffee please", "secret garden", "green paint time", "中文", "zebra"]


def _bob_messages() -> dict[str, list[Message]]:
    """Bob's threads: few messages, the shared words at various frequencies and lengths."""
    at = datetime(2024, 5, 1, tzinfo=UTC)
    texts = {
        "t1": ["tea time", "green tea please", "coffee", "green paint on the garden wall, green",
               "我喜欢中文和茶", "time for a long walk before tea, and then more tea and time"],
        "t2": ["tea in another thread", "secret coffee", "please"],
    }
    return {thread: [Message.user(text, id=f"{thread}-b{i}", created_at=at.replace(minute=i))
                     for i, text in enumerate(lines)] for thread, lines in texts.items()}


async def _what_bob_gets(memory: Memory) -> list[Any]:
    """Every search and recall result of Bob's, score for score."""
    got: list[Any] = []
    for query in QUERIES:
        for kwargs in ({}, {"thread_id": "t1"}, {"limit": 2}):
            hits = await memory.search_messages(resource_id=BOB, query=query, **kwargs)
            got.append([(h.message.id, h.score) for h in hits])
        for scope in ("resource", "thread"):
            result = await memory.recall(resource_id=BOB, query=query, thread_id="t2",
                                         options=RecallOptions(scope=scope, top_k=10))
            got.append([(h.message.id, h.score, h.lexical_score) for h in result.hits])
            got.append([m.id for m in result.messages])
    return got


@pytest.mark.capability("full_text")
async def test_search_scores_do_not_depend_on_other_resources(memory: Memory) -> None:
    """Another resource's writes (thousands of messages full of the same words, in many
    threads, before and after Bob's) change nothing Bob gets back: hits, order and scores of
    search and recall. Its deletions change nothing either."""
    bob = _bob_messages()
    for thread, messages in bob.items():
        await memory.save_messages(messages, thread_id=thread, resource_id=BOB)
    alone = await _what_bob_gets(memory)
    assert all(alone[:3]), "the queries find Bob's messages"

    await memory.delete_resource(resource_id=BOB)
    await memory.save_messages([Message.user(" ".join(SHARED_WORDS), id=f"x{i}") for i in range(300)],
                               thread_id="t1", resource_id=ALICE)
    for thread, messages in bob.items():
        await memory.save_messages(messages, thread_id=thread, resource_id=BOB)
    for batch in range(10):  # 3,000 messages of another resource, every shared word, many lengths
        await memory.save_messages(
            [Message.user(" ".join(SHARED_WORDS[: 1 + (i % len(SHARED_WORDS))] * (1 + i % 3)),
                          id=f"a{batch}-{i}") for i in range(300)],
            thread_id=f"t{batch % 3}", resource_id=ALICE)
    assert await _what_bob_gets(memory) == alone

    await memory.delete_resource(resource_id=ALICE)
    assert await _what_bob_gets(memory) == alone
