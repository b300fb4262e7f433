"""What each endpoint answers (in process, over httpx.ASGITransport, for speed): the FIXED
contract the Studio page relies on."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from memvault import Memory
from memvault.server import Keyring, create_app, new_secret
from memvault.server.app import STUDIO
from memvault.transfer.reserved import KEYS_RESOURCE

TEXT = {"type": "text", "text": "I like green tea with jasmine"}


def client(app: FastAPI, secret: str | None = None) -> httpx.AsyncClient:
    """An in-process client of ``app``, sending ``secret`` as its key."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
                             base_url="http://memvault",
                             headers={"Authorization": f"Bearer {secret}"} if secret else {})


@pytest.fixture
async def api(memory: Memory) -> AsyncIterator[httpx.AsyncClient]:
    secret, _ = await Keyring(memory).create(resource_id="ada", name="ada's agent")
    async with client(create_app(memory), secret) as api:
        yield api


async def test_me(api: httpx.AsyncClient) -> None:
    me = (await api.get("/v1/me")).json()
    assert me == {"resource_id": "ada", "admin": False, "key_id": me["key_id"], "name": "ada's agent"}


async def test_messages_page_back_with_before(api: httpx.AsyncClient, memory: Memory) -> None:
    texts = [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": f"line {i}"}]}
             for i in range(1, 8)]
    assert (await api.post("/v1/threads/t1/messages", json={"messages": texts})).status_code == 201
    await memory.save_messages([{"id": "theirs", "role": "user", "parts": [TEXT]}],
                               thread_id="t1", resource_id="bob")

    async def page(**params: object) -> list[str]:
        answer = await api.get("/v1/threads/t1/messages", params=params)
        assert answer.status_code == 200, answer.text
        return [m["id"] for m in answer.json()["messages"]]

    assert await page(last_n=3) == ["m5", "m6", "m7"]
    assert await page(last_n=3, before="m5") == ["m2", "m3", "m4"]
    assert await page(last_n=3, before="m2") == ["m1"]
    missing = await api.get("/v1/threads/t1/messages", params={"before": "nope"})
    foreign = await api.get("/v1/threads/t1/messages", params={"before": "theirs"})
    assert missing.status_code == 404
    assert foreign.content == missing.content.replace(b"nope", b"theirs")


async def test_threads_create_read_change_list_delete(api: httpx.AsyncClient) -> None:
    created = await api.post("/v1/threads", json={"id": "t1", "title": "Tea", "metadata": {"k": 1}})
    assert created.status_code == 201
    thread = created.json()
    assert {k: thread[k] for k in ("id", "resource_id", "title", "metadata")} == {
        "id": "t1", "resource_id": "ada", "title": "Tea", "metadata": {"k": 1}}
    assert {"created_at", "updated_at"} <= set(thread)
    duplicate = await api.post("/v1/threads", json={"id": "t1"})
    assert (duplicate.status_code, duplicate.json()["error"]["code"]) == (409, "conflict")
    random_id = (await api.post("/v1/threads", json={})).json()
    assert random_id["id"] and random_id["title"] is None and random_id["metadata"] == {}
    assert (await api.get("/v1/threads/t1")).json() == thread

    kept = (await api.patch("/v1/threads/t1", json={"metadata": {"k": 2}})).json()
    assert (kept["title"], kept["metadata"]) == ("Tea", {"k": 2})
    cleared = (await api.patch("/v1/threads/t1", json={"title": None})).json()
    assert (cleared["title"], cleared["metadata"]) == (None, {"k": 2})

    first = (await api.get("/v1/threads", params={"limit": 1})).json()
    assert len(first["threads"]) == 1 and first["next_cursor"]
    second = (await api.get("/v1/threads", params={"limit": 1, "cursor": first["next_cursor"]})).json()
    assert second["next_cursor"] is None
    assert {t["id"] for t in first["threads"] + second["threads"]} == {"t1", random_id["id"]}

    assert (await api.delete("/v1/threads/t1")).status_code == 204
    gone = await api.get("/v1/threads/t1")
    assert (gone.status_code, gone.json()) == (404, {"error": {
        "code": "not_found", "message": "no such thread for this resource"}})
    assert (await api.delete("/v1/threads/t1")).status_code == 404


async def test_thread_queries_filter_order_page_and_count(api: httpx.AsyncClient) -> None:
    for thread_id, title, metadata in [("a", "Trip to PARIS", {"p": "x", "n": 1}),
                                       ("b", "paris 100%", {"p": "x"}),
                                       ("c", "東京 🎉", {"p": "y", "n": 1.0}), ("count", None, {})]:
        assert (await api.post("/v1/threads", json={"id": thread_id, "title": title,
                                                    "metadata": metadata})).status_code == 201

    async def ids(**params: object) -> list[str]:
        answer = await api.get("/v1/threads", params=params)
        assert answer.status_code == 200, answer.text
        return [t["id"] for t in answer.json()["threads"]]

    assert await ids() == ["count", "c", "b", "a"]
    assert await ids(title_contains="paris", order_by="created_at", direction="asc") == ["a", "b"]
    assert await ids(title_contains="%") == ["b"]
    assert await ids(title_contains="🎉") == ["c"]
    assert await ids(metadata='{"n": 1}', direction="asc") == ["a", "c"]
    assert await ids(metadata='{"p": "x", "n": 1}') == ["a"]
    assert await ids(order_by="created_at", offset=1, limit=2) == ["c", "b"]
    ascending = {"order_by": "created_at", "direction": "asc"}
    first = (await api.get("/v1/threads", params={**ascending, "limit": 3})).json()
    rest = (await api.get("/v1/threads", params={**ascending, "cursor": first["next_cursor"]})).json()
    assert [t["id"] for t in first["threads"] + rest["threads"]] == ["a", "b", "c", "count"]
    assert rest["next_cursor"] is None

    async def count(**params: object) -> object:
        answer = await api.get("/v1/threads/count", params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    assert await count() == {"count": 4}
    assert await count(title_contains="PARIS") == {"count": 2}
    assert await count(metadata='{"p": "x"}', title_contains="trip") == {"count": 1}
    assert (await api.get("/v1/threads/%63ount")).json()["id"] == "count"  # the thread named "count"


@pytest.mark.parametrize("params", [
    {"metadata": "not json"}, {"metadata": "[1]"}, {"metadata": '"x"'}, {"order_by": "title"},
    {"direction": "sideways"}, {"offset": -1}, {"offset": "x"}, {"offset": 1, "cursor": "MTp0"},
    {"cursor": "not a cursor"}, {"order_by": "created_at", "cursor": "MTp0"}, {"title_contains": "\x00"},
])
async def test_bad_thread_queries_are_422(api: httpx.AsyncClient, params: dict[str, object]) -> None:
    await api.post("/v1/threads", json={"id": "t"})
    for path in ("/v1/threads", "/v1/threads/count"):
        if path.endswith("count") and not {"metadata", "title_contains"} & set(params):
            continue
        answer = await api.get(path, params=params)
        assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid"), (path, answer.text)


async def test_states_put_get_patch_query_delete(api: httpx.AsyncClient) -> None:
    assert (await api.post("/v1/threads", json={"id": "t1"})).status_code == 201
    put = await api.put("/v1/states/run%2F1", json={"value": {"step": 1, "tmp": [1]}, "status": "running",
                                                    "workflow_id": "wf", "thread_id": "t1"})
    assert put.status_code == 200, put.text
    state = put.json()
    assert {k: state[k] for k in ("resource_id", "key", "value", "status", "version", "workflow_id",
                                  "thread_id")} == {"resource_id": "ada", "key": "run/1", "value": {
        "step": 1, "tmp": [1]}, "status": "running", "version": 1, "workflow_id": "wf", "thread_id": "t1"}
    assert state["created_at"] == state["updated_at"]
    assert (await api.get("/v1/states/run%2F1")).json() == state

    change = {"merge": {"step": 2, "tmp": None}, "status": "suspended", "expected_version": 1}
    patched = await api.patch("/v1/states/run%2F1", json=change)
    assert patched.status_code == 200, patched.text
    assert {k: patched.json()[k] for k in ("value", "status", "version", "workflow_id", "created_at")} == {
        "value": {"step": 2}, "status": "suspended", "version": 2, "workflow_id": "wf",
        "created_at": state["created_at"]}
    stale = await api.patch("/v1/states/run%2F1", json={"merge": {"step": 3}, "expected_version": 1})
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "conflict")
    kept = await api.patch("/v1/states/run%2F1", json={"status": None})  # merge left out: value kept
    assert (kept.json()["value"], kept.json()["status"], kept.json()["version"]) == ({"step": 2}, None, 3)
    await api.patch("/v1/states/run%2F1", json={"status": "suspended"})
    assert (await api.put("/v1/states/other", json={"value": None, "workflow_id": "wf2"})).status_code == 200

    async def keys(**params: object) -> list[str]:
        answer = await api.get("/v1/states", params=params)
        assert answer.status_code == 200, answer.text
        return [s["key"] for s in answer.json()["states"]]

    assert await keys() == ["other", "run/1"]
    assert await keys(suspended="true") == ["run/1"]
    assert await keys(workflow_id="wf", status="suspended", thread_id="t1") == ["run/1"]
    assert await keys(workflow_id="wf2") == ["other"]
    assert await keys(limit=1) == ["other"]

    created_only = await api.put("/v1/states/other", json={"value": 1, "expected_version": None})
    assert created_only.status_code == 409  # null: only if there is no state yet
    again = await api.put("/v1/states/other", json={"value": 2, "expected_version": 1})
    assert (again.status_code, again.json()["version"], again.json()["workflow_id"]) == (200, 2, None)

    assert (await api.delete("/v1/states/other")).status_code == 204
    assert (await api.delete("/v1/states/other")).status_code == 204
    gone = await api.get("/v1/states/other")
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "not_found")
    missing = await api.patch("/v1/states/other", json={"merge": {"a": 1}})
    assert (missing.status_code, missing.json()["error"]["message"]) == (
        404, "no such state for this resource")
    assert (await api.delete("/v1/threads/t1")).status_code == 204  # its states go with it
    assert await keys() == []


@pytest.mark.parametrize(("method", "path", "payload"), [
    ("GET", "/v1/states", {"suspended": "true", "status": "running"}),
    ("GET", "/v1/states", {"limit": 0}),
    ("GET", "/v1/states", {"workflow_id": "\x00"}),
    ("PUT", "/v1/states/k", {"status": "x"}),  # no value
    ("PUT", "/v1/states/k", {"value": 1, "expected_version": "1"}),
    ("PUT", "/v1/states/k", {"value": 1, "extra": True}),
    ("PUT", "/v1/states/k", {"value": 1, "workflow_id": ""}),
    ("PATCH", "/v1/states/k", {"merge": {"a": 1}, "expected_version": -1}),
    ("PATCH", "/v1/states/k", {"status": 3}),
])
async def test_bad_state_requests_are_422(api: httpx.AsyncClient, method: str, path: str,
                                          payload: dict[str, object]) -> None:
    assert (await api.put("/v1/states/k", json={"value": {"a": 0}})).status_code == 200
    if method == "GET":
        answer = await api.get(path, params=payload)
    else:
        answer = await api.request(method, path, json=payload)
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid"), answer.text
    assert (await api.get("/v1/states/k")).json()["value"] == {"a": 0}


async def test_a_state_of_a_missing_thread_is_404(api: httpx.AsyncClient) -> None:
    answer = await api.put("/v1/states/k", json={"value": 1, "thread_id": "nope"})
    assert (answer.status_code, answer.json()["error"]["message"]) == (
        404, "no such thread for this resource")
    assert (await api.get("/v1/states", params={"thread_id": "nope"})).status_code == 404
    assert (await api.get("/v1/states/k")).status_code == 404


async def test_messages_save_read_delete(api: httpx.AsyncClient) -> None:
    messages = [
        {"id": "m1", "role": "user", "parts": [TEXT]},
        {"id": "m2", "role": "assistant", "parts": [
            {"type": "reasoning", "text": "look it up"},
            {"type": "tool-call", "tool_call_id": "c1", "name": "tea", "args": {"kind": "green"}}]},
        {"id": "m3", "role": "tool", "parts": [
            {"type": "tool-result", "tool_call_id": "c1", "output": "ok"}]},
    ]
    saved = await api.post("/v1/threads/new/messages", json={"messages": messages})
    assert saved.status_code == 201
    assert [(m["id"], m["seq"], m["thread_id"]) for m in saved.json()["messages"]] == [
        ("m1", 1, "new"), ("m2", 2, "new"), ("m3", 3, "new")]
    assert (await api.get("/v1/threads/new")).status_code == 200  # created with the messages
    listed = (await api.get("/v1/threads/new/messages")).json()["messages"]
    assert listed[1]["parts"][1] == {"type": "tool-call", "tool_call_id": "c1", "name": "tea",
                                     "args": {"kind": "green"}}
    newest = (await api.get("/v1/threads/new/messages?last_n=1")).json()["messages"]
    assert [m["id"] for m in newest] == ["m3"]
    again = await api.post("/v1/threads/new/messages", json={"messages": [{**messages[0], "parts": [
        {"type": "text", "text": "edited"}]}]})
    assert again.json()["messages"][0]["seq"] == 1  # same id: updated, not duplicated
    assert (await api.delete("/v1/threads/new/messages/m1")).status_code == 204
    missing = await api.delete("/v1/threads/new/messages/m1")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert len((await api.get("/v1/threads/new/messages")).json()["messages"]) == 2


async def test_search_and_recall(api: httpx.AsyncClient) -> None:
    await api.post("/v1/threads/old/messages", json={"messages": [
        {"role": "user", "parts": [TEXT]},
        {"role": "assistant", "parts": [{"type": "text", "text": "Noted."}]}]})
    await api.post("/v1/threads/now/messages", json={"messages": [
        {"role": "user", "parts": [{"type": "text", "text": "what should I drink?"}]}]})
    hits = (await api.get("/v1/search", params={"q": "jasmine tea"})).json()["hits"]
    assert len(hits) == 1 and hits[0]["score"] > 0 and "jasmine" in hits[0]["message"]["parts"][0]["text"]
    assert (await api.get("/v1/search", params={"q": "jasmine", "thread_id": "now"})).json() == {"hits": []}

    recalled = (await api.post("/v1/recall", json={"query": "which tea do I like?", "thread_id": "now",
                                                    "top_k": 3})).json()
    hit = recalled["hits"][0]
    assert hit["thread_id"] == "old" and hit["other_thread"] is True and hit["score"] > 0
    assert hit["source"] == "lexical" and hit["sources"] == ["lexical"] and hit["vector_score"] is None
    assert "jasmine" in hit["message"]["parts"][0]["text"]
    texts = [m["parts"][0]["text"] for m in recalled["messages"]]
    assert texts[-1] == "what should I drink?" and TEXT["text"] in texts


async def test_working_memory_of_the_resource_and_of_a_thread(api: httpx.AsyncClient) -> None:
    assert (await api.get("/v1/working-memory")).json() == {"content": None}
    put = await api.put("/v1/working-memory", json={"content": "Name: Ada"})
    assert put.json() == {"content": "Name: Ada"}
    assert (await api.get("/v1/working-memory")).json() == {"content": "Name: Ada"}
    await api.post("/v1/threads", json={"id": "t"})
    note = {"content": "thread note"}
    assert (await api.put("/v1/working-memory", json={**note, "thread_id": "t"})).json() == note
    assert (await api.get("/v1/working-memory", params={"thread_id": "t"})).json() == note
    assert (await api.get("/v1/working-memory")).json() == {"content": "Name: Ada"}
    stats = (await api.get("/v1/stats")).json()
    assert stats == {"threads": 1, "messages": 0, "summaries": 0, "working_memories": 2, "states": 0}


async def test_an_extra_key_is_an_admin_key_kept_in_memory_only(memory: Memory) -> None:
    secret = new_secret()
    async with client(create_app(memory, extra_keys=[secret]), secret) as admin:
        assert (await admin.get("/v1/me")).json()["admin"] is True
        assert (await admin.get("/v1/resources")).json() == {"resources": []}
    assert await memory.list_states(resource_id=KEYS_RESOURCE) == []


async def test_the_openapi_document_and_the_studio(api: httpx.AsyncClient) -> None:
    document = (await api.get("/openapi.json")).json()
    assert "/v1/recall" in document["paths"] and document["components"]["securitySchemes"]
    assert document["paths"]["/v1/threads/{thread_id}"]["get"]["responses"]["404"]["content"]
    if (STUDIO / "index.html").is_file():
        home = await api.get("/")
        assert (home.status_code, home.headers["location"]) == (307, "/studio/")
        page = await api.get("/studio/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


async def test_an_unexpected_error_is_a_generic_500_and_is_logged(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(memory)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("secret internals")

    async with client(app) as anonymous:
        answer = await anonymous.get("/boom")
    assert answer.status_code == 500
    assert answer.json() == {"error": {"code": "internal", "message": "internal error"}}
    assert "secret internals" not in answer.text
    assert any(r.name == "memvault.server" and r.levelname == "ERROR" for r in caplog.records)


async def test_a_store_failure_is_503_without_internals(
    api: httpx.AsyncClient, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.errors import StoreError

    async def failing(*args: object, **kwargs: object) -> None:
        raise StoreError("disk /secret/path is full")

    monkeypatch.setattr(memory.store, "list_threads", failing)
    answer = await api.get("/v1/threads")
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "unavailable"
    assert "secret" not in answer.text


async def test_a_message_over_max_message_bytes_is_413() -> None:
    from memvault.options import MemoryOptions

    async with await Memory.open("memory://", options=MemoryOptions(max_message_bytes=100)) as memory:
        secret, _ = await Keyring(memory).create(resource_id="ada")
        async with client(create_app(memory), secret) as api:
            answer = await api.post("/v1/threads/t/messages", json={"messages": [
                {"role": "user", "parts": [{"type": "text", "text": "x" * 500}]}]})
            assert (answer.status_code, answer.json()["error"]["code"]) == (413, "too_large")
            assert (await api.get("/v1/threads/t")).status_code == 404  # nothing written
