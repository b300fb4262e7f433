"""The HTTP API (``memvault serve``) and the Studio page (``memvault studio``): FastAPI on uvicorn,
the ``server`` extra (``pip install 'memvault[server]'``). See ``docs/http-api.md``."""

from __future__ import annotations

from memvault.errors import MissingExtraError

try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("the HTTP API", "server", "fastapi and uvicorn") from None

from memvault.server.app import create_app
from memvault.server.keys import ApiKey, Keyring, new_secret

__all__ = ["ApiKey", "Keyring", "create_app", "new_secret"]
