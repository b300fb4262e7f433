"""The HTTP plumbing shared by memvault's clients of OpenAI-compatible APIs (embeddings, chat).

:class:`OpenAIHttp` knows where an API lives and how to reach it: the base URL (default: env
``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``), the key (default: env ``OPENAI_API_KEY``,
sent as ``Authorization: Bearer <key>``), one httpx client per event loop, and :meth:`OpenAIHttp.post`,
which retries what is worth retrying and turns everything else into an error a user can act on.
httpx comes with the ``openai`` extra and is imported only when a request is made.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import random
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from memvault.errors import ConfigurationError, MemvaultError, MissingExtraError
from memvault.rules.settings import positive_float

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_BASE_URL", "OpenAIHttp", "require_httpx", "retry_after_seconds", "server_message"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def require_httpx(feature: str) -> None:
    """Raise :class:`MissingExtraError` naming the ``openai`` extra when httpx is not installed."""
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(feature, "openai", "httpx") from exc


class OpenAIHttp:
    """One OpenAI-compatible API root, as used by one client object (``owner``).

    :meth:`post` sends JSON to ``{base_url}{path}``. A 429, a 5xx or a connection error is retried
    up to ``max_retries`` times with exponential backoff and jitter (``backoff_base * 2**attempt``
    seconds, at most ``backoff_max``, scaled by a random factor in [0.5, 1]); a ``Retry-After`` (or
    ``retry-after-ms``) header, when present, sets the wait instead, capped at ``max_retry_after``.
    Any other non-2xx answer raises ``error`` at once with the server's message and a hint.

    Arguments:
        owner: the client's class name, prefixed to configuration errors.
        service: what the server is, for error messages (``"embeddings server"``).
        error: the exception class raised when a request fails (a :class:`MemvaultError`).
        model: the model name, named in the hints of 404 and 400 errors.
        base_url, api_key: see the module docstring. A key is required for api.openai.com only.
        timeout: seconds per request (for a stream: between two reads).
        client: an ``httpx.AsyncClient`` to use instead of owned ones (the caller closes it).
        sleep: the coroutine that waits between retries (default ``asyncio.sleep``).

    Owned clients are made per event loop: one made in an earlier loop (an earlier
    ``asyncio.run``) is dropped, since its connections belong to that loop. :meth:`aclose` closes
    the current one.
    """

    def __init__(
        self,
        *,
        owner: str,
        service: str,
        error: type[MemvaultError],
        model: str,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        backoff_base: float,
        backoff_max: float,
        max_retry_after: float,
        headers: Mapping[str, str] | None,
        client: httpx.AsyncClient | None,
        sleep: Callable[[float], Awaitable[None]] | None,
    ) -> None:
        url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"{owner}: base_url must be an http:// or https:// URL such as {DEFAULT_BASE_URL!r}, "
                f"got {url!r}"
            )
        url = url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and url == DEFAULT_BASE_URL:
            raise ConfigurationError(
                f"{owner}: api.openai.com needs an API key: set OPENAI_API_KEY or pass api_key=...; "
                "for a local OpenAI-compatible server pass base_url=... instead"
            )
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"{owner}: max_retries must be an integer >= 0, got {max_retries!r}")
        self.owner = owner
        self.base_url = url
        self._service = service
        self._error = error
        self._model = model
        self._timeout = positive_float(timeout, "timeout", owner)
        self._max_retries = max_retries
        self._backoff_base = positive_float(backoff_base, "backoff_base", owner, allow_zero=True)
        self._backoff_max = positive_float(backoff_max, "backoff_max", owner, allow_zero=True)
        self._max_retry_after = positive_float(max_retry_after, "max_retry_after", owner, allow_zero=True)
        self._headers = {"Accept": "application/json", **(headers or {})}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._external_client = client
        self._client: httpx.AsyncClient | None = None
        self._client_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._sleep = sleep or asyncio.sleep

    def where(self, path: str) -> str:
        """``"the <service> at <url>"``, for error messages."""
        return f"the {self._service} at {self.base_url}{path}"

    async def post(
        self,
        path: str,
        payload: Mapping[str, Any],
        *,
        stream: bool = False,
        hints: Mapping[int, str] | None = None,
    ) -> httpx.Response:
        """POST ``payload`` as JSON and return the 2xx response, retrying as the class says.

        With ``stream=False`` the body has been read. With ``stream=True`` only the headers have:
        the caller reads the body (``aiter_lines``) and must close the response; nothing is
        retried once it is returned. ``hints`` maps a status to the advice appended to its error
        (defaults cover 401/403, 404, 429 and 5xx).
        """
        import httpx

        hints = hints or {}
        client = self.client()
        url = f"{self.base_url}{path}"
        attempt = 0
        while True:
            try:
                request = client.build_request("POST", url, json=payload, headers=self._headers)
                response = await client.send(request, stream=True)
                if not stream or not response.is_success:
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
            except (httpx.TransportError, OSError) as exc:
                if attempt >= self._max_retries:
                    raise self._error(
                        f"could not reach {self.where(path)} after {attempt + 1} attempts "
                        f"({type(exc).__name__}: {exc}); check base_url and that the server is running "
                        "and reachable"
                    ) from exc
                delay = self._backoff(attempt)
            else:
                status = response.status_code
                if response.is_success:
                    return response
                if status != 429 and status < 500:
                    raise self._rejected(path, response, hints)
                if attempt >= self._max_retries:
                    raise self._error(
                        f"{self.where(path)} still answered {status} after {attempt + 1} attempts: "
                        f"{server_message(response)}; " + hints.get(status, _gave_up_hint(status))
                    )
                retry_after = retry_after_seconds(response)
                delay = (
                    self._backoff(attempt) if retry_after is None else min(retry_after, self._max_retry_after)
                )
            await self._sleep(delay)
            attempt += 1

    def json(self, response: httpx.Response, path: str) -> Any:
        """The response's JSON body, or ``error`` saying that the server is not OpenAI-compatible."""
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._error(
                f"{self.where(path)} answered {response.status_code} with a body that is not JSON "
                f"({snippet(response.text)!r}); check that base_url points at an OpenAI-compatible API"
            ) from exc

    def client(self) -> httpx.AsyncClient:
        """The HTTP client for the running event loop (the one passed in, if any)."""
        if self._external_client is not None:
            return self._external_client
        import httpx

        loop = asyncio.get_running_loop()
        owner_loop = self._client_loop() if self._client_loop is not None else None
        if self._client is None or self._client.is_closed or owner_loop is not loop:
            self._client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
            self._client_loop = weakref.ref(loop)
        return self._client

    async def aclose(self) -> None:
        """Close the owned client of this event loop (a ``client`` passed in is left open)."""
        client, owner, self._client, self._client_loop = self._client, self._client_loop, None, None
        if client is None:
            return
        if owner is None or owner() is not asyncio.get_running_loop():
            return  # made in another (finished) event loop: its connections went with that loop
        await client.aclose()

    def _backoff(self, attempt: int) -> float:
        delay = min(self._backoff_max, self._backoff_base * (2.0**attempt))
        return delay * (0.5 + 0.5 * random.random())

    def _rejected(self, path: str, response: httpx.Response, hints: Mapping[int, str]) -> MemvaultError:
        status = response.status_code
        head = f"{self.where(path)} rejected the request ({status}: {server_message(response)})"
        if status in hints:
            hint = hints[status]
        elif status in (401, 403):
            hint = "check the API key: set OPENAI_API_KEY or pass api_key=..."
        elif status == 404:
            hint = (
                f"check base_url (the API root; most servers want it to end in /v1) and that model "
                f"{self._model!r} exists on that server"
            )
        else:
            hint = f"check the {self.owner}'s configuration (base_url, model {self._model!r}, api_key)"
        return self._error(f"{head}; {hint}")


def _gave_up_hint(status: int) -> str:
    if status == 429:
        return "the rate limit is exhausted: send fewer requests or raise the limit with your provider"
    return "the server is failing: try again later or check its logs"


def snippet(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def server_message(response: httpx.Response) -> str:
    """The error message in an OpenAI-style body (``{"error": {"message": ...}}``) or the raw text."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return snippet(response.text) or response.reason_phrase or "no message"
    return error_text(body) or snippet(json.dumps(body))


def error_text(body: Any) -> str | None:
    """The message of an error object (``{"error": {"message": ...}}``, ``{"detail": ...}``), if any."""
    if not isinstance(body, dict):
        return None
    error = body.get("error", body.get("detail", body.get("message")))
    if isinstance(error, dict):
        error = error.get("message", error)
    if error is None:
        return None
    return snippet(error if isinstance(error, str) else json.dumps(error))


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The server's requested wait: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date."""
    millis = response.headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    header = response.headers.get("retry-after")
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return value if math.isfinite(value) and value >= 0 else None
