"""Resource ids memvault keeps its own records under: not users' data.

:data:`KEYS_RESOURCE` holds the HTTP API's key records (:mod:`memvault.server.keys`). The HTTP
API refuses it wherever a resource is named and hides it from ``/v1/resources``; ``memvault
stats`` leaves it out unless asked for it by name; ``export --all`` and ``copy`` keep it (a
copied store keeps its keys).
"""

from __future__ import annotations

KEYS_RESOURCE = "memvault:api-keys"
"""The reserved resource id holding the API key records."""
RESERVED_RESOURCES = frozenset({KEYS_RESOURCE})
