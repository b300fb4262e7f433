"""Isolation over the real server: for EVERY endpoint, a key of resource A can neither read,
list, search, recall, change nor delete anything of resource B; B's data is unchanged afterwards;
a foreign id answers byte for byte like a missing one; and naming B in the resource header is 403.
The table of cases is checked against the app's routes, so that a new endpoint needs a case.
Every case runs over a SQLite file and over PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from server_live import B_THREAD, B, Live, b_snapshot, live_server, no_b, run

from postgres_server import drop_schema, postgres_url, with_schema

FOREIGN = {"thread": B_THREAD, "message": "mb1", "state": "run2"}
MISSING = {"thread": "no-such-thread", "message": "no-such-message", "state": "no-such-state"}


@dataclass(frozen=True)
class Case:
    """A request made with A's key: ``path`` and ``params``/``body`` take ``{thread}`` and
    ``{message}``; ``status`` is the answer expected for both foreign and missing ids;
    ``same_as_missing``: the answers to foreign and missing ids must be byte-identical."""

    method: str
    route: str
    path: str
    status: int
    params: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    same_as_missing: bool = True

    def send(self, client: httpx.Client, ids: dict[str, str]) -> httpx.Response:
        return client.request(self.method, self.path.format(**ids), params=_fill(self.params, ids),
                              json=_fill(self.body, ids))


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


T = "/v1/threads/{thread_id}"
M = "/v1/threads/{thread_id}/messages"
S = "/v1/states/{key}"
CASES = [
    Case("GET", "/v1/me", "/v1/me", 200),
    Case("GET", "/v1/resources", "/v1/resources", 403),
    Case("GET", "/v1/threads", "/v1/threads", 200),
    Case("GET", "/v1/threads", "/v1/threads", 200, params={"limit": 1000}),
    Case("GET", "/v1/threads", "/v1/threads", 200, params={"title_contains": "B", "order_by": "created_at",
                                                          "direction": "asc", "offset": 0}),
    Case("GET", "/v1/threads", "/v1/threads", 200, params={"metadata": '{{"codename": "xylophone"}}'}),
    Case("GET", "/v1/threads/count", "/v1/threads/count", 200),
    Case("GET", "/v1/threads/count", "/v1/threads/count", 200, params={"title_contains": "quetzal"}),
    Case("POST", "/v1/threads", "/v1/threads", 201, body={"id": "{thread}", "title": "mine"},
         same_as_missing=False),
    Case("GET", T, "/v1/threads/{thread}", 404),
    Case("PATCH", T, "/v1/threads/{thread}", 404, body={"title": "taken over", "metadata": {}}),
    Case("DELETE", T, "/v1/threads/{thread}", 404),
    Case("GET", M, "/v1/threads/{thread}/messages", 404),
    Case("GET", M, "/v1/threads/{thread}/messages", 404, params={"last_n": 2}),
    Case("POST", M, "/v1/threads/{thread}/messages", 201, same_as_missing=False,
         body={"messages": [{"id": "{message}", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
    Case("DELETE", M + "/{message_id}", "/v1/threads/{thread}/messages/{message}", 404),
    Case("GET", "/v1/search", "/v1/search", 200, params={"q": "quetzal xylophone"}),
    Case("GET", "/v1/search", "/v1/search", 404, params={"q": "quetzal", "thread_id": "{thread}"}),
    Case("POST", "/v1/recall", "/v1/recall", 200, body={"query": "where does the quetzal hide?"}),
    Case("POST", "/v1/recall", "/v1/recall", 404, body={"query": "quetzal", "thread_id": "{thread}"}),
    Case("GET", "/v1/working-memory", "/v1/working-memory", 200),
    Case("GET", "/v1/working-memory", "/v1/working-memory", 404, params={"thread_id": "{thread}"}),
    Case("PUT", "/v1/working-memory", "/v1/working-memory", 200, body={"content": "mine"}),
    Case("PUT", "/v1/working-memory", "/v1/working-memory", 404,
         body={"content": "taken over", "thread_id": "{thread}"}),
    Case("DELETE", "/v1/working-memory", "/v1/working-memory", 204),
    Case("DELETE", "/v1/working-memory", "/v1/working-memory", 404, params={"thread_id": "{thread}"}),
    Case("GET", "/v1/stats", "/v1/stats", 200),
    Case("GET", "/v1/states", "/v1/states", 200),
    Case("GET", "/v1/states", "/v1/states", 200, params={"workflow_id": "wf-b", "suspended": "true"}),
    Case("GET", "/v1/states", "/v1/states", 404, params={"thread_id": "{thread}"}),
    Case("GET", S, "/v1/states/{state}", 404),
    Case("PUT", S, "/v1/states/{state}", 200, body={"value": "mine"}, same_as_missing=False),
    Case("PUT", S, "/v1/states/{state}", 404, body={"value": "taken over", "thread_id": "{thread}"}),
    Case("PUT", S, "/v1/states/{state}", 409, body={"value": "taken over", "expected_version": 1}),
    Case("PATCH", S, "/v1/states/{state}", 404, body={"merge": {"xylophone": None}, "status": "done"}),
    Case("PATCH", S, "/v1/states/{state}", 404, body={"merge": {"a": 1}, "expected_version": 1}),
    Case("DELETE", S, "/v1/states/{state}", 204),
    Case("GET", "/v1/retention", "/v1/retention", 200),
    Case("PUT", "/v1/retention", "/v1/retention", 200, body={"max_age_seconds": 86_400}),
    Case("GET", "/v1/store/retention", "/v1/store/retention", 403),
    Case("PUT", "/v1/store/retention", "/v1/store/retention", 403, body={"max_age_seconds": 1}),
    Case("POST", "/v1/store/sweep", "/v1/store/sweep", 403),
]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The server over a SQLite file, then over PostgreSQL (a schema of its own, dropped after)."""
    if request.param == "sqlite":
        with live_server(f"sqlite:///{tmp_path_factory.mktemp('server') / 'x.db'}") as server:
            yield server
        return
    schema = f"server_{uuid.uuid4().hex[:12]}"
    url = with_schema(postgres_url("the HTTP API over PostgreSQL"), schema)
    try:
        with live_server(url) as server:
            yield server
    finally:
        run(drop_schema(url, schema))


def test_every_route_has_an_isolation_case(live: Live) -> None:
    routes = {(method.upper(), path) for path, item in live.app.openapi()["paths"].items()
              for method in item}
    assert routes == {(case.method, case.route) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.method} {c.path} {c.params or c.body or ''}")
def test_a_key_of_a_sees_and_changes_nothing_of_b(live: Live, case: Case) -> None:
    before = b_snapshot(live)
    with live.client(live.key()) as a:
        foreign = case.send(a, FOREIGN)
        no_b(foreign)
        assert foreign.status_code == case.status, foreign.text
        if case.same_as_missing:
            missing = case.send(a, MISSING)
            assert (missing.status_code, missing.content) == (foreign.status_code, foreign.content)
            assert missing.headers.get("content-type") == foreign.headers.get("content-type")
    with live.client(live.key(), **{"X-Memvault-Resource": B}) as a_as_b:
        refused = case.send(a_as_b, FOREIGN)
        no_b(refused)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "forbidden"
    assert b_snapshot(live) == before


def test_a_thread_of_a_with_a_message_id_of_b_deletes_nothing_of_b(live: Live) -> None:
    before = b_snapshot(live)
    with live.client(live.key()) as a:
        assert a.post("/v1/threads", json={"id": "mine"}).status_code == 201
        foreign = a.delete("/v1/threads/mine/messages/mb1")
        missing = a.delete("/v1/threads/mine/messages/no-such-message")
    assert (foreign.status_code, foreign.content) == (missing.status_code, missing.content)
    assert foreign.status_code == 404
    assert b_snapshot(live) == before


def test_admin_with_the_header_sees_that_resource_and_b_sees_its_own(live: Live) -> None:
    with live.client(live.admin_key, **{"X-Memvault-Resource": B}) as admin:
        assert admin.get("/v1/me").json()["resource_id"] == B
        assert "quetzal" in admin.get(f"/v1/threads/{B_THREAD}/messages").text
    with live.client(live.b_key, **{"X-Memvault-Resource": B}) as b:
        assert b.get("/v1/me").json() == {"resource_id": B, "admin": False, "key_id": b.get(
            "/v1/me").json()["key_id"], "name": "bob's key"}
