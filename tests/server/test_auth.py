"""Keys over the real server: missing, malformed, unknown and revoked keys are 401 with
``WWW-Authenticate: Bearer``; a resource key naming another resource is 403; an admin key needs
the resource header on resource-scoped endpoints (400) and may name any resource, but never the
reserved key resource; and the store holds no key in clear."""

from __future__ import annotations

import sqlite3

import pytest
from server_live import B, Live, run

from memvault import Memory
from memvault.server import Keyring
from memvault.transfer.reserved import KEYS_RESOURCE


@pytest.mark.parametrize("authorization", [
    None, "", "Bearer", "Bearer  x y", "Basic dXNlcjpwdw==", "mv_00000000_x", "Bearer mv_00000000_nope",
    "Bearer not-a-key", "Bearer mv_zzzzzzzz_abc", "Token mv_00000000_abc",
])
def test_missing_malformed_or_unknown_keys_are_401(live: Live, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    with live.client(None, **headers) as anonymous:
        for method, path in (("GET", "/v1/me"), ("GET", "/v1/threads"), ("POST", "/v1/recall"),
                             ("DELETE", "/v1/threads/tb")):
            answer = anonymous.request(method, path, json={"query": "x"} if method == "POST" else None)
            assert answer.status_code == 401, answer.text
            assert answer.headers["www-authenticate"] == "Bearer"
            assert answer.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("body", [b"{not json", b'{"query": 5}', b"[]", b'"\\ud800"'])
def test_an_anonymous_bad_body_is_401_not_422(live: Live, body: bytes) -> None:
    """Only the key is judged for a caller without one: a bad body tells it nothing more."""
    json_type = {"Content-Type": "application/json"}
    with live.client(None) as anonymous:
        for path in ("/v1/recall", "/v1/threads", "/v1/threads/tb/messages"):
            answer = anonymous.post(path, content=body, headers=json_type)
            assert answer.status_code == 401, answer.text
            assert answer.headers["www-authenticate"] == "Bearer"
    with live.client(live.key()) as client:
        assert client.post("/v1/recall", content=body, headers=json_type).status_code == 422


def test_a_revoked_key_is_refused_on_the_next_request(live: Live) -> None:
    key = live.key()
    with live.client(key) as client:
        assert client.get("/v1/me").status_code == 200
        key_id = client.get("/v1/me").json()["key_id"]

        async def revoke() -> bool:
            async with await Memory.open(live.db) as memory:
                return await Keyring(memory).revoke(key_id)

        assert run(revoke())
        refused = client.get("/v1/me")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"


def test_a_key_with_a_tampered_secret_is_refused(live: Live) -> None:
    key = live.key()
    with live.client(key[:-1] + ("A" if key[-1] != "A" else "B")) as client:
        assert client.get("/v1/me").status_code == 401


def test_a_resource_key_naming_another_resource_is_403_and_its_own_is_fine(live: Live) -> None:
    key = live.key("carol")
    with live.client(key, **{"X-Memvault-Resource": B}) as client:
        assert client.get("/v1/me").status_code == 403
    with live.client(key, **{"X-Memvault-Resource": "carol"}) as client:
        assert client.get("/v1/me").json()["resource_id"] == "carol"


def test_admin_needs_the_header_on_resource_endpoints(live: Live) -> None:
    with live.client(live.admin_key) as admin:
        me = admin.get("/v1/me").json()
        assert me["admin"] is True and me["resource_id"] is None and me["name"] == "root"
        missing = admin.get("/v1/threads")
        assert missing.status_code == 400 and missing.json()["error"]["code"] == "invalid"
        listed = admin.get("/v1/resources").json()["resources"]
    assert {"resource_id": B, "threads": 1, "messages": 3} in listed
    assert KEYS_RESOURCE not in {r["resource_id"] for r in listed}
    with live.client(live.admin_key, **{"X-Memvault-Resource": B}) as admin:
        assert [t["id"] for t in admin.get("/v1/threads").json()["threads"]] == ["tb"]
        assert admin.get("/v1/stats").json()["messages"] == 3


@pytest.mark.parametrize("header", [KEYS_RESOURCE, "x" * 300])
def test_the_reserved_or_an_invalid_resource_is_refused(live: Live, header: str) -> None:
    for key in (live.admin_key, live.key()):
        with live.client(key, **{"X-Memvault-Resource": header}) as client:
            for path in ("/v1/me", "/v1/threads", "/v1/stats"):
                answer = client.get(path)
                assert answer.status_code in (403, 422), answer.text
                assert KEYS_RESOURCE not in answer.text or answer.status_code == 403


def test_keys_are_stored_hashed_only(live: Live) -> None:
    secret = live.key("dave")
    path = live.db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        dump = "\n".join(conn.iterdump())
    assert secret not in dump and secret.split("_", 2)[2] not in dump
    assert KEYS_RESOURCE in dump


def test_keyring_refuses_the_reserved_resource(live: Live) -> None:
    async def create() -> None:
        async with await Memory.open(live.db) as memory:
            await Keyring(memory).create(resource_id=KEYS_RESOURCE)

    with pytest.raises(ValueError, match="reserved"):
        run(create())
