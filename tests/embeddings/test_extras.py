"""Providers behind extras: a missing package is reported with the extra that installs it.

The missing packages are simulated (``hide_package`` sets ``sys.modules[name] = None`` for one
test, which is how Python marks an unimportable module); fastembed is replaced by a labelled
stand-in (``FakeTextEmbedding``) because it cannot download a model here.
"""

from __future__ import annotations

import importlib.util

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed: pip install 'memvault[embeddings]'")

from memvault.embeddings import EmbeddingError, resolve_embedder  # noqa: E402
from memvault.embeddings.base import require_numpy  # noqa: E402
from memvault.embeddings.fastembed import FastEmbedEmbedder  # noqa: E402
from memvault.errors import MissingExtraError  # noqa: E402

from .fakes import FakeTextEmbedding, hide_package, install_fake_fastembed  # noqa: E402


@pytest.mark.parametrize(
    ("spec", "hidden", "extra"),
    [
        ("openai/text-embedding-3-small", "httpx", "openai"),
        # an ONNX export in the cache needs no sentence-transformers: hide ONNX Runtime too
        ("sentence-transformers/all-MiniLM-L6-v2", "sentence_transformers onnxruntime", "local"),
        ("fastembed/BAAI/bge-small-en-v1.5", "fastembed", "fastembed"),
    ],
)
def test_a_missing_package_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, spec: str, hidden: str, extra: str
) -> None:
    for name in hidden.split():
        hide_package(monkeypatch, name)  # simulated: the package is treated as not installed
    with pytest.raises(MissingExtraError) as caught:
        resolve_embedder(spec, api_key="k") if extra == "openai" else resolve_embedder(spec)
    assert caught.value.extra == extra
    assert f"pip install 'memvault[{extra}]'" in str(caught.value)
    assert isinstance(caught.value, ImportError)


def test_missing_numpy_names_the_embeddings_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_package(monkeypatch, "numpy")  # simulated
    with pytest.raises(MissingExtraError, match=r"memvault\[embeddings\]"):
        require_numpy()


def test_the_bundled_model_is_loaded_lazily_so_construction_is_cheap(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("the 'local' extra is not installed (pip install 'memvault[local]')")
    from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder

    embedder = resolve_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert isinstance(embedder, SentenceTransformersEmbedder)
    assert embedder.dimensions is None and embedder.loaded_from is None


def test_fastembed_is_really_missing_here_or_constructs() -> None:
    """Not simulated: whatever this environment really has."""
    if importlib.util.find_spec("fastembed") is None:
        with pytest.raises(MissingExtraError, match=r"memvault\[fastembed\]"):
            FastEmbedEmbedder()
    else:
        assert FastEmbedEmbedder().model == "fastembed/BAAI/bge-small-en-v1.5"


async def test_fastembed_load_failure_is_an_actionable_embedding_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stand-in TextEmbedding raising what fastembed raises when it cannot download the model.
    install_fake_fastembed(monkeypatch, fail=ValueError("Could not download model BAAI/bge-small-en-v1.5"))
    embedder = resolve_embedder("fastembed/BAAI/bge-small-en-v1.5")
    assert embedder.model == "fastembed/BAAI/bge-small-en-v1.5"
    with pytest.raises(EmbeddingError) as caught:
        await embedder.embed(["x"])
    message = str(caught.value)
    assert "Could not download model" in message
    assert "cache_dir" in message and "memvault[local]" in message


async def test_fastembed_options_reach_text_embedding_and_rows_are_normalised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install_fake_fastembed(monkeypatch)  # a stand-in TextEmbedding, see fakes.py
    embedder = FastEmbedEmbedder("BAAI/bge-small-en-v1.5", cache_dir="/models", threads=2)
    vectors = await embedder.embed(["ab", "c"])
    assert FakeTextEmbedding.created == [
        {"model_name": "BAAI/bge-small-en-v1.5", "cache_dir": "/models", "threads": 2}
    ]
    assert vectors.dtype == np.float32 and vectors.shape == (2, 3)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert embedder.dimensions == 3
    await embedder.embed(["again"])
    assert len(FakeTextEmbedding.created) == 1  # loaded once
