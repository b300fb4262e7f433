"""Encryption at rest: which SQLite library opens the file, and how the key reaches it.

Without a key the store runs on the standard library's :mod:`sqlite3`. With one it runs on
SQLCipher (the ``sqlcipher3`` module of the PyPI package ``sqlcipher3-binary``, installed by
``pip install 'memvault[encryption]'``): every page of the database file and of its write-ahead
log is encrypted (AES-256 with an HMAC per page), so the files hold no plaintext. The module
mirrors :mod:`sqlite3` (same calls, but its own exception classes), hence :class:`Driver`.

The key is given to SQLite as the first statement on every connection (``PRAGMA key``), never
by formatting the caller's string into SQL unescaped:

- a ``str`` key is a passphrase: SQLCipher derives the key from it (PBKDF2-HMAC-SHA512, 256,000
  iterations with a per-file random salt, SQLCipher 4's defaults), which costs tens of
  milliseconds per connection opened. It goes in as a quoted SQL literal (``'`` doubled); it
  must be non-empty and hold no NUL character. (SQLCipher reads a passphrase of the exact form
  ``x'<64 hex digits>'`` as a raw key.)
- a ``bytes`` key is a raw 256-bit key (exactly 32 bytes, e.g. from ``os.urandom(32)`` or a key
  management service): it goes in hex-encoded (``x'...'``) and no derivation runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.errors import ConfigurationError, EncryptionKeyError
from memvault.extras import import_optional

Key = str | bytes
RAW_KEY_BYTES = 32
_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every plaintext SQLite file


@dataclass(frozen=True)
class Driver:
    """A DB-API module mirroring :mod:`sqlite3`: its ``connect`` and the exception classes the
    store catches (SQLCipher's are not :mod:`sqlite3`'s)."""

    name: str
    connect: Callable[..., sqlite3.Connection]
    operational_error: type[Exception]
    database_error: type[Exception]


STDLIB = Driver("sqlite3", sqlite3.connect, sqlite3.OperationalError, sqlite3.DatabaseError)


def sqlcipher() -> Driver:
    """SQLCipher's driver; :class:`~memvault.errors.MissingExtraError` when the ``encryption``
    extra is not installed."""
    module: Any = import_optional("sqlcipher3.dbapi2", "encryption at rest (a SQLite key)", "encryption")
    return Driver("sqlcipher3", module.connect, module.OperationalError, module.DatabaseError)


def check_key(key: object) -> Key | None:
    """``key`` when the store can use it (see the module docstring), else
    :class:`~memvault.errors.ConfigurationError`; the message never shows the key."""
    if key is None:
        return None
    if isinstance(key, bytes | bytearray):
        if len(key) != RAW_KEY_BYTES:
            raise ConfigurationError(
                f"a bytes encryption key is a raw 256-bit key: exactly {RAW_KEY_BYTES} bytes, "
                f"got {len(key)} (give a str to use a passphrase)"
            )
        return bytes(key)
    if isinstance(key, str):
        if not key:
            raise ConfigurationError("the encryption key is empty: give a passphrase or a 32-byte key")
        if "\x00" in key:
            raise ConfigurationError("the encryption key holds a NUL character, which SQLite cannot take")
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigurationError("the encryption key is not valid Unicode text") from None
        return key
    raise ConfigurationError(f"the encryption key must be a str or bytes, got {type(key).__name__}")


def key_pragma(key: Key) -> str:
    """The ``PRAGMA key`` statement for a key that passed :func:`check_key`."""
    if isinstance(key, bytes):
        return f"PRAGMA key = \"x'{key.hex()}'\""
    return "PRAGMA key = '" + key.replace("'", "''") + "'"


def apply_key(conn: sqlite3.Connection, key: Key | None) -> None:
    """Key a fresh connection (the first statement on it); nothing without a key."""
    if key is not None:
        conn.execute(key_pragma(key))


def unreadable(path: Path, keyed: bool, exc: BaseException) -> EncryptionKeyError | None:
    """The error for a file SQLite called "not a database" right after it was opened (keyed
    when ``keyed``): an :class:`EncryptionKeyError` saying which case it is most likely, or
    ``None`` when the file is plaintext SQLite and was opened without a key (a damaged file,
    not a key problem)."""
    try:
        with path.open("rb") as file:
            plaintext = file.read(len(_HEADER)) == _HEADER
    except OSError:
        plaintext = False
    if plaintext and not keyed:
        return None
    if plaintext:
        return EncryptionKeyError(
            f"{path} is not encrypted, but a key was given: open it without a key, or write an "
            "encrypted copy with `memvault copy` (see docs/security.md)"
        )
    if keyed:
        return EncryptionKeyError(
            f"{path} cannot be opened with this key: the key is wrong, or the file is not a "
            f"memvault database ({exc})"
        )
    return EncryptionKeyError(
        f"{path} is encrypted, or is not a SQLite database: open it with its key "
        "(encryption_key=..., or ?key_env=VARIABLE in the URL)"
    )


@contextmanager
def quiet_log(conn: sqlite3.Connection, driver: Driver) -> Iterator[None]:
    """SQLCipher's own log silenced meanwhile (it prints a failed decryption to stderr, which the
    store reports as an :class:`EncryptionKeyError` instead). The level is process-wide in
    SQLCipher; it is restored afterwards. Nothing on the standard library's driver."""
    if driver is STDLIB:
        yield
        return
    row = conn.execute("PRAGMA cipher_log_level").fetchone()
    level = str(row[0]) if row else ""
    conn.execute("PRAGMA cipher_log_level = NONE")
    try:
        yield
    finally:
        if level.isalpha():  # one of NONE, ERROR, WARN, INFO, DEBUG, TRACE
            conn.execute(f"PRAGMA cipher_log_level = {level}")
