"""The ``/v1`` endpoints, one router per concern; :data:`ROUTERS` lists them for the app."""

from __future__ import annotations

from memvault.server.routes import identity, lookup, messages, retention, states, threads

ROUTERS = (identity.router, threads.router, messages.router, lookup.router, retention.router, states.router)
