"""Export a sentence-transformers model to ONNX: run as ``python -m memvault.embeddings.onnx_export
--model NAME --out FOLDER`` by :func:`memvault.embeddings.onnx_runtime.ensure_exported`, in a
child process, so that the process that embeds never loads PyTorch.

The model loads the way :class:`~memvault.embeddings.sentence_transformers.SentenceTransformersEmbedder`
loads it (the bundled all-MiniLM-L6-v2 offline, any other name through sentence-transformers).
Only models made of a ``Transformer``, a ``Pooling`` by mean or by the first token, and an
optional ``Normalize`` are exported; anything else exits with status 2 and says why. The
transformer is traced with ``torch.onnx.export`` (opset 17, batch and sequence axes dynamic),
the tokenizer saved as ``tokenizer.json``, and the export is loaded back with ONNX Runtime and
compared with the model's ``encode`` on probe texts (short, long past the token limit, CJK,
emoji, a batch of mixed lengths): a difference above ``EXPORT_TOLERANCE`` exits with status 3
and keeps nothing. The folder is written beside its destination and renamed into place.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from memvault.embeddings.onnx_runtime import (
    EXPORT_TOLERANCE,
    INPUTS,
    MODEL_FILE,
    SPEC_FILE,
    TOKENIZER_FILE,
    ExportSpec,
    OnnxModel,
)

PROBES = (
    "What activities does Melanie partake in?",
    "ok",
    "我昨天去了北京的博物馆。看到了很多古代的文物。",
    "Yes!! 🎉🎉 see you at 7pm, can't wait 😀",
    " ".join(["a long message that goes past the model's token limit"] * 60),
)
"""Texts the export must embed as ``encode`` does, one by one and as one batch."""


class ExportRefused(Exception):
    """The model cannot be exported faithfully (its layout, or a check that failed)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _layout(model: Any) -> tuple[str, bool]:
    """``(pooling, normalize)`` of a sentence-transformers model, or :class:`ExportRefused`."""
    names = [type(module).__name__ for module in model]
    if len(names) not in (2, 3) or names[0] != "Transformer" or names[1] != "Pooling":
        raise ExportRefused(f"modules {names}: only Transformer, Pooling[, Normalize] export", 2)
    if len(names) == 3 and names[2] != "Normalize":
        raise ExportRefused(f"modules {names}: only Transformer, Pooling[, Normalize] export", 2)
    config = model[1].get_config_dict()
    mode = config.get("pooling_mode")
    if mode is None:  # older sentence-transformers: one flag per mode
        modes = [key for key, value in config.items() if key.startswith("pooling_mode_") and value is True]
        flags = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
        mode = flags.get(modes[0]) if len(modes) == 1 else None
    if mode not in ("mean", "cls"):
        raise ExportRefused(f"pooling {config!r}: only mean and cls pooling export", 2)
    return str(mode), len(names) == 3


def _inputs(tokenizer: Any) -> tuple[str, ...]:
    sample = tokenizer(["probe"], return_tensors="pt")
    return tuple(name for name in INPUTS if name in sample)


def export(model_name: str, out: Path, cache_folder: str | None = None) -> ExportSpec:
    """Export ``model_name`` into ``out`` (which must not exist yet) and check it; returns its spec."""
    import numpy
    import torch

    from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder

    embedder = SentenceTransformersEmbedder(
        model_name, runtime="torch", device="cpu", cache_folder=cache_folder
    )
    model = embedder.loaded_model()
    pooling, normalize = _layout(model)
    transformer = model[0].auto_model.eval()
    tokenizer = model.tokenizer
    names = _inputs(tokenizer)

    class _Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *tensors: Any) -> Any:
            return self.inner(**dict(zip(names, tensors, strict=True))).last_hidden_state

    sample = tokenizer(list(PROBES[:2]), padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    axes["last_hidden_state"] = {0: "batch", 1: "tokens"}
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with torch.no_grad():
            torch.onnx.export(
                _Hidden().eval(),
                tuple(sample[name] for name in names),
                str(work / MODEL_FILE),
                input_names=list(names),
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        tokenizer.backend_tokenizer.save(str(work / TOKENIZER_FILE))
        dimensions = int(model.get_sentence_embedding_dimension())
        spec = ExportSpec(pooling, normalize, int(model.max_seq_length), dimensions, names, embedder.model)
        (work / SPEC_FILE).write_text(json.dumps(spec.to_json(), indent=2), encoding="utf-8")
        _check(model, OnnxModel(work), numpy)
        try:
            work.rename(out)
        except OSError:
            if not (out / SPEC_FILE).is_file():  # not another process's finished export
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return spec


def _unit(numpy: Any, rows: Any) -> Any:
    rows = numpy.asarray(rows, dtype=numpy.float32)
    return rows / numpy.clip(numpy.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)


def _check(model: Any, exported: OnnxModel, numpy: Any) -> None:
    texts = list(PROBES)
    expected = _unit(numpy, model.encode(texts, convert_to_numpy=True, show_progress_bar=False))
    batched = _unit(numpy, exported.encode(texts, batch_size=len(texts)))
    single = _unit(numpy, numpy.vstack([exported.encode([text]) for text in texts]))
    worst = float(max(numpy.abs(batched - expected).max(), numpy.abs(single - expected).max()))
    if not worst <= EXPORT_TOLERANCE:
        raise ExportRefused(f"the export differs from encode by {worst:.2e} (> {EXPORT_TOLERANCE})", 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cache-folder")
    arguments = parser.parse_args(argv)
    try:
        spec = export(arguments.model, arguments.out, arguments.cache_folder)
    except ExportRefused as refused:
        print(f"memvault onnx export: {refused}", file=sys.stderr)
        return refused.status
    print(f"memvault onnx export: {spec.source} -> {arguments.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a child process
    sys.exit(main())
