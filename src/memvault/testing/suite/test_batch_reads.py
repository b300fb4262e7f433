"""Batch reads (:class:`~memvault.stores.capabilities.BatchReads`): each answers exactly what the
core calls it stands for answer, for any resource, thread and note, including missing ones and
another resource's thread."""

from __future__ import annotations

import pytest

from memvault import Memory, Message
from memvault.stores.base import MessageQuery
from memvault.stores.capabilities import BatchReads

pytestmark = pytest.mark.capability("batch_reads", "summaries")

R, OTHER = "ada", "bob"


def _batch(memory: Memory) -> BatchReads:
    store = memory.store
    assert isinstance(store, BatchReads)
    return store


async def _seed(memory: Memory) -> None:
    for thread in ("t1", "t2"):
        texts = [Message.user(f"{thread} message {i}", id=f"{thread}-m{i}") for i in range(8)]
        await memory.save_messages(texts, thread_id=thread, resource_id=R)
    await memory.delete_messages(["t1-m3"], thread_id="t1", resource_id=R)
    await memory.save_summary("t1 so far", thread_id="t1", resource_id=R, through_message_id="t1-m4",
                              expected_version=None)
    await memory.update_working_memory("- Name: Ada", resource_id=R)


@pytest.mark.parametrize("last_n", [0, 1, 3, 50])
@pytest.mark.parametrize(("resource", "thread", "key"), [
    (R, "t1", "resource"), (R, "t2", "thread:t2"), (R, "missing", "resource"), (OTHER, "t1", "resource"),
])
async def test_read_turn_is_three_reads(
    memory: Memory, last_n: int, resource: str, thread: str, key: str
) -> None:
    await _seed(memory)
    store = memory.store
    read = await _batch(memory).read_turn(resource, thread, last_n=last_n, note_key=key)
    assert read.messages == await store.get_messages(resource, thread, MessageQuery(last_n=last_n))
    assert read.summary == await memory.get_summary(thread_id=thread, resource_id=resource)
    assert read.note == await store.get_working_memory(resource, key)


@pytest.mark.parametrize("message_range", [0, 1, 3])
async def test_read_around_is_one_read_per_thread(memory: Memory, message_range: int) -> None:
    await _seed(memory)
    store = memory.store
    ids = {"t1": ["t1-m2", "t1-m5", "t1-m3"], "t2": ["t2-m0", "t2-m7"], "missing": ["x"]}
    read = await _batch(memory).read_around(R, ids, message_range)
    for thread, wanted in ids.items():
        assert read[thread] == await store.get_messages(R, thread, MessageQuery(ids=wanted,
                                                                                message_range=message_range))
    other = await _batch(memory).read_around(OTHER, ids, message_range)
    assert all(found == [] for found in other.values())
