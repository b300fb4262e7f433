"""Retention over the real HTTP server: a resource key reads its resource's policy and may
shorten it (never lengthen it past the store's: 403); an admin key sets the store's policy and
sweeps; expired messages disappear from every answer at once; bad bodies are 422 and write
nothing; anonymous callers get 401 first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from server_live import Live

DAY = 86_400
OLD = (datetime.now(UTC) - timedelta(days=100)).isoformat()
NONE = {"max_age_seconds": None, "resource_max_age_seconds": None, "store_max_age_seconds": None}


def _messages(client: Any, thread: str) -> list[str]:
    answer = client.get(f"/v1/threads/{thread}/messages")
    assert answer.status_code == 200, answer.text
    return [m["id"] for m in answer.json()["messages"]]


def test_policies_and_expiry_over_http(live: Live) -> None:
    key = live.key("rita")
    with live.client(key) as rita, live.client(live.admin_key) as admin, \
            live.client(live.admin_key, **{"X-Memvault-Resource": "rita"}) as admin_for_rita:
        posted = rita.post("/v1/threads/t/messages", json={"messages": [
            {"id": "old", "role": "user", "created_at": OLD,
             "parts": [{"type": "text", "text": "old walrus"}]},
            {"id": "new", "role": "user", "parts": [{"type": "text", "text": "new walrus"}]}]})
        assert posted.status_code == 201, posted.text
        assert rita.get("/v1/retention").json() == NONE
        assert _messages(rita, "t") == ["old", "new"]

        assert admin.put("/v1/store/retention", json={"max_age_seconds": 365 * DAY}).json() == {
            "max_age_seconds": 365 * DAY}
        assert rita.get("/v1/retention").json() == {**NONE, "max_age_seconds": 365 * DAY,
                                                    "store_max_age_seconds": 365 * DAY}
        shorter = rita.put("/v1/retention", json={"max_age_seconds": 90 * DAY})
        assert shorter.status_code == 200, shorter.text
        assert shorter.json()["max_age_seconds"] == 90 * DAY
        assert _messages(rita, "t") == ["new"]  # at once, before any sweep
        hits = rita.get("/v1/search", params={"q": "walrus"}).json()["hits"]
        assert [h["message"]["id"] for h in hits] == ["new"]

        longer = rita.put("/v1/retention", json={"max_age_seconds": 400 * DAY})
        assert longer.status_code == 403, longer.text
        assert rita.get("/v1/retention").json()["resource_max_age_seconds"] == 90 * DAY
        assert admin_for_rita.put("/v1/retention", json={"max_age_seconds": 400 * DAY}).status_code == 200
        assert _messages(rita, "t") == ["old", "new"]

        assert rita.put("/v1/retention", json={"max_age_seconds": 30 * DAY}).status_code == 200
        swept = admin.post("/v1/store/sweep")
        assert swept.status_code == 200 and swept.json()["messages"] >= 1, swept.text
        assert rita.put("/v1/retention", json={"max_age_seconds": None}).json()[
            "resource_max_age_seconds"] is None
        assert admin.put("/v1/store/retention", json={"max_age_seconds": None}).json() == {
            "max_age_seconds": None}
        assert _messages(rita, "t") == ["new"]  # swept: gone for good


@pytest.mark.parametrize("body", [{}, {"max_age_seconds": True}, {"max_age_seconds": "90"},
                                  {"max_age_seconds": 0}, {"max_age_seconds": -5},
                                  {"max_age_seconds": 1.5}, {"max_age_seconds": 10**12},
                                  {"max_age_seconds": 60, "other": 1}])
def test_bad_bodies_are_422_and_write_nothing(live: Live, body: dict[str, Any]) -> None:
    with live.client(live.key()) as client, live.client(live.admin_key) as admin:
        assert client.put("/v1/retention", json=body).status_code == 422
        assert admin.put("/v1/store/retention", json=body).status_code == 422
        assert client.get("/v1/retention").json() == NONE


def test_who_may_call_what(live: Live) -> None:
    with live.client(None) as anonymous, live.client(live.key()) as resource:
        for method, path in (("GET", "/v1/retention"), ("PUT", "/v1/retention"),
                             ("GET", "/v1/store/retention"), ("PUT", "/v1/store/retention"),
                             ("POST", "/v1/store/sweep")):
            assert anonymous.request(method, path, json={"max_age_seconds": 1}).status_code == 401
        assert resource.get("/v1/store/retention").status_code == 403
        assert resource.put("/v1/store/retention", json={"max_age_seconds": 1}).status_code == 403
        assert resource.post("/v1/store/sweep").status_code == 403
