"""Record counts (``ExportStore.record_counts``, behind ``memvault stats`` and the HTTP API's
``/v1/stats``): every store counts the same records of one resource, and only that resource's."""

from __future__ import annotations

from memvault import Memory, Message
from memvault.transfer.stats import resource_stats

from .support import save_texts

ZERO = {"threads": 0, "messages": 0, "summaries": 0, "working_memories": 0, "states": 0}


async def test_counts_follow_writes_and_deletes_per_resource(memory: Memory) -> None:
    assert await resource_stats(memory.store, "ada") == ZERO
    await save_texts(memory, {"m1": "tea", "m2": "coffee", "m3": "cake"}, thread_id="t1", resource_id="ada")
    await memory.save_messages([Message.user("hello", id="m1")], thread_id="t2", resource_id="ada")
    await memory.save_messages([Message.user("bob's", id="m1")], thread_id="t1", resource_id="bob")
    await memory.save_summary("tea and coffee", thread_id="t1", resource_id="ada",
                              through_message_id="m2", expected_version=None)
    await memory.update_working_memory("- likes tea", resource_id="ada")
    await memory.set_state({"step": 1}, resource_id="ada", key="run-1")
    assert await resource_stats(memory.store, "ada") == {
        "threads": 2, "messages": 4, "summaries": 1, "working_memories": 1, "states": 1}
    assert await resource_stats(memory.store, "bob") == {**ZERO, "threads": 1, "messages": 1}

    await memory.delete_messages(["m1"], thread_id="t1", resource_id="ada")  # a summarised one
    assert await resource_stats(memory.store, "ada") == {
        "threads": 2, "messages": 3, "summaries": 0, "working_memories": 1, "states": 1}
    await memory.delete_resource(resource_id="ada")
    assert await resource_stats(memory.store, "ada") == ZERO
    assert await resource_stats(memory.store, "bob") == {**ZERO, "threads": 1, "messages": 1}
