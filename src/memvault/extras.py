"""The optional packages and the extras that install them, in one table, and the one way to
import what needs them: a missing package becomes a
:class:`~memvault.errors.MissingExtraError` that says ``pip install 'memvault[EXTRA]'``."""

from __future__ import annotations

import importlib
from types import ModuleType

from memvault.errors import MissingExtraError

EXTRAS: dict[str, str] = {
    "numpy": "vectors",
    "usearch": "ann",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "httpx": "openai",
    "sentence_transformers": "local",
    "torch": "local",
    "fastembed": "fastembed",
    "tiktoken": "tokens",
    "bpe_openai": "tokens",
    "fastapi": "server",
    "uvicorn": "server",
    "mcp": "mcp",
    "agents": "agents",
    "sqlcipher3": "encryption",
    "pydantic_ai": "pydantic-ai",
    "llama_index": "llama-index",
}
"""Each optional package (its import name) and the extra that installs it."""

DISTRIBUTIONS: dict[str, str] = {
    "sqlcipher3": "sqlcipher3-binary",
    "pydantic_ai": "pydantic-ai-slim",
    "llama_index": "llama-index-core",
}
"""The name to ``pip install`` of an optional package whose name differs from its import name
(beyond ``_`` for ``-``)."""


def import_optional(
    module: str, feature: str, extra: str | None = None, *, needs: tuple[str, ...] = ()
) -> ModuleType:
    """Import the packages ``needs``, then ``module`` (one of memvault's, which needs optional
    packages). A missing package raises :class:`MissingExtraError` naming ``feature`` and
    ``extra`` (default: the package's extra in :data:`EXTRAS`); a missing module of memvault's
    own is a bug and raises as is."""
    try:
        for package in needs:
            importlib.import_module(package)
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if not missing or missing == "memvault" or (extra is None and missing not in EXTRAS):
            raise
        package = DISTRIBUTIONS.get(missing, missing.replace("_", "-"))
        raise MissingExtraError(feature, extra or EXTRAS[missing], package) from exc
