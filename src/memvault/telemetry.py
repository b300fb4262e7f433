"""Observability: an OpenTelemetry span around every memory operation, and standard logging.

memvault uses the OpenTelemetry *API* only. Nothing is recorded or exported unless the
application installs an SDK and an exporter (the API's default tracer does nothing, cheaply);
there is no telemetry of memvault's own.

Each span is named ``memvault.<operation>`` (``memvault.save_messages``, ``memvault.recall``,
``memvault.summarize``, ...) and carries:

- ``memvault.operation``; ``memvault.resource_id`` and ``memvault.thread_id`` when the call names
  them (ids, never message text);
- ``memvault.count``: how many items the call returned (messages, hits, threads) when it returns
  a list or a page, and ``memvault.input_count`` for calls given a list (e.g. saved messages);
- ``memvault.duration_ms``: the wall time of the call;
- on failure: the exception recorded on the span and an ``ERROR`` status.

Every operation is also logged at ``DEBUG`` on the ``memvault`` logger with its duration.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeAlias, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
Operation: TypeAlias = Callable[P, Coroutine[Any, Any, R]]

logger = logging.getLogger("memvault")
_tracers: list[Any] = []


def _tracer() -> Any:
    """memvault's tracer, made on the first traced call (so importing memvault loads no
    OpenTelemetry): a proxy that follows the provider the application installs, even later."""
    if not _tracers:
        from opentelemetry import trace

        _tracers.append(trace.get_tracer("memvault"))
    return _tracers[0]
_IDS = ("resource_id", "thread_id")


def traced(operation: str) -> Callable[[Operation[P, R]], Operation[P, R]]:
    """Decorate an async function or method: each call runs in a ``memvault.<operation>`` span
    (see the module docstring for its attributes)."""

    def wrap(function: Operation[P, R]) -> Operation[P, R]:
        @functools.wraps(function)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with _tracer().start_as_current_span(f"memvault.{operation}",
                                               record_exception=False, set_status_on_exception=False) as span:
                recording = span.is_recording()
                if recording:
                    span.set_attribute("memvault.operation", operation)
                    for name in _IDS:
                        value = kwargs.get(name)
                        if isinstance(value, str):
                            span.set_attribute(f"memvault.{name}", value)
                    given = next((a for a in args[1:] if isinstance(a, list | tuple)), None)
                    if given is not None:
                        span.set_attribute("memvault.input_count", len(given))
                started = time.perf_counter()
                try:
                    result = await function(*args, **kwargs)
                except Exception as error:
                    elapsed = 1000.0 * (time.perf_counter() - started)
                    if recording:
                        span.set_attribute("memvault.duration_ms", elapsed)
                        span.record_exception(error)
                        span.set_status(_error_status(error))
                    logger.debug("%s failed after %.2f ms: %r", operation, elapsed, error)
                    raise
                elapsed = 1000.0 * (time.perf_counter() - started)
                if recording:
                    span.set_attribute("memvault.duration_ms", elapsed)
                    returned = _count(result)
                    if returned is not None:
                        span.set_attribute("memvault.count", returned)
                logger.debug("%s took %.2f ms", operation, elapsed)
                return result

        return run

    return wrap


def _error_status(error: Exception) -> Any:
    from opentelemetry.trace import Status, StatusCode

    return Status(StatusCode.ERROR, f"{type(error).__name__}: {error}")


def _count(result: Any) -> int | None:
    if isinstance(result, Sequence) and not isinstance(result, str | bytes):
        return len(result)
    for name in ("hits", "threads"):  # a recall result, a page of threads
        items = getattr(result, name, None)
        if isinstance(items, list):
            return len(items)
    return None
