"""Embeddings from an OpenAI-compatible HTTP API (OpenAI, Azure-style proxies, vLLM, Ollama, LM Studio, ...).

Speaks ``POST {base_url}/embeddings`` with ``{"model", "input": [...], "dimensions"?}`` over httpx
(extra ``openai``); the OpenAI SDK is not needed. Texts leave the machine only to the configured
``base_url``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memvault.embeddings.base import (
    EmbeddingError,
    as_unit_rows,
    check_texts,
    empty_matrix,
    learned_dimensions,
    positive_int,
    require_numpy,
)
from memvault.errors import ConfigurationError
from memvault.llm.http import DEFAULT_BASE_URL, OpenAIHttp, require_httpx

if TYPE_CHECKING:
    import httpx
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_BASE_URL", "OpenAIEmbedder"]

_FEATURE = "OpenAI-compatible embeddings"
_PATH = "/embeddings"


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
        require_httpx(_FEATURE)
        require_numpy(_FEATURE)
        owner = "OpenAIEmbedder"
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"{owner}: model must be a non-empty string, got {model!r}")
        self._model_name = model
        self._http = OpenAIHttp(
            owner=owner,
            service="embeddings server",
            error=EmbeddingError,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_retry_after=max_retry_after,
            headers=headers,
            client=client,
            sleep=sleep,
        )
        self._requested_dimensions = (
            None if dimensions is None else positive_int(dimensions, "dimensions", owner)
        )
        self._dimensions = self._requested_dimensions
        self._batch_size = positive_int(batch_size, "batch_size", owner)
        self._hints = {
            429: "the rate limit is exhausted: lower batch_size, embed less often, or raise the limit "
            "with your provider",
            413: f"the request is too large: lower batch_size (now {self._batch_size})",
            400: (
                f"check the model name {model!r}, the dimensions option (only some models accept it) "
                "and that no text exceeds the model's input limit"
            ),
        }
        self._hints[422] = self._hints[400]

    @property
    def model(self) -> str:
        return f"openai/{self._model_name}"

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def __repr__(self) -> str:  # never shows the key
        return (
            f"OpenAIEmbedder(model={self._model_name!r}, base_url={self.base_url!r}, "
            f"dimensions={self._dimensions!r}, batch_size={self._batch_size})"
        )

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty_matrix(self._dimensions)
        parts: list[NDArray[np.float32]] = []
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            vectors = await self._request(batch)
            matrix = as_unit_rows(
                vectors,
                rows=len(batch),
                source=f"{self._http.where(_PATH)} (model {self._model_name!r})",
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
        await self._http.aclose()

    async def __aenter__(self) -> OpenAIEmbedder:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- internals ---------------------------------------------------------------------------

    async def _request(self, batch: list[str]) -> list[Any]:
        payload: dict[str, Any] = {"model": self._model_name, "input": batch}
        if self._requested_dimensions is not None:
            payload["dimensions"] = self._requested_dimensions
        response = await self._http.post(_PATH, payload, hints=self._hints)
        return self._parse(self._http.json(response, _PATH), len(batch))

    def _parse(self, body: Any, expected: int) -> list[Any]:
        where = self._http.where(_PATH)
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
