"""Embedders: texts in, unit-length float32 vectors out, for recall by meaning.

- :class:`Embedder`: the protocol (``embed``, ``dimensions``, ``model``).
- :func:`resolve_embedder`: builds one from ``"provider/model"``, a dict, or a plain function.
- :class:`CachedEmbedder`: an LRU cache with a time limit around any embedder.
- Providers, each behind an extra and imported only when used:
  ``openai`` (:class:`~memvault.embeddings.openai.OpenAIEmbedder`, any OpenAI-compatible server),
  ``local`` (:class:`~memvault.embeddings.sentence_transformers.SentenceTransformersEmbedder`,
  all-MiniLM-L6-v2 offline), ``fastembed`` (:class:`~memvault.embeddings.fastembed.FastEmbedEmbedder`).

Example::

    from memvault.embeddings import CachedEmbedder, resolve_embedder

    embedder = CachedEmbedder(resolve_embedder("sentence-transformers/all-MiniLM-L6-v2"))
    vectors = await embedder.embed(["I love green tea", "the stock market fell"])  # (2, 384)
"""

from memvault.embeddings.base import Embedder, EmbeddingError, probe
from memvault.embeddings.cache import CachedEmbedder, CacheStats
from memvault.embeddings.function import EmbedFunction, FunctionEmbedder
from memvault.embeddings.resolve import PROVIDERS, EmbedderSpec, resolve_embedder

__all__ = [
    "PROVIDERS",
    "CacheStats",
    "CachedEmbedder",
    "EmbedFunction",
    "Embedder",
    "EmbedderSpec",
    "EmbeddingError",
    "FunctionEmbedder",
    "probe",
    "resolve_embedder",
]
