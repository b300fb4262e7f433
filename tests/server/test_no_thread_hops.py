"""No request of the API hops to a worker thread: FastAPI runs a plain-function endpoint or
dependency in its thread pool, which cost about 0.2 ms per request (``memvault bench api``).
Every endpoint and every dependency of the app must be a coroutine."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from memvault import Memory
from memvault.server import create_app
from memvault.server.routes import ROUTERS


def _calls(dependant: Dependant) -> Iterator[Any]:
    if dependant.call is not None:
        yield dependant.call
    for sub in dependant.dependencies:
        yield from _calls(sub)


def _is_coroutine(call: Any) -> bool:
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(
        getattr(call, "__call__", None))  # noqa: B004 (a class instance, e.g. HTTPBearer)


async def test_every_endpoint_and_dependency_is_a_coroutine() -> None:
    async with await Memory.open("memory://") as memory:
        app = create_app(memory)
        routes = [route for router in [*ROUTERS, app.router] for route in router.routes
                  if isinstance(route, APIRoute)]
        assert any(route.path == "/v1/threads/{thread_id}/messages" for route in routes)
        plain = {f"{route.path}: {getattr(call, '__qualname__', call)!s}"
                 for route in routes for call in _calls(route.dependant) if not _is_coroutine(call)}
        assert plain == set()
