"""Keys die with their resource (ARCHITECTURE.md, invariant 4), over the real server: a key
bound to a resource gets 401 once the resource is deleted; other resources' keys still work."""

from __future__ import annotations

from server_live import Live, run

from memvault import Memory
from memvault.server import Keyring


def test_a_deleted_resource_key_is_401_on_the_next_request(live: Live) -> None:
    doomed, kept = live.key("dora"), live.key("edda")
    with live.client(doomed) as client, live.client(kept) as other:
        assert client.post("/v1/threads", json={"id": "td"}).status_code in (200, 201)
        assert client.get("/v1/me").status_code == 200
        key_id = client.get("/v1/me").json()["key_id"]

        async def delete() -> tuple[dict[str, int], list[str]]:
            async with await Memory.open(live.db) as memory:
                deleted = await memory.delete_resource(resource_id="dora")
                return deleted.extra, [k.key_id for k in await Keyring(memory).list()]

        extra, remaining = run(delete())
        refused = client.get("/v1/me")
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"] == "Bearer"
        assert client.get("/v1/threads").status_code == 401
        assert other.get("/v1/me").status_code == 200
    assert extra == {"api_keys": 1}
    assert key_id not in remaining
