"""Body size limit and hostile input over the real server: 413 before reading a declared-too-big
body and while counting a chunked one; bad JSON, wrong types, empty strings, NUL bytes, lone
surrogates, huge numbers, FTS and SQL operators get a clear 4xx or a normal answer, never a 500,
and never reach the catch-all handler."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from server_live import Live, start, stop

LIMIT = 4096
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def small(live: Live) -> Iterator[str]:
    """A second server over the same store, with a 4 KiB body limit."""
    base, server, thread = start(live.db, max_body_bytes=LIMIT)
    try:
        yield base
    finally:
        stop(server, thread)


def _chunks(total: int, size: int = 1024) -> Iterator[bytes]:
    yield b'{"messages": [{"role": "user", "parts": [{"type": "text", "text": "'
    for _ in range(total // size):
        yield b"a" * size
    yield b'"}]}]}'


def test_a_declared_big_body_is_413_before_reading(live: Live, small: str) -> None:
    key = live.key()
    with httpx.Client(base_url=small, headers={"Authorization": f"Bearer {key}"}) as client:
        answer = client.post("/v1/threads/t/messages", content=b"x" * (LIMIT + 1), headers=JSON)
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "too_large"
        assert client.post("/v1/threads", json={"id": "fits"}).status_code == 201


def test_a_chunked_body_is_counted(live: Live, small: str) -> None:
    key = live.key()
    with httpx.Client(base_url=small, headers={"Authorization": f"Bearer {key}"}) as client:
        answer = client.post("/v1/threads/t/messages", content=_chunks(LIMIT * 4), headers=JSON)
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"]["code"] == "too_large"
    with httpx.Client(base_url=small, headers={"Authorization": f"Bearer {key}"}) as client:
        fits = client.post("/v1/threads/t/messages", content=_chunks(LIMIT // 2), headers=JSON)
        assert fits.status_code == 201, fits.text
        assert client.get("/v1/threads/t/messages").json()["messages"][0]["parts"][0]["text"] == "a" * 2048


def test_the_default_limit_is_one_mib(live: Live) -> None:
    with live.client(live.key()) as client:
        big = client.put("/v1/working-memory", json={"content": "a" * (1_048_576 + 1)})
        assert big.status_code == 413


SURROGATE = b'"\\ud800"'
CURSOR = base64.urlsafe_b64encode(b"99999999999999999999999999999:x").decode()
HOSTILE: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/threads", {"content": b'{"title": ' + SURROGATE + b"}"}),
    ("POST", "/v1/threads", {"content": b'{"title": "a\\u0000b"}'}),
    ("POST", "/v1/threads", {"json": {"id": ""}}),
    ("POST", "/v1/threads", {"json": {"id": "   "}}),
    ("POST", "/v1/threads", {"json": {"id": "x" * 300}}),
    ("POST", "/v1/threads", {"json": {"id": 5}}),
    ("POST", "/v1/threads", {"json": {"nope": 1}}),
    ("POST", "/v1/threads", {"json": {"metadata": "x"}}),
    ("POST", "/v1/threads", {"content": b'{"metadata": {"a": NaN}}'}),
    ("POST", "/v1/threads", {"content": b'{"metadata": {"a": 1e999}}'}),
    ("POST", "/v1/threads", {"content": b'{"metadata": {"a": ' + b"9" * 5000 + b"}}"}),
    ("POST", "/v1/threads", {"content": b"[" * 100_000 + b"]" * 100_000}),
    ("POST", "/v1/threads", {"json": {"metadata": json.loads('{"a":' * 100 + "1" + "}" * 100)}}),
    ("POST", "/v1/threads", {"content": b"{"}),
    ("POST", "/v1/threads", {"content": b"\xff\xfe"}),
    ("POST", "/v1/threads", {"content": b""}),
    ("POST", "/v1/threads", {"content": b"null"}),
    ("POST", "/v1/threads", {"content": b"[]"}),
    ("POST", "/v1/threads", {"content": b'"x"'}),
    ("POST", "/v1/threads", {"content": b"{}", "headers": {"Content-Type": "text/plain"}}),
    ("POST", "/v1/threads", {"content": b"{}", "headers": {"Content-Type": ""}}),
    ("POST", "/v1/threads", {"data": {"id": "x"}}),
    ("PATCH", "/v1/threads/t", {"json": {"title": 5}}),
    ("PATCH", "/v1/threads/t", {"json": {"metadata": None}}),
    ("PATCH", "/v1/threads/t", {"json": {"metadata": []}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "wizard"}]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": "x"}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [5]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "parts": [{"type": "x"}]}]}}),
    ("POST", "/v1/threads/t/messages", {"content": b'{"messages": [{"role": "user", "parts": '
                                                   b'[{"type": "text", "text": ' + SURROGATE + b"}]}]}"}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "parts": [
        {"type": "text", "text": "a\x00b"}]}]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "resource_id": "bob"}]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "thread_id": "other"}]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "seq": "x"}]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "created_at": "yesterday"}]}}),
    ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user", "id": ""}]}}),
    ("POST", "/v1/threads/t%00/messages", {"json": {"messages": [{"role": "user"}]}}),
    ("GET", "/v1/threads/%ED%A0%80", {}),
    ("GET", "/v1/threads/%00", {}),
    ("GET", "/v1/threads/" + "x" * 300, {}),
    ("GET", "/v1/threads/t/messages", {"params": {"last_n": 0}}),
    ("GET", "/v1/threads/t/messages", {"params": {"last_n": 10**30}}),
    ("GET", "/v1/threads/t/messages", {"params": {"last_n": "x"}}),
    ("DELETE", "/v1/threads/t/messages/%00", {}),
    ("GET", "/v1/threads", {"params": {"cursor": "garbage!!"}}),
    ("GET", "/v1/threads", {"params": {"cursor": CURSOR}}),
    ("GET", "/v1/threads", {"params": {"cursor": "\x00"}}),
    ("GET", "/v1/threads", {"params": {"limit": 0}}),
    ("GET", "/v1/threads", {"params": {"limit": 10**30}}),
    ("GET", "/v1/threads", {"params": {"limit": -1}}),
    *[("GET", "/v1/search", {"params": {"q": q}}) for q in (
        "", " ", '"', '"unbalanced', "AND OR NOT", "NEAR(a b)", "a*", "*", "col:value", "^a", "a -b", "(((",
        "'; DROP TABLE messages; --", "\x00", "\ud800".encode("utf-8", "surrogatepass").decode("latin-1"),
        "x" * 5000, "tea OR 1=1")],
    ("GET", "/v1/search", {}),
    ("GET", "/v1/search", {"params": {"q": "tea", "limit": 0}}),
    ("GET", "/v1/search", {"params": {"q": "tea", "limit": 10**30}}),
    ("GET", "/v1/search", {"params": {"q": "tea", "thread_id": ""}}),
    ("GET", "/v1/search?q=%ED%A0%80", {}),
    ("GET", "/v1/search?q=a%00b", {}),
    ("POST", "/v1/recall", {"json": {"query": ""}}),
    ("POST", "/v1/recall", {"json": {"query": 5}}),
    ("POST", "/v1/recall", {"json": {"query": "NEAR(\"a\" b) OR *"}}),
    ("POST", "/v1/recall", {"content": b'{"query": ' + SURROGATE + b"}"}),
    ("POST", "/v1/recall", {"json": {"query": "a\x00b"}}),
    ("POST", "/v1/recall", {"json": {"query": "tea", "top_k": 0}}),
    ("POST", "/v1/recall", {"json": {"query": "tea", "top_k": 10**30}}),
    ("POST", "/v1/recall", {"json": {"query": "tea", "thread_id": ""}}),
    ("PUT", "/v1/working-memory", {"content": b'{"content": ' + SURROGATE + b"}"}),
    ("PUT", "/v1/working-memory", {"json": {"content": "a\x00b"}}),
    ("PUT", "/v1/working-memory", {"json": {"content": ""}}),
    ("PUT", "/v1/working-memory", {"json": {"content": None}}),
    ("PUT", "/v1/working-memory", {"json": {"content": "x", "thread_id": "\x00"}}),
    ("GET", "/v1/working-memory", {"params": {"thread_id": ""}}),
    ("PUT", "/v1/threads", {"json": {}}),
    ("GET", "/v1/nothing-here", {}),
    ("TRACE", "/v1/me", {}),
]


@pytest.mark.parametrize(("method", "path", "options"), HOSTILE, ids=lambda v: repr(v)[:60])
def test_hostile_input_gets_a_clear_answer_never_a_500(
    live: Live, method: str, path: str, options: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with live.client(live.key()) as client:
        client.post("/v1/threads", json={"id": "t"})
        options = dict(options)
        headers = {**({"Content-Type": "application/json"} if "content" in options else {}),
                   **options.pop("headers", {})}
        with caplog.at_level(logging.ERROR, logger="memvault.server"):
            answer = client.request(method, path, headers=headers, **options)
    assert answer.status_code < 500, answer.text
    if answer.status_code >= 400:
        error = answer.json()["error"]
        assert set(error) == {"code", "message"} and error["code"] != "internal" and error["message"]
    assert not [r for r in caplog.records if r.name.startswith("memvault.server")]


def test_method_not_allowed_and_unknown_paths_use_the_error_body(live: Live) -> None:
    with live.client(live.key()) as client:
        wrong = client.put("/v1/threads", json={})
        assert (wrong.status_code, wrong.json()["error"]["code"]) == (405, "method_not_allowed")
        assert "GET" in wrong.headers["allow"]
        unknown = client.get("/v1/nothing-here")
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
