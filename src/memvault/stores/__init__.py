"""Stores, and :func:`open_store` which picks one from a URL.

- ``memory://``: the in-memory reference store (nothing survives the process);
- ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's convention),
  with options as query parameters: ``?durability=full&busy_timeout=30``;
- ``postgresql://user@host:5432/dbname`` (or ``postgres://``), with ``?schema=name`` and pool
  options (:mod:`memvault.stores.postgres`; needs ``pip install 'memvault[postgres]'``);
- no URL: ``$MEMVAULT_DB`` when set, else ``memvault.db`` in the user's data folder
  (:func:`default_url`), never a path relative to the working directory.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import platformdirs

from memvault.errors import ConfigurationError
from memvault.extras import import_optional
from memvault.stores.base import Store
from memvault.stores.memory import InMemoryStore

__all__ = ["InMemoryStore", "Store", "default_url", "open_store"]


def default_url() -> str:
    """``$MEMVAULT_DB`` if set, else the SQLite file in the user's data folder."""
    configured = os.environ.get("MEMVAULT_DB")
    if configured:
        return configured
    path = platformdirs.user_data_path("memvault", appauthor=False) / "memvault.db"
    return f"sqlite:///{quote(str(path))}"


async def open_store(url: str | None = None) -> Store:
    """Open the store a URL names (see the module docstring); ``None`` means :func:`default_url`."""
    url = url or default_url()
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return InMemoryStore()
    if scheme == "sqlite":
        from memvault.stores.sqlite import SqliteStore

        path, durability, timeout = sqlite_options(url)
        return await SqliteStore.open(path, durability=durability, busy_timeout=timeout)
    if scheme in ("postgres", "postgresql"):
        postgres = import_optional("memvault.stores.postgres", "the PostgreSQL store", "postgres",
                                   needs=("psycopg", "psycopg_pool"))
        store: Store = await postgres.PostgresStore.open(url)
        return store
    raise ConfigurationError(
        f"unknown store URL {url!r}: use memory://, sqlite:///path/to/file.db or postgresql://..."
    )


def sqlite_options(url: str) -> tuple[Path, Literal["normal", "full"], float]:
    """The file, durability and busy timeout a ``sqlite:`` URL names."""
    parts = urlsplit(url)
    raw = unquote(parts.path)
    if not raw.startswith("/") or raw == "/":
        raise ConfigurationError(
            f"{url!r} names no file: write sqlite:///relative.db or sqlite:////absolute.db"
        )
    options = dict(parse_qsl(parts.query))
    unknown = set(options) - {"durability", "busy_timeout"}
    if unknown:
        raise ConfigurationError(f"unknown SQLite option(s) {sorted(unknown)} in {url!r}")
    try:
        timeout = float(options.get("busy_timeout", 60))
    except ValueError:
        timeout = math.nan
    if not 0 <= timeout < math.inf:
        raise ConfigurationError(f"busy_timeout must be a number of seconds >= 0 in {url!r}")
    path = Path(raw[1:]).expanduser()
    durability = options.get("durability", "normal")
    if durability == "normal":
        return path, "normal", timeout
    if durability == "full":
        return path, "full", timeout
    raise ConfigurationError(f"durability must be 'normal' or 'full' in {url!r}")
