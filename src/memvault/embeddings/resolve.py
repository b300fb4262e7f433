"""``resolve_embedder``: one normaliser for every way of naming an embedder."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from memvault.embeddings.base import Embedder
from memvault.errors import ConfigurationError

__all__ = ["PROVIDERS", "EmbedderSpec", "resolve_embedder"]

EmbedderSpec: TypeAlias = Embedder | str | Mapping[str, Any] | Callable[[list[str]], Any]
"""What :func:`resolve_embedder` accepts: an embedder, ``"provider/model"``, a dict, or a function."""

PROVIDERS: dict[str, str] = {
    "openai": "openai/text-embedding-3-small (any OpenAI-compatible server; extra 'openai')",
    "sentence-transformers": "sentence-transformers/all-MiniLM-L6-v2 or sentence-transformers/<folder> "
    "(local; extra 'local')",
    "fastembed": "fastembed/BAAI/bge-small-en-v1.5 (local ONNX; extra 'fastembed')",
}
"""The providers a ``"provider/model"`` string can name, each with an example."""


def _supported() -> str:
    return "; ".join(PROVIDERS.values())


def _provider_class(provider: str) -> type[Any]:
    # Imported here: each provider module is cheap, but only the one named is needed.
    if provider == "openai":
        from memvault.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder
    if provider == "sentence-transformers":
        from memvault.embeddings.sentence_transformers import SentenceTransformersEmbedder

        return SentenceTransformersEmbedder
    from memvault.embeddings.fastembed import FastEmbedEmbedder

    return FastEmbedEmbedder


def _build(
    cls: Callable[..., Any], model: str | Callable[..., Any], options: Mapping[str, Any], what: str
) -> Any:
    accepted = [
        name
        for name, parameter in inspect.signature(cls).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for {what}; "
            f"it accepts: {', '.join(accepted)}"
        )
    return cls(model, **options)


def resolve_embedder(spec: EmbedderSpec, **options: Any) -> Embedder:
    """Turn any supported way of naming an embedder into an :class:`Embedder`.

    Accepted forms:

    - an embedder (any object with ``embed``, ``model`` and ``dimensions``): returned as is; options
      are refused, since they would be silently ignored.
    - ``"provider/model"``: ``"openai/text-embedding-3-small"`` (options ``base_url``, ``api_key``
      (default env ``OPENAI_API_KEY``), ``dimensions``, ``batch_size``, ``timeout``,
      ``max_retries``, ...), ``"sentence-transformers/all-MiniLM-L6-v2"`` or
      ``"sentence-transformers/<local folder>"`` (options ``device``, ``batch_size``,
      ``cache_folder``), ``"fastembed/BAAI/bge-small-en-v1.5"`` (options ``cache_dir``, ``threads``,
      ``batch_size``). Everything after the first ``/`` is the provider's model name or path.
    - a dict ``{"model": <a string or function spec>, **options}``; keyword ``options`` override the
      dict's.
    - a function, sync or async, mapping a ``list[str]`` to one vector per text (lists or a
      2-D array): wrapped in :class:`~memvault.embeddings.function.FunctionEmbedder` (options
      ``model``, ``dimensions``, ``run_in_thread``); its vectors are normalised.

    Raises :class:`memvault.errors.ConfigurationError` for an unknown provider (naming the
    supported ones), a malformed spec or an unknown option, and
    :class:`memvault.errors.MissingExtraError` (naming the extra to install) when the provider's
    package is missing.

    Example::

        resolve_embedder("openai/text-embedding-3-small", dimensions=512)
        resolve_embedder({"model": "openai/nomic-embed-text", "base_url": "http://127.0.0.1:11434/v1"})
        resolve_embedder("sentence-transformers/all-MiniLM-L6-v2")      # offline, 384 dimensions
        resolve_embedder(lambda texts: [[len(t), 1.0] for t in texts], model="toy/length")
    """
    if isinstance(spec, Embedder) and not isinstance(spec, type):
        if options:
            raise ConfigurationError(
                f"options {sorted(options)} cannot apply to an embedder object ({spec!r}); configure "
                "it when you create it, or pass a 'provider/model' string with the options"
            )
        return spec
    if isinstance(spec, str):
        return _from_string(spec, options)
    if isinstance(spec, Mapping):
        merged = {**spec, **options}
        if "model" not in merged:
            raise ConfigurationError(
                "an embedder dict needs a 'model' key, e.g. {'model': 'openai/text-embedding-3-small', "
                f"'dimensions': 512}}; got keys {sorted(map(str, spec))}"
            )
        model = merged.pop("model")
        if not isinstance(model, str) and (isinstance(model, Mapping | type) or not callable(model)):
            raise ConfigurationError(
                f"an embedder dict's 'model' must be a 'provider/model' string or a function, got {model!r}"
            )
        return resolve_embedder(model, **merged)
    if isinstance(spec, type):
        raise ConfigurationError(
            f"resolve_embedder got the class {spec.__name__}; pass an instance, e.g. {spec.__name__}(...)"
        )
    if callable(spec):
        from memvault.embeddings.function import FunctionEmbedder

        embedder: Embedder = _build(FunctionEmbedder, spec, options, "a function embedder")
        return embedder
    raise ConfigurationError(
        f"cannot make an embedder from {spec!r} ({type(spec).__name__}); pass an embedder object, a "
        "'provider/model' string, a dict with a 'model' key, or a function mapping a list of strings "
        f"to vectors. Providers: {_supported()}"
    )


def _from_string(spec: str, options: Mapping[str, Any]) -> Embedder:
    text = spec.strip()
    provider, _, name = text.partition("/")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ConfigurationError(
            f"unknown embedding provider {provider!r} in {spec!r}; write 'provider/model' with a "
            f"supported provider: {_supported()}"
        )
    if not name.strip():
        raise ConfigurationError(
            f"the embedder spec {spec!r} names no model; write it as 'provider/model', e.g. "
            f"{PROVIDERS[provider].split(' ')[0]}"
        )
    embedder: Embedder = _build(_provider_class(provider), name.strip(), options, f"the {provider} embedder")
    return embedder
