"""``GET /v1/threads/{id}/messages`` windows the Studio pages with: ``after`` + ``first_n``
(page forward) and ``around`` + ``range`` (open a thread at one message)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory
from memvault.server import Keyring, create_app

COUNT = 12


@pytest.fixture
async def api(memory: Memory) -> AsyncIterator[httpx.AsyncClient]:
    secret, _ = await Keyring(memory).create(resource_id="ada", name="ada's agent")
    transport = httpx.ASGITransport(app=create_app(memory), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://memvault",
                                 headers={"Authorization": f"Bearer {secret}"}) as client:
        texts = [{"id": f"m{i:02d}", "role": "user", "parts": [{"type": "text", "text": f"line {i}"}]}
                 for i in range(1, COUNT + 1)]
        saved = await client.post("/v1/threads/t1/messages", json={"messages": texts})
        assert saved.status_code == 201
        theirs = {"id": "theirs", "role": "user", "parts": [{"type": "text", "text": "x"}]}
        await memory.save_messages([theirs], thread_id="t1", resource_id="bob")
        yield client


async def ids(api: httpx.AsyncClient, **params: object) -> list[str]:
    answer = await api.get("/v1/threads/t1/messages", params=params)
    assert answer.status_code == 200, answer.text
    return [m["id"] for m in answer.json()["messages"]]


async def test_page_forward_with_after_and_first_n(api: httpx.AsyncClient) -> None:
    assert await ids(api, after="m03", first_n=3) == ["m04", "m05", "m06"]
    assert await ids(api, after="m10", first_n=5) == ["m11", "m12"]
    assert await ids(api, after="m12") == []
    assert await ids(api, first_n=2) == ["m01", "m02"]
    assert await ids(api, after="m02", before="m05") == ["m03", "m04"]
    both = await api.get("/v1/threads/t1/messages", params={"last_n": 2, "first_n": 2})
    assert both.status_code == 422


async def test_around_a_message(api: httpx.AsyncClient) -> None:
    assert await ids(api, around="m06", range=2) == ["m04", "m05", "m06", "m07", "m08"]
    assert await ids(api, around="m01", range=2) == ["m01", "m02", "m03"]
    assert await ids(api, around="m12", range=0) == ["m12"]
    assert len(await ids(api, around="m06")) == COUNT  # default range 50: the whole short thread
    missing = await api.get("/v1/threads/t1/messages", params={"around": "nope"})
    foreign = await api.get("/v1/threads/t1/messages", params={"around": "theirs"})
    assert missing.status_code == 404
    assert foreign.content == missing.content  # another resource's message is a missing one
    for extra in ({"last_n": 3}, {"before": "m09"}, {"after": "m02"}, {"first_n": 1}):
        mixed = await api.get("/v1/threads/t1/messages", params={"around": "m06", **extra})
        assert mixed.status_code == 422, extra
    negative = await api.get("/v1/threads/t1/messages", params={"around": "m06", "range": -1})
    assert negative.status_code == 422


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(1, COUNT), radius=st.integers(0, COUNT + 2))
async def test_around_is_the_window_of_the_thread(api: httpx.AsyncClient, at: int, radius: int) -> None:
    expected = [f"m{i:02d}" for i in range(max(1, at - radius), min(COUNT, at + radius) + 1)]
    assert await ids(api, around=f"m{at:02d}", range=radius) == expected


async def test_a_thread_with_messages_is_one_store_read_and_others_are_404_as_before(
    api: httpx.AsyncClient, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The messages are read with the caller's resource, so they prove the thread is its own: no
    ``get_thread`` first. Only an empty answer asks whether the thread exists."""
    calls: list[str] = []
    for name in ("get_thread", "get_messages"):
        original = getattr(memory.store, name)

        async def spy(*args: object, _name: str = name, _original: object = original, **kw: object) -> object:
            calls.append(_name)
            return await _original(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(memory.store, name, spy)
    assert await ids(api, last_n=2) == ["m11", "m12"]
    assert await ids(api, around="m05", range=1) == ["m04", "m05", "m06"]
    assert calls == ["get_messages", "get_messages"]
    await memory.create_thread(thread_id="empty", resource_id="ada")
    await memory.save_messages([{"id": "b", "role": "user", "parts": [{"type": "text", "text": "x"}]}],
                               thread_id="bobs", resource_id="bob")
    empty = await api.get("/v1/threads/empty/messages", params={"last_n": 20})
    assert empty.status_code == 200 and empty.json()["messages"] == []
    missing = await api.get("/v1/threads/nope/messages", params={"last_n": 20})
    assert missing.status_code == 404
    for path, params in (("bobs", {"last_n": 20}), ("bobs", {"after": "b"}), ("bobs", {"around": "b"}),
                         ("nope", {"after": "m01"}), ("nope", {"around": "m01"}),
                         ("nope", {"around": "m01", "last_n": 2})):
        foreign = await api.get(f"/v1/threads/{path}/messages", params=params)
        assert (foreign.status_code, foreign.json()) == (404, missing.json()), (path, params)
    t1_missing_message = await api.get("/v1/threads/t1/messages", params={"around": "b"})
    assert t1_missing_message.status_code == 404 and t1_missing_message.json() != missing.json()
