"""API keys: random secrets shown once, stored only as a SHA-256 hash, each bound to exactly one
resource, or an admin key bound to none.

A key reads ``mv_<key id>_<secret>``: the key id (8 hex digits) is not secret; it names the key
in listings and for revocation. The records live in the memvault store itself, as states of the
reserved resource :data:`KEYS_RESOURCE` (so they work on every backend and survive restarts):
one state per key, under its key id, holding the hash, the resource, the name and the creation
time. Nothing caches them, so a revocation is effective on the next request. Ephemeral keys
(``memvault studio``'s) are kept in process memory only.

Example::

    keyring = Keyring(memory)
    secret, key = await keyring.create(resource_id="ada", name="ada's agent")
    assert (await keyring.verify(secret)) == key
    await keyring.revoke(key.key_id)
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import asdict, dataclass
from typing import Any

from memvault.errors import ValidationError
from memvault.memory import Memory
from memvault.model import check_id, now
from memvault.transfer.reserved import KEYS_RESOURCE, MAX_KEYS

PREFIX = "mv_"
_ID_HEX = 8
_SHAPE = re.compile(rf"{PREFIX}([0-9a-f]{{{_ID_HEX}}})_[A-Za-z0-9_-]{{16,200}}")
_MAX_KEYS = MAX_KEYS


@dataclass(frozen=True)
class ApiKey:
    """What a key grants. ``resource_id`` is ``None`` for an admin key. Never holds the secret."""

    key_id: str
    resource_id: str | None
    name: str | None
    created_at: str

    @property
    def admin(self) -> bool:
        return self.resource_id is None


def digest(secret: str) -> str:
    """The SHA-256 hex digest stored for a key (keys are random, so no salt or stretching is needed)."""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def key_id_of(secret: str) -> str | None:
    """The key id a well-formed key names, or ``None`` for anything else."""
    match = _SHAPE.fullmatch(secret)
    return match[1] if match else None


def check_resource(resource_id: str) -> str:
    """``resource_id`` if it may own keys and data: a valid id, not the reserved one."""
    try:
        check_id(resource_id)
    except ValueError as exc:
        raise ValidationError(f"resource id: {exc}") from None
    if resource_id == KEYS_RESOURCE:
        raise ValidationError(f"{KEYS_RESOURCE!r} is reserved for the API keys")
    return resource_id


class Keyring:
    """Creates, lists, revokes and verifies the API keys of one memvault store."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._ephemeral: dict[str, tuple[str, ApiKey]] = {}

    async def create(self, *, resource_id: str | None, name: str | None = None) -> tuple[str, ApiKey]:
        """A new key for ``resource_id`` (``None``: an admin key), stored hashed. Returns the
        secret (show it once: it cannot be recovered) and the key."""
        if resource_id is not None:
            check_resource(resource_id)
        while True:
            secret, key = _new(resource_id, name)
            value = {"sha256": digest(secret), **asdict(key)}
            if await self.memory.compare_and_set_state(
                value, resource_id=KEYS_RESOURCE, key=key.key_id, expected_version=None
            ) is not None:
                return secret, key

    def add_known(self, secret: str, *, resource_id: str | None = None, name: str | None = None) -> ApiKey:
        """Accept ``secret`` (a well-formed key, e.g. from :func:`new_secret`) for this process
        only, as a key of ``resource_id`` (``None``: admin). Not stored."""
        key_id = key_id_of(secret)
        if key_id is None:
            raise ValidationError(f"not a memvault API key: it must read {PREFIX}<8 hex digits>_<secret>")
        key = ApiKey(key_id, resource_id, name, now().isoformat(timespec="seconds"))
        self._ephemeral[key_id] = (digest(secret), key)
        return key

    async def list(self) -> list[ApiKey]:
        """The stored keys (not the ephemeral ones), oldest first."""
        states = await self.memory.list_states(resource_id=KEYS_RESOURCE, limit=_MAX_KEYS)
        keys = [_key(state.key, state.value) for state in states if isinstance(state.value, dict)]
        return sorted(keys, key=lambda k: (k.created_at, k.key_id))

    async def revoke(self, key_id: str) -> bool:
        """Delete the key; ``False`` when there was none. Effective on the next request."""
        if self._ephemeral.pop(key_id, None) is not None:
            return True
        return await self.memory.delete_state(resource_id=KEYS_RESOURCE, key=key_id)

    async def verify(self, secret: str) -> ApiKey | None:
        """The key ``secret`` is, or ``None`` when it is malformed, unknown or revoked."""
        key_id = key_id_of(secret)
        if key_id is None:
            return None
        hashed = digest(secret)
        ephemeral = self._ephemeral.get(key_id)
        if ephemeral is not None and hmac.compare_digest(ephemeral[0], hashed):
            return ephemeral[1]
        state = await self.memory.get_state(resource_id=KEYS_RESOURCE, key=key_id)
        if state is None or not isinstance(state.value, dict):
            return None
        stored = str(state.value.get("sha256"))
        return _key(key_id, state.value) if hmac.compare_digest(stored, hashed) else None


async def admits(memory: Memory, resource_id: str, secret: str) -> bool:
    """Whether ``secret`` is a valid (known, not revoked) key bound to ``resource_id``: what the
    MCP server's HTTP transport asks of every request. An admin key is not bound to a resource
    and is not admitted."""
    key = await Keyring(memory).verify(secret)
    return key is not None and not key.admin and key.resource_id == resource_id


def new_secret() -> str:
    """A new random key: ``mv_``, an 8-hex-digit key id, ``_``, 43 URL-safe characters."""
    return f"{PREFIX}{secrets.token_hex(_ID_HEX // 2)}_{secrets.token_urlsafe(32)}"


def _new(resource_id: str | None, name: str | None) -> tuple[str, ApiKey]:
    secret = new_secret()
    key_id = key_id_of(secret)
    assert key_id is not None
    return secret, ApiKey(key_id, resource_id, name, now().isoformat(timespec="seconds"))


def _key(key_id: str, value: dict[str, Any]) -> ApiKey:
    """The key a stored record describes (its state's key is the key id)."""
    return ApiKey(key_id=key_id, resource_id=value.get("resource_id"), name=value.get("name"),
                  created_at=str(value.get("created_at", "")))
