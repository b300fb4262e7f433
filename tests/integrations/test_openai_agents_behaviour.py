"""MemvaultSession behaves as the SDK's own SQLiteSession in the SDK's session tests, on
memory://, SQLite and PostgreSQL: add and get, pop, limits and settings, clear, ordering,
isolation between sessions and resources, unicode and SQL-looking text, and concurrency."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memvault import Memory
from memvault.integrations.openai_agents import MemvaultSession

agents = pytest.importorskip("agents")


def said(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


def texts(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


async def test_add_get_and_clear(any_memory: Memory) -> None:
    session = MemvaultSession("direct_test", any_memory, resource_id="ada")
    assert isinstance(session, agents.memory.Session)
    assert session.session_settings is not None and session.session_settings.limit is None
    await session.add_items([said("Hello"), said("Hi there!", "assistant")])
    assert await session.get_items() == [said("Hello"), said("Hi there!", "assistant")]
    await session.clear_session()
    assert await session.get_items() == []
    await session.add_items([said("again")])
    assert await session.get_items() == [said("again")]


async def test_pop(any_memory: Memory) -> None:
    session = MemvaultSession("pop_test", any_memory, resource_id="ada")
    assert await session.pop_item() is None
    items = [said("Hello"), said("Hi there!", "assistant"), said("How are you?")]
    await session.add_items(items)
    assert await session.pop_item() == items[2]
    assert await session.get_items() == items[:2]
    assert await session.pop_item() == items[1]
    assert await session.pop_item() == items[0]
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_pop_touches_one_session(any_memory: Memory) -> None:
    one = MemvaultSession("session_1", any_memory, resource_id="ada")
    two = MemvaultSession("session_2", any_memory, resource_id="ada")
    await one.add_items([said("Session 1 message")])
    await two.add_items([said("Session 2 message 1"), said("Session 2 message 2")])
    assert await two.pop_item() == said("Session 2 message 2")
    assert texts(await one.get_items()) == ["Session 1 message"]
    assert texts(await two.get_items()) == ["Session 2 message 1"]


async def test_limits_and_settings(any_memory: Memory) -> None:
    session = MemvaultSession("count_test", any_memory, resource_id="ada")
    items = [said(f"Message {i}") for i in range(6)]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=4) == items[-4:]
    assert await session.get_items(limit=10) == items
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == items
    limited = MemvaultSession("count_test", any_memory, resource_id="ada",
                              session_settings=agents.memory.SessionSettings(limit=3))
    assert await limited.get_items() == items[-3:]
    assert await limited.get_items(limit=2) == items[-2:]  # an explicit limit wins


async def test_order_is_the_order_of_adding(any_memory: Memory) -> None:
    session = MemvaultSession("order", any_memory, resource_id="ada")
    expected: list[Any] = []
    for batch in range(5):
        items = [said(f"{batch}.{i}") for i in range(batch)]
        await session.add_items(items)
        expected += items
    assert await session.get_items() == expected
    for n in range(len(expected) + 1):
        assert await session.get_items(limit=n) == (expected[-n:] if n else [])


async def test_sessions_and_resources_are_isolated(any_memory: Memory) -> None:
    ada_1 = MemvaultSession("s1", any_memory, resource_id="ada")
    ada_2 = MemvaultSession("s2", any_memory, resource_id="ada")
    bob_1 = MemvaultSession("s1", any_memory, resource_id="bob")  # same session id, other resource
    await ada_1.add_items([said("ada s1")])
    await ada_2.add_items([said("ada s2")])
    await bob_1.add_items([said("bob s1")])
    assert texts(await ada_1.get_items()) == ["ada s1"]
    assert texts(await ada_2.get_items()) == ["ada s2"]
    assert texts(await bob_1.get_items()) == ["bob s1"]
    assert await bob_1.pop_item() == said("bob s1")
    await ada_2.clear_session()
    assert texts(await ada_1.get_items()) == ["ada s1"]
    assert await bob_1.get_items() == []


async def test_unicode_and_sql_looking_text(any_memory: Memory) -> None:
    session = MemvaultSession("special", any_memory, resource_id="ada")
    items = [said("こんにちは"), said("😊👍", "assistant"), said("Привет"), said("O'Reilly"),
             said("DROP TABLE sessions;", "assistant"), said('"SELECT * FROM users WHERE name = "admin";"'),
             said("Robert'); DROP TABLE students;--", "assistant")]
    await session.add_items(items)
    assert await session.get_items() == items


async def test_concurrent_adds_keep_every_item_and_each_batch_together(any_memory: Memory) -> None:
    session = MemvaultSession("concurrent_test", any_memory, resource_id="ada")
    batches = [[said(f"Message {i}.{j}") for j in range(3)] for i in range(20)]
    await asyncio.gather(*(session.add_items(batch) for batch in batches))
    got = texts(await session.get_items())
    assert sorted(got) == sorted(item["content"] for batch in batches for item in batch)
    for batch in batches:  # one transaction per add_items: a batch stays contiguous and in order
        start = got.index(batch[0]["content"])
        assert got[start:start + 3] == texts(batch)


async def test_concurrent_pops_return_each_item_once(any_memory: Memory) -> None:
    session = MemvaultSession("pops", any_memory, resource_id="ada")
    items = [said(f"m{i}") for i in range(12)]
    await session.add_items(items)
    popped = await asyncio.gather(*(session.pop_item() for _ in range(15)))
    got = [item for item in popped if item is not None]
    assert sorted(texts(got)) == sorted(texts(items))
    assert popped.count(None) == 3
    assert await session.get_items() == []


async def test_two_sessions_of_one_id_share_the_conversation(any_memory: Memory) -> None:
    first = MemvaultSession("shared", any_memory, resource_id="ada")
    second = MemvaultSession("shared", any_memory, resource_id="ada")
    await asyncio.gather(first.add_items([said("one")]), second.add_items([said("two")]))
    assert sorted(texts(await first.get_items())) == ["one", "two"]
    assert await first.get_items() == await second.get_items()
