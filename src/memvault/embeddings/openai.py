"""Embeddings from an OpenAI-compatible HTTP API (OpenAI, Azure-style proxies, vLLM, Ollama, LM Studio, ...).

Speaks ``POST {base_url}/embeddings`` with ``{"model", "input": [...], "dimensions"?}`` over httpx
(extra ``openai``); the OpenAI SDK is not needed. Texts leave the machine only to the configured
``base_url``.
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memvault.embeddings.base import (
    EmbeddingError,
    as_unit_rows,
    check_texts,
    empty_matrix,
    learned_dimensions,
    positive_float,
    positive_int,
    require_numpy,
)
from memvault.errors import ConfigurationError, MissingExtraError

if TYPE_CHECKING:
    import httpx
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_BASE_URL", "OpenAIEmbedder"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FEATURE = "OpenAI-compatible embeddings"


def _require_httpx() -> None:
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(_FEATURE, "openai", "httpx") from exc
    require_numpy(_FEATURE)


class OpenAIEmbedder:
    """Vectors from an OpenAI-compatible ``/embeddings`` endpoint.

    Texts are sent in batches of ``batch_size`` (default 100), one request at a time; results come
    back in input order (the response's ``index`` field is honoured, whatever order the server
    lists them in). A 429, a 5xx or a connection error is retried up to ``max_retries`` times
    with exponential backoff and jitter (``backoff_base * 2**attempt`` seconds, at most
    ``backoff_max``, scaled by a random factor in [0.5, 1]); a ``Retry-After`` (or
    ``retry-after-ms``) header, when present, sets the wait instead, capped at ``max_retry_after``.
    Any other 4xx raises :class:`EmbeddingError` at once with the server's message and what to check.

    The embedder keeps one HTTP client (connection reuse) per event loop; close it with
    ``aclose()`` or ``async with`` in the loop that used it. Used from a new loop (a second
    ``asyncio.run``), it makes a new client and drops the old one, whose loop is gone.

    Options:
        model: the provider's model name (default ``"text-embedding-3-small"``); the embedder's
            ``model`` property is ``"openai/<model>"``.
        base_url: the API root, ending before ``/embeddings`` (default: env ``OPENAI_BASE_URL``, else
            ``https://api.openai.com/v1``). For a local server: ``"http://127.0.0.1:11434/v1"``.
        api_key: sent as ``Authorization: Bearer <key>`` (default: env ``OPENAI_API_KEY``). Required
            for api.openai.com; a custom ``base_url`` may run without one.
        dimensions: ask the model for vectors of this width (text-embedding-3-* support it);
            otherwise the width is learned from the first result.
        batch_size: texts per request (default 100).
        timeout: seconds per request (default 60).
        max_retries: retries after the first attempt (default 5; 0 disables retrying).
        headers: extra HTTP headers (an organisation id, a proxy token).
        client: an ``httpx.AsyncClient`` to use instead of one the embedder owns (the caller closes it).
        sleep: the coroutine used to wait between retries (default ``asyncio.sleep``; tests pass a recorder).

    Example::

        embedder = OpenAIEmbedder("text-embedding-3-small", dimensions=512)
        vectors = await embedder.embed(["green tea", "black coffee"])   # shape (2, 512)
        await embedder.aclose()
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 100,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        max_retry_after: float = 60.0,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        _require_httpx()
        owner = "OpenAIEmbedder"
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"{owner}: model must be a non-empty string, got {model!r}")
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
        self._model_name = model
        self._base_url = url
        self._endpoint = f"{url}/embeddings"
        self._requested_dimensions = (
            None if dimensions is None else positive_int(dimensions, "dimensions", owner)
        )
        self._dimensions = self._requested_dimensions
        self._batch_size = positive_int(batch_size, "batch_size", owner)
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

    @property
    def model(self) -> str:
        return f"openai/{self._model_name}"

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    @property
    def base_url(self) -> str:
        return self._base_url

    def __repr__(self) -> str:  # never shows the key
        return (
            f"OpenAIEmbedder(model={self._model_name!r}, base_url={self._base_url!r}, "
            f"dimensions={self._dimensions!r}, batch_size={self._batch_size})"
        )

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty_matrix(self._dimensions)
        client = self._http_client()
        parts: list[NDArray[np.float32]] = []
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            vectors = await self._request(client, batch)
            matrix = as_unit_rows(
                vectors,
                rows=len(batch),
                source=f"the embeddings server at {self._endpoint} (model {self._model_name!r})",
                dimensions=self._dimensions,
            )
            self._dimensions = learned_dimensions(self._dimensions, matrix)
            parts.append(matrix)
        if len(parts) == 1:
            return parts[0]
        numpy = require_numpy(_FEATURE)
        result: NDArray[np.float32] = numpy.concatenate(parts, axis=0)
        return result

    async def aclose(self) -> None:
        """Close the HTTP client this embedder owns (a ``client`` passed in is left open)."""
        client, owner, self._client, self._client_loop = self._client, self._client_loop, None, None
        if client is None:
            return
        if owner is None or owner() is not asyncio.get_running_loop():
            return  # made in another (finished) event loop: its connections went with that loop
        await client.aclose()

    async def __aenter__(self) -> OpenAIEmbedder:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- internals ---------------------------------------------------------------------------

    def _http_client(self) -> httpx.AsyncClient:
        """The client for the running event loop (a client cannot outlive the loop it was made in)."""
        if self._external_client is not None:
            return self._external_client
        import httpx

        loop = asyncio.get_running_loop()
        owner_loop = self._client_loop() if self._client_loop is not None else None
        if self._client is None or self._client.is_closed or owner_loop is not loop:
            # A client made in an earlier loop (an earlier asyncio.run) is dropped: its connections
            # belong to that loop and cannot be reused or closed from this one.
            self._client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
            self._client_loop = weakref.ref(loop)
        return self._client

    async def _request(self, client: httpx.AsyncClient, batch: list[str]) -> list[Any]:
        import httpx

        payload: dict[str, Any] = {"model": self._model_name, "input": batch}
        if self._requested_dimensions is not None:
            payload["dimensions"] = self._requested_dimensions
        attempt = 0
        while True:
            try:
                response = await client.post(self._endpoint, json=payload, headers=self._headers)
            except (httpx.TransportError, OSError) as exc:
                if attempt >= self._max_retries:
                    raise EmbeddingError(
                        f"could not reach the embeddings server at {self._endpoint} after "
                        f"{attempt + 1} attempts ({type(exc).__name__}: {exc}); check base_url and "
                        "that the server is running and reachable"
                    ) from exc
                delay = self._backoff(attempt)
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return self._parse(response, len(batch))
                if status != 429 and status < 500:
                    raise self._client_error(response)
                if attempt >= self._max_retries:
                    raise EmbeddingError(
                        f"the embeddings server at {self._endpoint} still answered {status} after "
                        f"{attempt + 1} attempts: {_server_message(response)}; "
                        + (
                            "the rate limit is exhausted: lower batch_size, embed less often, or "
                            "raise the limit with your provider"
                            if status == 429
                            else "the server is failing: try again later or check its logs"
                        )
                    )
                retry_after = _retry_after_seconds(response)
                delay = (
                    min(retry_after, self._max_retry_after)
                    if retry_after is not None
                    else self._backoff(attempt)
                )
            await self._sleep(delay)
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        delay = min(self._backoff_max, self._backoff_base * (2.0**attempt))
        return delay * (0.5 + 0.5 * random.random())

    def _parse(self, response: httpx.Response, expected: int) -> list[Any]:
        where = f"the embeddings server at {self._endpoint}"
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise EmbeddingError(
                f"{where} answered {response.status_code} with a body that is not JSON "
                f"({_snippet(response.text)!r}); check that base_url points at an OpenAI-compatible API"
            ) from exc
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            count = len(data) if isinstance(data, list) else "no"
            raise EmbeddingError(
                f"{where} returned {count} embeddings for {expected} texts; expected a JSON object "
                'with a "data" list holding one {"index", "embedding"} item per input'
            )
        if not all(isinstance(item, dict) and "embedding" in item for item in data):
            raise EmbeddingError(f'{where} returned "data" items without an "embedding" field')
        if all("index" in item for item in data):
            indexes = [item["index"] for item in data]
            if not all(type(i) is int for i in indexes) or sorted(indexes) != list(range(expected)):
                raise EmbeddingError(
                    f"{where} returned embedding indexes {indexes[:10]} that are not 0..{expected - 1}"
                )
            data = sorted(data, key=lambda item: int(item["index"]))
        return [item["embedding"] for item in data]

    def _client_error(self, response: httpx.Response) -> EmbeddingError:
        status = response.status_code
        message = _server_message(response)
        head = f"the embeddings server at {self._endpoint} rejected the request ({status}: {message})"
        if status in (401, 403):
            hint = "check the API key: set OPENAI_API_KEY or pass api_key=..."
        elif status == 404:
            hint = (
                f"check base_url (the API root; most servers want it to end in /v1) and that model "
                f"{self._model_name!r} exists on that server"
            )
        elif status == 413:
            hint = f"the request is too large: lower batch_size (now {self._batch_size})"
        elif status in (400, 422):
            hint = (
                f"check the model name {self._model_name!r}, the dimensions option (only some "
                "models accept it) and that no text exceeds the model's input limit"
            )
        else:
            hint = "check the embedder's configuration (base_url, model, api_key)"
        return EmbeddingError(f"{head}; {hint}")


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _server_message(response: httpx.Response) -> str:
    """The error message in an OpenAI-style body (``{"error": {"message": ...}}``) or the raw text."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _snippet(response.text) or response.reason_phrase or "no message"
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return _snippet(error if isinstance(error, str) else json.dumps(error))
    return _snippet(json.dumps(body))


def _retry_after_seconds(response: httpx.Response) -> float | None:
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
