"""Who is calling: the FastAPI dependencies that turn ``Authorization: Bearer <key>`` (and, for an
admin key, ``X-Memvault-Resource``) into the resource a request acts on.

- No key, a malformed, unknown or revoked key: 401 with ``WWW-Authenticate: Bearer``.
- A resource key acts on its own resource only: an ``X-Memvault-Resource`` header naming
  another resource is 403 (naming its own is allowed).
- An admin key acts on the resource its ``X-Memvault-Resource`` header names (missing: 400 on
  resource-scoped endpoints). The reserved key resource is refused (403).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memvault.errors import ValidationError
from memvault.memory import Memory
from memvault.server.errors import ApiError
from memvault.server.gate import BAD_KEY, KEY_STATE, NO_KEY
from memvault.server.keys import ApiKey, Keyring, check_resource
from memvault.transfer.reserved import KEYS_RESOURCE

RESOURCE_HEADER = "X-Memvault-Resource"
_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_bearer = HTTPBearer(auto_error=False, scheme_name="API key",
                     description="`memvault keys create` makes one: `Authorization: Bearer mv_...`")


@dataclass(frozen=True)
class Caller:
    """An authenticated request: its key, and the resource it acts on (``None``: an admin key
    without a resource header)."""

    key: ApiKey
    resource_id: str | None


async def memory_of(request: Request) -> Memory:
    """The app's :class:`Memory`. A coroutine: FastAPI runs a plain function dependency in a
    worker thread, a hop that cost about 0.2 ms per request (``memvault bench api``)."""
    memory: Memory = request.app.state.memory
    return memory


def _keyring(request: Request) -> Keyring:
    keyring: Keyring = request.app.state.keyring
    return keyring


async def _verified(request: Request, secret: str | None) -> ApiKey:
    """The key ``secret`` is (401 when missing, unknown or revoked); the one :class:`~memvault.
    server.gate.Gate` verified for this request when it did."""
    checked = getattr(request.state, KEY_STATE, None)
    if isinstance(checked, ApiKey):
        return checked
    if secret is None or not secret.strip():
        raise ApiError(401, NO_KEY, _CHALLENGE)
    key = await _keyring(request).verify(secret.strip())
    if key is None:
        raise ApiError(401, BAD_KEY, _CHALLENGE)
    return key


async def refusal_before_parsing(request: Request) -> ApiError | None:
    """The 401 for a request without a valid key, else ``None``. FastAPI parses a JSON body
    before the dependencies run, so a bad body would otherwise answer 422 to an anonymous
    caller: the 422 handler asks this first, and an anonymous caller learns nothing but 401."""
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    try:
        await _verified(request, secret if scheme.lower() == "bearer" else None)
    except ApiError as refusal:
        return refusal
    return None


_Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
_ResourceHeader = Annotated[str | None, Header(
    alias=RESOURCE_HEADER, description="The resource an admin key acts on.")]


async def caller(
    request: Request, credentials: _Credentials, resource_header: _ResourceHeader = None
) -> Caller:
    """The authenticated caller (401 / 403 / 422 as the module says)."""
    key = await _verified(request, None if credentials is None else credentials.credentials)
    if resource_header is None:
        return Caller(key, key.resource_id)
    if resource_header == KEYS_RESOURCE:
        raise ApiError(403, f"the resource {KEYS_RESOURCE!r} is reserved")
    if not key.admin and resource_header != key.resource_id:
        raise ApiError(403, f"this key acts on its own resource only: drop the {RESOURCE_HEADER} header")
    try:
        return Caller(key, check_resource(resource_header))
    except ValidationError as exc:
        raise ApiError(422, f"{RESOURCE_HEADER}: {exc}") from None


# resource and json_resource call caller themselves rather than depending on it: each
# dependency level costs FastAPI's solver time on every request (``memvault bench api``)


async def resource(
    request: Request, credentials: _Credentials, resource_header: _ResourceHeader = None
) -> str:
    """The resource a resource-scoped request acts on (400 for an admin key without the header)."""
    who = await caller(request, credentials, resource_header)
    if who.resource_id is None:
        raise ApiError(400, f"an admin key must name the resource: send the {RESOURCE_HEADER} header")
    return who.resource_id


async def admin(who: Annotated[Caller, Depends(caller)]) -> Caller:
    """The caller, if its key is an admin key (else 403)."""
    if not who.key.admin:
        raise ApiError(403, "this endpoint needs an admin key")
    return who


async def json_resource(
    request: Request, credentials: _Credentials, resource_header: _ResourceHeader = None
) -> str:
    """:func:`resource`, for an endpoint with a JSON body: a body of another type is 415
    (checked after the key, so that an anonymous caller learns nothing but 401)."""
    resource_id = await resource(request, credentials, resource_header)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise ApiError(415, "send a JSON body with Content-Type: application/json")
    return resource_id


MemoryDep = Annotated[Memory, Depends(memory_of)]
CallerDep = Annotated[Caller, Depends(caller)]
ResourceDep = Annotated[str, Depends(resource)]
JsonResourceDep = Annotated[str, Depends(json_resource)]
AdminDep = Annotated[Caller, Depends(admin)]
