"""Error bodies and exception handlers: every error answer is
``{"error": {"code": str, "message": str}}``.

Codes by status: 400 and 422 ``invalid``, 401 ``unauthorized`` (with ``WWW-Authenticate:
Bearer``), 403 ``forbidden``, 404 ``not_found``, 405 ``method_not_allowed``, 409 ``conflict``,
413 ``too_large``, 415 ``unsupported_media_type``, 503 ``unavailable`` (the store failed: a
server-side fault), 500 ``internal`` (a bug: logged, answered without internals).
memvault's own errors are mapped: :class:`ValidationError` 422, :class:`MessageTooLargeError`
413, :class:`NotFoundError` 404, :class:`ThreadExistsError` 409, :class:`StoreError` 503.
Bodies are ASCII JSON, so that no input (a lone surrogate...) can break an error answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from memvault.errors import (
    ConfigurationError,
    MemvaultError,
    MessageTooLargeError,
    NotFoundError,
    StoreError,
    ThreadExistsError,
    ValidationError,
)

logger = logging.getLogger("memvault.server")

CODES = {400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found",
         405: "method_not_allowed", 409: "conflict", 413: "too_large", 415: "unsupported_media_type",
         422: "invalid", 500: "internal", 503: "unavailable"}
THREAD_NOT_FOUND = "no such thread for this resource"
"""The one message for a thread that is missing or belongs to another resource."""
MESSAGE_NOT_FOUND = "no such message in this thread"


class ApiError(Exception):
    """An answer other than success: its status picks the code (:data:`CODES`)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def error_body(status: int, message: str) -> bytes:
    """The JSON bytes of an error answer."""
    return json.dumps({"error": {"code": CODES.get(status, "error"), "message": message}}).encode()


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(error_body(status, message), status_code=status, headers=dict(headers or {}),
                    media_type="application/json")


def _status_of(error: MemvaultError) -> int:
    for kind, status in ((MessageTooLargeError, 413), (ValidationError, 422), (NotFoundError, 404),
                         (ThreadExistsError, 409), (ConfigurationError, 422), (StoreError, 503)):
        if isinstance(error, kind):
            return status
    return 500


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.message, exc.headers)


async def _memvault_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemvaultError)
    status = _status_of(exc)
    if status >= 500:
        logger.error("%s %s failed: %r", request.method, request.url.path, exc)
        message = "the store failed; try again later" if status == 503 else "internal error"
        return error_response(status, message)
    return error_response(status, str(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    return error_response(exc.status_code, detail, exc.headers)


Refusal = Callable[[Request], Awaitable["ApiError | None"]]
"""Answers whether a request is refused before its body counts (a missing or bad key)."""


def _request_invalid(refusal_before_parsing: Refusal) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        if (refusal := await refusal_before_parsing(request)) is not None:
            return error_response(refusal.status, refusal.message, refusal.headers)
        return error_response(422, "; ".join(_describe(e) for e in exc.errors()[:5]) or "invalid request")

    return handle


def _describe(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}"


async def _unexpected(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal error")


def install(app: FastAPI, refusal_before_parsing: Refusal) -> None:
    """Register the handlers on ``app``, the catch-all last. A request whose body is invalid
    gets ``refusal_before_parsing(request)`` first (:func:`memvault.server.auth.refusal_before_parsing`:
    an anonymous caller learns nothing but 401), else 422."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(MemvaultError, _memvault_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _request_invalid(refusal_before_parsing))
    app.add_exception_handler(Exception, _unexpected)
