"""PersistQueue over a real SQLite file: debouncing, one writer per thread, holding tool calls
back until their results, flushing on errors and cancellation, retrying failed writes."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, Message, TextPart, ToolCallPart, ToolResultPart, ValidationError
from memvault.errors import StoreError
from memvault.runtime import ConversationBuffer, PersistQueue

RESOURCE = "ada"


class RecordingMemory(Memory):
    """The real Memory over a real store, recording each ``save_messages`` call; it can be
    slowed down (``delay``) and made to fail its next ``failures`` calls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.saves: list[tuple[str, list[Message]]] = []
        self.delay = 0.0
        self.failures = 0
        self.busy: Counter[str] = Counter()
        self.most_busy: Counter[str] = Counter()
        self.most_busy_overall = 0

    async def save_messages(
        self, messages: Iterable[Message | Any], *, thread_id: str, resource_id: str
    ) -> list[Message]:
        self.busy[thread_id] += 1
        self.most_busy[thread_id] = max(self.most_busy[thread_id], self.busy[thread_id])
        self.most_busy_overall = max(self.most_busy_overall, sum(self.busy.values()))
        try:
            await asyncio.sleep(self.delay)
            if self.failures:
                self.failures -= 1
                raise StoreError("the disk is full")
            saved = await super().save_messages(messages, thread_id=thread_id, resource_id=resource_id)
            self.saves.append((thread_id, saved))
            return saved
        finally:
            self.busy[thread_id] -= 1


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[RecordingMemory]:
    opened = await RecordingMemory.open(f"sqlite:///{tmp_path / 'memory.db'}")
    assert isinstance(opened, RecordingMemory)
    yield opened
    await opened.close()


async def stored(memory: Memory, thread_id: str = "t1") -> list[Message]:
    return await memory.get_messages(thread_id=thread_id, resource_id=RESOURCE)


def call(call_id: str) -> ToolCallPart:
    return ToolCallPart(tool_call_id=call_id, name="lookup")


def result(call_id: str) -> ToolResultPart:
    return ToolResultPart(tool_call_id=call_id, output="ok")


def buffer_for(thread_id: str = "t1", **kwargs: Any) -> ConversationBuffer:
    return ConversationBuffer(thread_id, RESOURCE, **kwargs)


# debouncing


async def test_debounce_coalesces_many_changes_into_few_writes(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    async with PersistQueue(memory, debounce=0.05) as queue:
        buffer.add_user("hello")
        for i in range(200):
            buffer.append_text(f"{i} ")
            queue.schedule_pending(buffer)
        await asyncio.sleep(0.2)
        assert len(memory.saves) == 1
        assert [m.text for m in await stored(memory)][1].startswith("0 1 2")
    assert len(memory.saves) == 1  # nothing left for the final flush


async def test_a_steady_stream_is_saved_every_debounce_not_only_at_the_end(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    async with PersistQueue(memory, debounce=0.05) as queue:
        for i in range(30):  # changes every 10 ms: a timer pushed back by each change never fires
            buffer.append_text(f"{i} ")
            queue.schedule_pending(buffer)
            await asyncio.sleep(0.01)
        assert len(memory.saves) >= 3
        assert (await stored(memory))[0].text.startswith("0 1 2 3")


async def test_schedule_takes_raw_messages_and_the_newest_version_wins(memory: RecordingMemory) -> None:
    async with PersistQueue(memory, debounce=0.05) as queue:
        for text in ("draft", "better", "final"):
            queue.schedule([Message.user(text, id="m1")], thread_id="t1", resource_id=RESOURCE)
        assert [m.text for m in queue.unsaved(thread_id="t1", resource_id=RESOURCE)] == ["final"]
    assert [m.text for m in await stored(memory)] == ["final"] and len(memory.saves) == 1


async def test_bad_options_are_refused(memory: RecordingMemory) -> None:
    for bad in (-1, "0.2", True, float("nan")):
        with pytest.raises(ValidationError):
            PersistQueue(memory, debounce=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        PersistQueue(memory, dangling="drop")  # type: ignore[arg-type]


# one writer per thread, in order


async def test_one_writer_per_thread_in_order_and_threads_in_parallel(memory: RecordingMemory) -> None:
    memory.delay = 0.03
    buffers = [buffer_for("t1"), buffer_for("t2")]
    async with PersistQueue(memory, debounce=0.0) as queue:
        for i in range(40):
            for buffer in buffers:
                buffer.append_text(f"{i} ")
                queue.schedule_pending(buffer)
            await asyncio.sleep(0.005)
    assert memory.most_busy == {"t1": 1, "t2": 1}
    assert memory.most_busy_overall == 2
    for thread in ("t1", "t2"):
        lengths = [len(m.text) for t, saved in memory.saves if t == thread for m in saved]
        assert lengths == sorted(lengths) and len(lengths) > 2  # each write newer than the last
        assert (await stored(memory, thread))[0].text == "".join(f"{i} " for i in range(40))


async def test_flush_of_one_thread_leaves_the_others_alone(memory: RecordingMemory) -> None:
    one, two = buffer_for("t1"), buffer_for("t2")
    queue = PersistQueue(memory, debounce=10)
    one.append_text("one")
    two.append_text("two")
    queue.schedule_pending(one)
    queue.schedule_pending(two)
    await queue.flush(thread_id="t1", resource_id=RESOURCE)
    assert [t for t, _ in memory.saves] == ["t1"]
    await queue.aclose()
    assert [t for t, _ in memory.saves] == ["t1", "t2"]


# tool calls


async def test_hold_keeps_a_message_back_until_its_calls_have_results(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    queue = PersistQueue(memory, debounce=0.0)
    buffer.add_user("look it up")
    buffer.append_text("Looking. ")
    buffer.add_tool_call(call("c1"))
    queue.schedule_pending(buffer)
    await queue.flush()
    assert [m.role for m in await stored(memory)] == ["user"]
    buffer.add_tool_result(result("c1"))
    await queue.flush()
    (_, assistant) = await stored(memory)
    assert [p.type for p in assistant.parts] == ["text", "tool-call", "tool-result"]
    await queue.aclose()


async def test_a_held_new_message_holds_back_the_new_messages_after_it(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    queue = PersistQueue(memory, debounce=0.0)
    buffer.add_user("plan it")
    buffer.add_tool_call(call("d1"))  # the main agent delegates...
    buffer.append_text("working on it", agent_id="sub")  # ...and the sub-agent streams
    queue.schedule_pending(buffer)
    await queue.flush()
    assert [m.role for m in await stored(memory)] == ["user"]
    buffer.add_tool_result(result("d1"))
    await queue.flush()
    saved = await stored(memory)
    assert [m.id for m in saved] == [m.id for m in buffer.messages]  # seq follows the buffer
    await queue.aclose()


async def test_a_held_message_saved_before_does_not_block_later_ones(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    queue = PersistQueue(memory, debounce=0.0)
    buffer.append_text("first")
    queue.schedule_pending(buffer)
    await queue.flush()
    buffer.add_tool_call(call("d1"))
    buffer.append_text("sub at work", agent_id="sub")
    await queue.flush()
    assert [m.text for m in await stored(memory)] == ["first", "sub at work"]
    await queue.aclose()


async def test_strip_saves_without_the_dangling_call_and_completes_it_later(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    queue = PersistQueue(memory, debounce=0.0, dangling="strip")
    buffer.append_text("Looking. ")
    buffer.add_tool_call(call("c1"))
    queue.schedule_pending(buffer)
    await queue.flush()
    await queue.flush()  # the same stripped version is not written twice
    assert len(memory.saves) == 1
    assert [p.type for p in (await stored(memory))[0].parts] == ["text"]
    buffer.add_tool_result(result("c1"))
    await queue.flush()
    assert [p.type for p in (await stored(memory))[0].parts] == ["text", "tool-call", "tool-result"]
    await queue.aclose()


async def test_strip_completes_a_message_whose_result_comes_in_another_message(
    memory: RecordingMemory,
) -> None:
    queue = PersistQueue(memory, debounce=0.0, dangling="strip")
    ask = Message(role="assistant", id="a", parts=[TextPart(text="asking"), call("c1")])
    queue.schedule([ask], thread_id="t1", resource_id=RESOURCE)
    await queue.flush()
    assert [p.type for p in (await stored(memory))[0].parts] == ["text"]
    answer = Message(role="tool", id="r", parts=[result("c1")])
    queue.schedule([answer], thread_id="t1", resource_id=RESOURCE)
    await queue.flush()
    assert [[p.type for p in m.parts] for m in await stored(memory)] == [
        ["text", "tool-call"], ["tool-result"]]
    await queue.aclose()


async def test_the_final_flush_drops_calls_that_never_got_a_result(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    async with PersistQueue(memory) as queue:
        buffer.append_text("I will call two tools. ")
        buffer.add_tool_call(call("c1"))
        buffer.add_tool_call(call("c2"))
        buffer.add_tool_result(result("c1"))
        buffer.append_text("lonely call", agent_id="sub")
        buffer.add_tool_call(call("c3"), agent_id="sub2")  # a message of a dangling call only
        queue.schedule_pending(buffer)
    saved = await stored(memory)
    assert [[p.type for p in m.parts] for m in saved] == [["text", "tool-call", "tool-result"], ["text"]]
    assert queue.unsaved(thread_id="t1", resource_id=RESOURCE) == []
    buffer.add_tool_result(result("c2"))  # a late result: the next flush completes the message
    await queue.flush()
    assert [p.type for p in (await stored(memory))[0].parts] == ["text"] + ["tool-call", "tool-result"] * 2


# errors and cancellation


async def test_the_block_failing_still_flushes_everything(memory: RecordingMemory) -> None:
    buffer = buffer_for()

    async def turn() -> None:
        async with PersistQueue(memory, debounce=10) as queue:
            buffer.add_user("hi")
            queue.schedule_pending(buffer)
            buffer.append_text("partial answ")  # never scheduled: the flush drains the buffer
            raise RuntimeError("model died")

    with pytest.raises(RuntimeError, match="model died"):
        await turn()
    assert [m.text for m in await stored(memory)] == ["hi", "partial answ"]


async def test_a_cancelled_turn_is_flushed(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    streaming = asyncio.Event()

    async def turn() -> None:
        async with PersistQueue(memory, debounce=10) as queue:
            buffer.add_user("tell me a story")
            buffer.add_tool_call(call("c1"))
            buffer.add_tool_result(result("c1"))
            buffer.add_tool_call(call("c2"))  # cancelled while this tool runs
            for i in range(1000):
                buffer.append_text(f"{i} ")
                queue.schedule_pending(buffer)
                if i == 5:
                    streaming.set()
                await asyncio.sleep(0.01)

    task = asyncio.create_task(turn())
    await streaming.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _, assistant = await stored(memory)
    assert [p.type for p in assistant.parts] == ["tool-call", "tool-result", "text"]
    assert assistant.text.startswith("0 1 2 3 4 5")


async def test_a_failed_write_is_retried_and_loses_nothing(
    memory: RecordingMemory, caplog: pytest.LogCaptureFixture
) -> None:
    buffer = buffer_for()
    queue = PersistQueue(memory, debounce=0.01)
    memory.failures = 2
    buffer.add_user("hi")
    buffer.append_text("one ")
    queue.schedule_pending(buffer)
    with caplog.at_level(logging.WARNING):
        await asyncio.sleep(0.1)  # the background write fails: logged, kept
    assert "will retry" in caplog.text and await stored(memory) == []
    buffer.append_text("two")  # a newer version arrives meanwhile
    with pytest.raises(StoreError, match="disk is full"):
        await queue.flush()  # fails too: raised
    unsaved = queue.unsaved(thread_id="t1", resource_id=RESOURCE)
    assert [m.id for m in unsaved] == [m.id for m in buffer.messages]
    await queue.flush()
    assert [m.text for m in await stored(memory)] == ["hi", "one two"]
    await queue.aclose()


async def test_a_failed_final_flush_after_a_failed_block_is_noted_not_raised(
    memory: RecordingMemory,
) -> None:
    memory.failures = 1

    async def turn() -> None:
        async with PersistQueue(memory) as queue:
            queue.schedule([Message.user("hi")], thread_id="t1", resource_id=RESOURCE)
            raise RuntimeError("model died")

    with pytest.raises(RuntimeError, match="model died") as raised:
        await turn()
    assert any("disk is full" in note for note in raised.value.__notes__)


async def test_a_failed_final_flush_after_a_clean_block_is_raised(memory: RecordingMemory) -> None:
    memory.failures = 1
    with pytest.raises(StoreError):
        async with PersistQueue(memory) as queue:
            queue.schedule([Message.user("hi")], thread_id="t1", resource_id=RESOURCE)


# retries of a turn


async def test_a_retried_turn_overwrites_and_removes_what_it_did_not_redo(memory: RecordingMemory) -> None:
    failed = buffer_for(turn_id="turn-1")
    async with PersistQueue(memory) as queue:
        failed.add_user("q")
        failed.append_text("partial")
        failed.append_text("sub-agent work", agent_id="sub")
        queue.schedule_pending(failed)
    history = await stored(memory)
    assert [m.id for m in history] == ["turn-1-u0", "turn-1-a0", "turn-1-a1"]
    retry = buffer_for(messages=history, turn_id="turn-1", retry=True)
    async with PersistQueue(memory) as queue:
        retry.add_user("q")
        retry.append_text("the whole answer")
        queue.schedule_pending(retry)
    saved = await stored(memory)
    assert [(m.id, m.text) for m in saved] == [("turn-1-u0", "q"), ("turn-1-a0", "the whole answer")]
    assert [m.seq for m in saved] == [m.seq for m in history[:2]]


async def test_a_failed_stripped_write_is_written_again(memory: RecordingMemory) -> None:
    buffer = buffer_for()
    queue = PersistQueue(memory, debounce=10, dangling="strip")
    buffer.append_text("Looking. ")
    buffer.add_tool_call(call("c1"))
    queue.schedule_pending(buffer)
    memory.failures = 1
    with pytest.raises(StoreError):
        await queue.flush()
    await queue.flush()
    assert [m.text for m in await stored(memory)] == ["Looking. "]
    await queue.aclose()
