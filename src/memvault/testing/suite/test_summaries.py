"""Summaries: one per thread, versioned with compare-and-set, and derived data: deleting or
editing a summarised message, clearing or deleting the thread or the resource deletes it."""

from __future__ import annotations

import pytest

from memvault import Memory, Message, NotFoundError, ValidationError
from memvault.testing.support import save_texts

pytestmark = pytest.mark.capability("summaries")

R, T = "ada", "t1"
TEXTS = {f"m{i}": f"message {i}" for i in range(1, 7)}


async def _thread(memory: Memory) -> None:
    await save_texts(memory, TEXTS, thread_id=T, resource_id=R)


async def _summarise(memory: Memory, through: str = "m4", text: str = "ada talked about 1-4") -> None:
    saved = await memory.save_summary(text, thread_id=T, resource_id=R, through_message_id=through,
                                      expected_version=None)
    assert saved is not None


async def test_save_and_get(memory: Memory) -> None:
    await _thread(memory)
    assert await memory.get_summary(thread_id=T, resource_id=R) is None
    saved = await memory.save_summary("ada talked about 1-4", thread_id=T, resource_id=R,
                                      through_message_id="m4", expected_version=None)
    assert saved is not None
    got = await memory.get_summary(thread_id=T, resource_id=R)
    assert got == saved
    assert (got.text, got.through_message_id, got.through_seq, got.version) == (
        "ada talked about 1-4", "m4", 4, 1)


async def test_summary_compare_and_set(memory: Memory) -> None:
    await _thread(memory)
    await _summarise(memory)
    stale = await memory.save_summary("lost", thread_id=T, resource_id=R, through_message_id="m5",
                                      expected_version=None)
    assert stale is None
    newer = await memory.save_summary("1-5", thread_id=T, resource_id=R, through_message_id="m5",
                                      expected_version=1)
    assert newer is not None and newer.version == 2 and newer.through_seq == 5
    assert await memory.save_summary("lost too", thread_id=T, resource_id=R, through_message_id="m6",
                                     expected_version=1) is None
    current = await memory.get_summary(thread_id=T, resource_id=R)
    assert current is not None and current.text == "1-5"


async def test_bad_input_writes_nothing(memory: Memory) -> None:
    await _thread(memory)
    with pytest.raises(NotFoundError):
        await memory.save_summary("x", thread_id=T, resource_id=R, through_message_id="nope",
                                  expected_version=None)
    with pytest.raises(NotFoundError):
        await memory.save_summary("x", thread_id="missing", resource_id=R, through_message_id="m1",
                                  expected_version=None)
    for bad in ("nul\x00byte", "lone \ud800 surrogate"):
        with pytest.raises(ValidationError):
            await memory.save_summary(bad, thread_id=T, resource_id=R, through_message_id="m1",
                                      expected_version=None)
    assert await memory.get_summary(thread_id=T, resource_id=R) is None


async def test_unicode_text_round_trips(memory: Memory) -> None:
    await _thread(memory)
    text = "总结 Ada 喜欢抹茶 🍵 — SELECT * FROM x; \"quoted\" AND OR NOT *"
    await _summarise(memory, text=text)
    got = await memory.get_summary(thread_id=T, resource_id=R)
    assert got is not None and got.text == text


@pytest.mark.parametrize(("deleted", "kept"), [(["m4"], False), (["m2"], False), (["m5"], True)])
async def test_deleting_a_summarised_message_deletes_the_summary(
    memory: Memory, deleted: list[str], kept: bool
) -> None:
    await _thread(memory)
    await _summarise(memory)
    await memory.delete_messages(deleted, thread_id=T, resource_id=R)
    assert (await memory.get_summary(thread_id=T, resource_id=R) is not None) is kept


@pytest.mark.parametrize(("edited", "kept"), [("m3", False), ("m6", True)])
async def test_editing_a_summarised_message_deletes_the_summary(
    memory: Memory, edited: str, kept: bool
) -> None:
    await _thread(memory)
    await _summarise(memory)
    await memory.save_messages([Message.user("edited text", id=edited)], thread_id=T, resource_id=R)
    assert (await memory.get_summary(thread_id=T, resource_id=R) is not None) is kept


async def test_resaving_the_same_text_keeps_the_summary(memory: Memory) -> None:
    await _thread(memory)
    await _summarise(memory)
    same = (await memory.get_messages(thread_id=T, resource_id=R, ids=["m2"]))[0]
    await memory.save_messages([same], thread_id=T, resource_id=R)
    assert await memory.get_summary(thread_id=T, resource_id=R) is not None


@pytest.mark.parametrize("how", ["clear_thread", "delete_thread", "delete_resource", "delete_summary"])
async def test_clearing_or_deleting_removes_the_summary(memory: Memory, how: str) -> None:
    await _thread(memory)
    await save_texts(memory, {"o1": "other"}, thread_id="t2", resource_id=R)
    await memory.save_summary("other thread", thread_id="t2", resource_id=R, through_message_id="o1",
                              expected_version=None)
    await _summarise(memory)
    if how == "delete_resource":
        await memory.delete_resource(resource_id=R)
    else:
        await getattr(memory, how)(thread_id=T, resource_id=R)
    assert await memory.get_summary(thread_id=T, resource_id=R) is None
    other = await memory.get_summary(thread_id="t2", resource_id=R)
    assert (other is None) is (how == "delete_resource")
    if how != "delete_resource":
        assert await memory.delete_summary(thread_id=T, resource_id=R) is False
