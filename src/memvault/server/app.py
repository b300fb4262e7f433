"""The HTTP API over :class:`~memvault.Memory`: :func:`create_app`.

Every ``/v1`` endpoint acts on the resource of the caller's API key (see
:mod:`memvault.server.auth`); the OpenAPI document is at ``/openapi.json``. When the Studio page
is installed (``memvault/server/studio/``), it is served at ``/studio/``, ``GET /`` redirects
there and ``GET /favicon.ico`` answers its icon (an SVG). No interactive docs page is served: it
would load scripts from a CDN.

Example::

    memory = await Memory.open("sqlite:///app.db")
    app = create_app(memory)          # then run it with uvicorn (see memvault.server.run)
"""

from __future__ import annotations

import hmac
import mimetypes
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from memvault.memory import Memory
from memvault.server import auth, errors
from memvault.server.errors import error_response
from memvault.server.gate import Gate
from memvault.server.keys import Keyring
from memvault.server.limits import DEFAULT_MAX_BODY_BYTES, BodyLimit
from memvault.server.routes import ROUTERS

STUDIO = Path(__file__).parent / "studio"


def create_app(
    memory: Memory,
    *,
    keys: Keyring | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    extra_keys: Iterable[str] = (),
    handoffs: Mapping[str, str] | None = None,
) -> FastAPI:
    """The API app over an open ``memory`` (the caller closes it).

    ``keys``: the key records (default: :class:`Keyring` over ``memory``'s store).
    ``max_body_bytes``: larger request bodies are refused with 413 (default 1 MiB).
    ``extra_keys``: admin keys (secrets from :func:`~memvault.server.keys.new_secret`) known to
    this process only, never stored (``memvault studio``'s).
    ``handoffs``: one-time tokens, each mapped to one of ``extra_keys``: ``POST /studio/handoff``
    with ``{"token": ...}`` answers ``{"key": ...}`` once per token, within 5 minutes of start
    (``memvault studio --open`` opens the page with a token, so the key is never on a command
    line)."""
    app = FastAPI(title="memvault", summary="Memory for LLM agents: threads, messages, recall.",
                  version="1", docs_url=None, redoc_url=None, redirect_slashes=False)
    app.state.memory = memory
    app.state.keyring = keyring = keys or Keyring(memory)
    for secret in extra_keys:
        keyring.add_known(secret, name="ephemeral admin")
    errors.install(app, auth.refusal_before_parsing)
    for router in ROUTERS:
        app.include_router(router)
    if handoffs:
        _add_handoff(app, dict(handoffs))
    if STUDIO.is_dir():
        # the page's modules must be served as JavaScript (a Windows registry can say text/plain)
        mimetypes.add_type("text/javascript", ".js")
        app.mount("/studio", StaticFiles(directory=STUDIO, html=True), name="studio")

        @app.get("/", include_in_schema=False)
        async def home() -> RedirectResponse:
            return RedirectResponse("/studio/")

        @app.get("/studio", include_in_schema=False)
        async def studio() -> RedirectResponse:
            return RedirectResponse("/studio/")

        @app.get("/favicon.ico", include_in_schema=False)
        async def favicon() -> FileResponse:
            return FileResponse(STUDIO / "favicon.svg", media_type="image/svg+xml")

    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes)
    app.add_middleware(Gate, keyring=keyring)  # outermost: 401 before the body limit answers
    return app


HANDOFF_SECONDS = 300.0


def _add_handoff(app: FastAPI, tokens: dict[str, str]) -> None:
    """``POST /studio/handoff``: a one-time token for its key (see :func:`create_app`)."""
    until = time.monotonic() + HANDOFF_SECONDS

    @app.post("/studio/handoff", include_in_schema=False)
    async def handoff(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        token = body.get("token") if isinstance(body, dict) else None
        if isinstance(token, str) and time.monotonic() < until:
            for known in list(tokens):
                if hmac.compare_digest(known.encode(), token.encode("utf-8", "replace")):
                    return JSONResponse({"key": tokens.pop(known)})
        return error_response(401, "this hand-off token is unknown, used or expired: use the printed URL")
