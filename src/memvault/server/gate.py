"""The outermost ASGI middleware of the API: every ``/v1`` request is checked for a valid key
before anything else answers, and its path is routed as the client encoded it.

- **401 first.** A request under ``/v1`` without a valid ``Authorization: Bearer`` key is
  answered 401 before the body-size limit (413), method routing (405), a missing path (404) or
  body parsing (422) can answer: an anonymous caller learns nothing but 401. The verified key is
  kept in the request's state, so the endpoints do not verify it twice.
- **Ids with any character.** Routing runs on the raw, still percent-encoded path
  (``scope["raw_path"]``), one ``/``-separated segment per path parameter; the endpoints decode
  each id once (:func:`decoded`). So a thread id ``session/2026/11`` is sent as
  ``session%2F2026%2F11`` and reaches the thread routes whole, and ``%``, ``..``, spaces,
  ``?``, ``#`` and any Unicode character work the same way.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from memvault.errors import MemvaultError
from memvault.server.errors import error_body
from memvault.server.keys import Keyring

PREFIX = "/v1"
_SAFE = "/%:@!$&'()*+,;=-._~"
NO_KEY = "send an API key: Authorization: Bearer <key>"
BAD_KEY = "unknown or revoked API key"
KEY_STATE = "memvault_key"
"""The request-state name of the verified :class:`~memvault.server.keys.ApiKey`."""


class Gate:
    """401 before anything else under ``/v1``; routing on the raw path (see the module)."""

    def __init__(self, app: ASGIApp, keyring: Keyring) -> None:
        self.app = app
        self.keyring = keyring

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path")
        # as sent, still percent-encoded; a raw byte outside ASCII is encoded like the client should
        path = quote(raw, safe=_SAFE) if isinstance(raw, bytes) else quote(scope["path"], safe=_SAFE)
        if not (_under_prefix(path) or _under_prefix(scope["path"])):  # "/%76%31/..." is /v1 too
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": path.split("?", 1)[0]}
        secret = _bearer(scope)
        if secret is None:
            await _answer(send, 401, NO_KEY)
            return
        try:
            key = await self.keyring.verify(secret)
        except MemvaultError:
            await _answer(send, 503, "the store failed; try again later")
            return
        if key is None:
            await _answer(send, 401, BAD_KEY)
            return
        scope.setdefault("state", {})[KEY_STATE] = key
        await self.app(scope, receive, send)


def _under_prefix(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def _bearer(scope: Scope) -> str | None:
    """The secret of the ``Authorization: Bearer`` header (``None``: none, or another scheme)."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, secret = value.decode("latin-1").partition(" ")
            return secret.strip() or None if scheme.lower() == "bearer" else None
    return None


async def _answer(send: Send, status: int, message: str) -> None:
    body = error_body(status, message)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def decoded(segment: str) -> str:
    """A path segment as the client meant it: percent-decoded once, as UTF-8 (an invalid
    sequence raises ``ValueError``)."""
    return unquote(segment, errors="strict")
