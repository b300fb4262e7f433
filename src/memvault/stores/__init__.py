"""Stores, and :func:`open_store` which picks one from a URL.

- ``memory://``: the in-memory reference store (nothing survives the process);
- ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's convention),
  with options as query parameters: ``?durability=full&busy_timeout=30``, and
  ``?key_env=VARIABLE`` for a file encrypted at rest whose key (a passphrase) is in that
  environment variable (never in the URL itself, which ends up in logs, ``ps`` and shell history;
  needs ``pip install 'memvault[encryption]'``), ``?mode=ro`` to open an existing file
  read-only, and ``?search_map_mb=N`` for the MiB of the file searches read through a memory
  map (0 for none; :class:`~memvault.stores.sqlite.SqliteStore`); ``sqlite:///:memory:`` is an
  in-process SQLite database (gone with the store);
- ``postgresql://user@host:5432/dbname`` (or ``postgres://``), with ``?schema=name`` and pool
  options (:mod:`memvault.stores.postgres`; needs ``pip install 'memvault[postgres]'``);
- no URL: ``$MEMVAULT_DB`` when set, else ``memvault.db`` in the user's data folder
  (:func:`default_url`), never a path relative to the working directory.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
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
    if not isinstance(url, str):
        raise ConfigurationError(f"a store URL is a str, got {type(url).__name__}")
    try:
        scheme = urlsplit(url).scheme
    except ValueError as exc:  # not echoed: a PostgreSQL URL may hold a password
        raise ConfigurationError(f"the store URL cannot be parsed ({exc})") from None
    if scheme == "memory":
        return InMemoryStore()
    if scheme == "sqlite":
        from memvault.stores.sqlite import SqliteStore

        options = sqlite_options(url)
        return await SqliteStore.open(
            options.path, durability=options.durability, busy_timeout=options.busy_timeout,
            encryption_key=options.encryption_key, read_only=options.read_only,
            search_map_mb=options.search_map_mb,
        )
    if scheme in ("postgres", "postgresql"):
        postgres = import_optional("memvault.stores.postgres", "the PostgreSQL store", "postgres",
                                   needs=("psycopg", "psycopg_pool"))
        store: Store = await postgres.PostgresStore.open(url)
        return store
    raise ConfigurationError(
        f"unknown store URL {url!r}: use memory://, sqlite:///path/to/file.db or postgresql://..."
    )


@dataclass(frozen=True)
class SqliteOptions:
    """What a ``sqlite:`` URL names (:func:`sqlite_options`)."""

    path: Path
    durability: Literal["normal", "full"] = "normal"
    busy_timeout: float = 60.0
    encryption_key: str | None = field(default=None, repr=False)
    """The passphrase read from the variable ``key_env`` names; never shown in a repr."""
    key_env: str | None = None
    read_only: bool = False
    """``?mode=ro``: open an existing database without writing to it (see
    :class:`~memvault.stores.sqlite.SqliteStore`)."""
    search_map_mb: int | None = None
    """``?search_map_mb=N``: MiB of the file full-text searches read through a memory map
    (``None``: the store's default; see :class:`~memvault.stores.sqlite.SqliteStore`)."""


def sqlite_options(url: str) -> SqliteOptions:
    """The file, durability, busy timeout and encryption key a ``sqlite:`` URL names. The key is
    read from the environment variable ``?key_env=NAME`` names; a missing or empty variable is a
    :class:`ConfigurationError`."""
    parts = urlsplit(url)
    raw = unquote(parts.path)
    if not raw.startswith("/") or raw == "/":
        raise ConfigurationError(
            f"{url!r} names no file: write sqlite:///relative.db or sqlite:////absolute.db"
        )
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    options = {name: value for name, value in pairs if value}  # a blank option is as if unset
    if {"key", "passphrase", "password"} & set(options):  # not echoed: the URL holds a secret
        raise ConfigurationError(
            "a SQLite URL never holds its encryption key (it would end up in logs, `ps` and shell "
            "history): put the key in an environment variable and write ?key_env=VARIABLE"
        )
    unknown = set(options) - {"durability", "busy_timeout", "key_env", "mode", "search_map_mb"}
    if unknown:
        raise ConfigurationError(f"unknown SQLite option(s) {sorted(unknown)} in {url!r}")
    try:
        timeout = float(options.get("busy_timeout", 60))
    except ValueError:
        timeout = math.nan
    if not 0 <= timeout < math.inf:
        raise ConfigurationError(f"busy_timeout must be a number of seconds >= 0 in {url!r}")
    search_map_mb: int | None = None
    raw_map = dict(pairs).get("search_map_mb")  # blank included: an empty size is an error
    if raw_map is not None:
        if not (raw_map.isascii() and raw_map.isdigit() and len(raw_map) <= 12):  # int() refuses 4,300 digits
            raise ConfigurationError(f"search_map_mb must be a whole number of MiB >= 0 in {url!r}")
        search_map_mb = int(raw_map)
    mode = options.get("mode", "rwc")
    if mode not in ("ro", "rwc"):
        raise ConfigurationError(f"mode must be 'ro' (read-only) or 'rwc' (the default) in {url!r}")
    if "\x00" in raw:
        raise ConfigurationError(f"the file name in {url!r} holds a NUL character")
    path = Path(raw[1:]).expanduser()
    durability = options.get("durability", "normal")
    if durability not in ("normal", "full"):
        raise ConfigurationError(f"durability must be 'normal' or 'full' in {url!r}")
    key_env = dict(parse_qsl(parts.query, keep_blank_values=True)).get("key_env")
    key = None
    if key_env is not None:
        if not key_env:
            raise ConfigurationError(f"key_env names no environment variable in {url!r}")
        key = os.environ.get(key_env)
        if not key:
            raise ConfigurationError(
                f"{url!r} reads its encryption key from the environment variable {key_env!r}, "
                "which is not set or empty: set it to the key (a passphrase)"
            )
    return SqliteOptions(path, "full" if durability == "full" else "normal", timeout, key, key_env,
                         read_only=mode == "ro", search_map_mb=search_map_mb)
