"""Plain functions as embedders, and the checks every embedder's output goes through."""

from __future__ import annotations

import threading

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed: pip install 'memvault[embeddings]'")

from memvault.embeddings import Embedder, EmbeddingError, FunctionEmbedder  # noqa: E402
from memvault.errors import ConfigurationError, ValidationError  # noqa: E402


def lengths(texts: list[str]) -> list[list[float]]:
    """A toy embedding: (length, number of spaces, 1)."""
    return [[float(len(t)), float(t.count(" ")), 1.0] for t in texts]


def unit(vector: list[float]) -> np.ndarray:
    array = np.array(vector, dtype=np.float64)
    return (array / np.linalg.norm(array)).astype(np.float32)


async def test_a_sync_function_is_wrapped_and_its_vectors_normalised() -> None:
    embedder = FunctionEmbedder(lengths)
    assert isinstance(embedder, Embedder)
    vectors = await embedder.embed(["a b", "hello", "x"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 3)
    np.testing.assert_allclose(
        vectors, np.stack([unit(v) for v in lengths(["a b", "hello", "x"])]), rtol=1e-6
    )
    assert embedder.dimensions == 3
    assert embedder.model == f"function/{__name__}.lengths"


async def test_an_async_function_returning_an_array() -> None:
    async def embed(texts: list[str]) -> np.ndarray:
        return np.array(lengths(texts), dtype=np.float64) * 10

    embedder = FunctionEmbedder(embed, model="toy/lengths")
    vectors = await embedder.embed(["a", "bb"])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert embedder.model == "toy/lengths"


async def test_a_sync_function_runs_in_a_worker_thread_unless_told_otherwise() -> None:
    seen: list[int] = []

    def embed(texts: list[str]) -> list[list[float]]:
        seen.append(threading.get_ident())
        return lengths(texts)

    await FunctionEmbedder(embed).embed(["x"])
    await FunctionEmbedder(embed, run_in_thread=False).embed(["x"])
    assert seen[0] != threading.get_ident()
    assert seen[1] == threading.get_ident()


async def test_empty_input_calls_nothing() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return lengths(texts)

    embedder = FunctionEmbedder(embed, dimensions=3)
    assert (await embedder.embed([])).shape == (0, 3)
    assert calls == []


async def test_a_failing_function_becomes_an_embedding_error_with_its_cause() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model server down")

    with pytest.raises(EmbeddingError, match=r"failed on 2 texts: RuntimeError: model server down") as caught:
        await FunctionEmbedder(broken).embed(["a", "b"])
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("result", "pattern"),
    [
        ([[1.0, 2.0]], r"shape \(1, 2\) for 2 texts"),
        ([[1.0, 2.0], [1.0]], r"not a list of equal-length numeric vectors"),
        ([[1.0, float("nan")], [1.0, 2.0]], r"NaN or infinity"),
        ([["a", "b"], [1.0, 2.0]], r"not a list of equal-length numeric vectors"),
        ([[], []], r"0 dimensions"),
    ],
)
async def test_bad_results_are_embedding_errors(result: object, pattern: str) -> None:
    with pytest.raises(EmbeddingError, match=pattern):
        await FunctionEmbedder(lambda texts: result).embed(["a", "b"])


async def test_a_zero_vector_stays_zero() -> None:
    vectors = await FunctionEmbedder(lambda texts: [[0.0, 0.0], [3.0, 4.0]]).embed(["", "x"])
    np.testing.assert_array_equal(vectors, np.array([[0.0, 0.0], [0.6, 0.8]], dtype=np.float32))


async def test_a_change_of_width_is_an_error() -> None:
    widths = iter([2, 3])
    embedder = FunctionEmbedder(lambda texts: [[1.0] * next(widths) for _ in texts])
    await embedder.embed(["a"])
    with pytest.raises(EmbeddingError, match=r"3-dimensional vectors, but earlier vectors had 2"):
        await embedder.embed(["b"])


async def test_declared_dimensions_are_checked() -> None:
    with pytest.raises(EmbeddingError, match=r"3-dimensional.*had 5"):
        await FunctionEmbedder(lengths, dimensions=5).embed(["a"])


@pytest.mark.parametrize("texts", ["a plain string", [b"bytes"], ["ok", 3]])
async def test_texts_must_be_a_sequence_of_strings(texts: object) -> None:
    with pytest.raises(ValidationError):
        await FunctionEmbedder(lengths).embed(texts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "options"),
    [((42,), {}), ((lengths,), {"dimensions": 0}), ((lengths,), {"model": ""})],
)
def test_bad_construction_is_a_configuration_error(
    args: tuple[object, ...], options: dict[str, object]
) -> None:
    with pytest.raises(ConfigurationError):
        FunctionEmbedder(*args, **options)  # type: ignore[arg-type]
