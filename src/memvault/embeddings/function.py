"""Wrap a plain function (sync or async) as an :class:`~memvault.embeddings.base.Embedder`."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memvault.embeddings.base import (
    EmbeddingError,
    RowsEmbedder,
    positive_int,
    require_numpy,
)
from memvault.errors import ConfigurationError, MemvaultError

if TYPE_CHECKING:
    pass

__all__ = ["EmbedFunction", "FunctionEmbedder"]

EmbedFunction = Callable[[list[str]], Any]
"""``f(texts) -> vectors``: a list of strings in, one vector per string out (a list of float lists
or a 2-D array), or an awaitable of that."""


def _function_name(function: Callable[..., Any]) -> str:
    target = getattr(function, "func", function)  # functools.partial
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"function/{module}.{name}"


def _is_async(function: Callable[..., Any]) -> bool:
    target = getattr(function, "func", function)
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


class FunctionEmbedder(RowsEmbedder):
    """An embedder around ``function(texts) -> vectors``.

    The function gets a ``list[str]`` and returns one vector per text, in order, as a list of
    float lists or a 2-D array; an ``async def`` function (or one returning an awaitable) is
    awaited. Its vectors are checked (one per text, equal widths, finite) and L2-normalised, so the
    function need not normalise. An exception from the function becomes an
    :class:`EmbeddingError` (with the original as its cause).

    Options:
        model: the stable name stored with the vectors; defaults to
            ``"function/<module>.<qualified name>"``. Pass your own when the function wraps a known
            model (``model="my-service/e5-large"``) so that swapping functions is detected.
        dimensions: the expected width, if known; otherwise learned from the first result.
        run_in_thread: run a synchronous function in a worker thread (default ``True``) so a slow
            local model does not block the event loop; pass ``False`` for trivial functions.

    Example::

        embedder = FunctionEmbedder(lambda texts: model.encode(texts), model="local/e5-small")
    """

    def __init__(
        self,
        function: EmbedFunction,
        *,
        model: str | None = None,
        dimensions: int | None = None,
        run_in_thread: bool = True,
    ) -> None:
        if not callable(function):
            raise ConfigurationError(
                f"FunctionEmbedder needs a callable mapping a list of strings to vectors, got {function!r}"
            )
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ConfigurationError(f"FunctionEmbedder: model must be a non-empty string, got {model!r}")
        require_numpy("function embedders")
        self._function = function
        self._model = model or _function_name(function)
        self._dimensions = (
            None if dimensions is None else positive_int(dimensions, "dimensions", "FunctionEmbedder")
        )
        self._source = f"embedding function {self._model!r}"
        self._is_async = _is_async(function)
        self._run_in_thread = run_in_thread

    @property
    def model(self) -> str:
        return self._model

    def __repr__(self) -> str:
        return f"FunctionEmbedder(model={self._model!r}, dimensions={self._dimensions!r})"

    async def _rows(self, items: list[str]) -> Any:
        try:
            if self._is_async or not self._run_in_thread:
                result = self._function(items)
            else:
                result = await asyncio.to_thread(self._function, items)
            if inspect.isawaitable(result):
                result = await result
        except MemvaultError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"the embedding function {self._model!r} failed on {len(items)} texts: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return result
