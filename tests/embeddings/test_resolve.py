"""resolve_embedder: every spec form, and the errors for bad ones."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed: pip install 'memvault[embeddings]'")

from memvault.embeddings import Embedder, FunctionEmbedder, resolve_embedder  # noqa: E402
from memvault.errors import ConfigurationError  # noqa: E402

from .fakes import install_fake_fastembed  # noqa: E402

has_httpx = importlib.util.find_spec("httpx") is not None
needs_httpx = pytest.mark.skipif(not has_httpx, reason="the 'openai' extra is not installed (httpx)")
needs_local = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="the 'local' extra is not installed (pip install 'memvault[local]')",
)


class Custom:
    """A hand-written embedder: any object with model, dimensions and embed."""

    model = "custom/ones"
    dimensions = 2

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), 2), 0.5**0.5, dtype=np.float32)


def test_an_embedder_is_returned_as_is() -> None:
    custom = Custom()
    assert isinstance(custom, Embedder)
    assert resolve_embedder(custom) is custom
    wrapped = FunctionEmbedder(lambda texts: [[1.0] for _ in texts])
    assert resolve_embedder(wrapped) is wrapped


def test_options_with_an_embedder_object_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"cannot apply to an embedder object"):
        resolve_embedder(Custom(), dimensions=3)


@needs_httpx
def test_openai_string_with_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.embeddings.openai import OpenAIEmbedder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    embedder = resolve_embedder("openai/text-embedding-3-small", dimensions=256, batch_size=10)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model == "openai/text-embedding-3-small"
    assert embedder.dimensions == 256
    assert embedder.base_url == "https://api.openai.com/v1"
    assert "batch_size=10" in repr(embedder)


@needs_httpx
def test_openai_without_a_key_for_api_openai_com_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        resolve_embedder("openai/text-embedding-3-small")


@needs_httpx
def test_a_dict_spec_and_keyword_options_override_it() -> None:
    spec = {"model": "openai/nomic-embed-text", "base_url": "http://127.0.0.1:11434/v1", "dimensions": 64}
    embedder = resolve_embedder(spec, dimensions=32)
    assert embedder.model == "openai/nomic-embed-text"
    assert embedder.dimensions == 32
    assert spec["dimensions"] == 64  # the caller's dict is not changed


@needs_local
def test_sentence_transformers_names_and_paths() -> None:
    from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder

    for spec in (
        "sentence-transformers/all-MiniLM-L6-v2",
        "sentence-transformers/sentence-transformers/all-MiniLM-L6-v2",
    ):
        embedder = resolve_embedder(spec)
        assert isinstance(embedder, SentenceTransformersEmbedder)
        assert embedder.model == "sentence-transformers/all-MiniLM-L6-v2"
    local = resolve_embedder("sentence-transformers//opt/models/e5-small", device="cpu", batch_size=8)
    assert local.model == "sentence-transformers//opt/models/e5-small"


def test_fastembed_string(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_fastembed(monkeypatch)  # a stand-in for the fastembed package (see fakes.py)
    embedder = resolve_embedder("fastembed/BAAI/bge-small-en-v1.5", threads=1)
    assert embedder.model == "fastembed/BAAI/bge-small-en-v1.5"


async def test_a_sync_function_with_options() -> None:
    embedder = resolve_embedder(lambda texts: [[3.0, 4.0] for _ in texts], model="toy/const", dimensions=2)
    assert isinstance(embedder, FunctionEmbedder)
    assert embedder.model == "toy/const" and embedder.dimensions == 2
    np.testing.assert_allclose(await embedder.embed(["a", "b"]), [[0.6, 0.8], [0.6, 0.8]], rtol=1e-6)


async def test_an_async_function_and_a_function_in_a_dict() -> None:
    async def embed(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4))

    embedder = resolve_embedder({"model": embed})
    vectors = await embedder.embed(["x"])
    np.testing.assert_allclose(vectors, [[0.5, 0.5, 0.5, 0.5]])
    assert embedder.model.startswith("function/") and embedder.model.endswith("embed")


def test_provider_names_are_case_insensitive(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_fastembed(monkeypatch)  # stand-in
    assert resolve_embedder("FastEmbed/BAAI/bge-small-en-v1.5").model == "fastembed/BAAI/bge-small-en-v1.5"


def test_an_unknown_provider_names_the_supported_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_embedder("cohere/embed-english-v3.0")
    message = str(caught.value)
    assert "'cohere'" in message
    for provider in ("openai/", "sentence-transformers/", "fastembed/"):
        assert provider in message


@pytest.mark.parametrize("spec", ["openai", "openai/", "sentence-transformers/  ", ""])
def test_a_string_without_a_model_is_refused(spec: str) -> None:
    with pytest.raises(ConfigurationError, match=r"provider"):
        resolve_embedder(spec)


def test_an_unknown_option_lists_the_accepted_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown option 'temperature'.*accepts: model, dimensions"):
        resolve_embedder(lambda texts: [[1.0] for _ in texts], temperature=0.2)


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        (42, r"cannot make an embedder from 42"),
        (None, r"cannot make an embedder from None"),
        ({"dimensions": 3}, r"needs a 'model' key"),
        ({"model": 3}, r"'model' must be a 'provider/model' string or a function"),
        ({"model": {"model": "openai/x"}}, r"'model' must be"),
        (FunctionEmbedder, r"got the class FunctionEmbedder; pass an instance"),
    ],
)
def test_bad_specs_are_configuration_errors(spec: object, pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        resolve_embedder(spec)  # type: ignore[arg-type]
