"""The HTTP API over :class:`~memvault.Memory`: :func:`create_app`.

Every ``/v1`` endpoint acts on the resource of the caller's API key (see
:mod:`memvault.server.auth`); the OpenAPI document is at ``/openapi.json``. When the Studio page
is installed (``memvault/server/studio/``), it is served at ``/studio/`` and ``GET /`` redirects
there. No interactive docs page is served: it would load scripts from a CDN.

Example::

    memory = await Memory.open("sqlite:///app.db")
    app = create_app(memory)          # then run it with uvicorn (see memvault.server.run)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from memvault.memory import Memory
from memvault.server import auth, errors
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
) -> FastAPI:
    """The API app over an open ``memory`` (the caller closes it).

    ``keys``: the key records (default: :class:`Keyring` over ``memory``'s store).
    ``max_body_bytes``: larger request bodies are refused with 413 (default 1 MiB).
    ``extra_keys``: admin keys (secrets from :func:`~memvault.server.keys.new_secret`) known to
    this process only, never stored (``memvault studio``'s)."""
    app = FastAPI(title="memvault", summary="Memory for LLM agents: threads, messages, recall.",
                  version="1", docs_url=None, redoc_url=None, redirect_slashes=False)
    app.state.memory = memory
    app.state.keyring = keyring = keys or Keyring(memory)
    for secret in extra_keys:
        keyring.add_known(secret, name="ephemeral admin")
    errors.install(app, auth.refusal_before_parsing)
    for router in ROUTERS:
        app.include_router(router)
    if STUDIO.is_dir():
        app.mount("/studio", StaticFiles(directory=STUDIO, html=True), name="studio")

        @app.get("/", include_in_schema=False)
        async def home() -> RedirectResponse:
            return RedirectResponse("/studio/")

        @app.get("/studio", include_in_schema=False)
        async def studio() -> RedirectResponse:
            return RedirectResponse("/studio/")

    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes)
    app.add_middleware(Gate, keyring=keyring)  # outermost: 401 before the body limit answers
    return app
