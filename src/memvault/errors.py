"""Typed errors. Each message says what was wrong and what to do about it.

Every error memvault raises on purpose derives from :class:`MemvaultError`, so callers can catch
one class. Input errors are raised before anything is written.
"""

from __future__ import annotations


class MemvaultError(Exception):
    """Base class of every error memvault raises on purpose."""


class ValidationError(MemvaultError, ValueError):
    """Input that memvault refuses: wrong types, unknown roles or part types, bad text or JSON.

    Nothing was written when this is raised.
    """


class MessageTooLargeError(ValidationError):
    """A message's serialized size exceeds the configured limit (``max_message_bytes``)."""


class NotFoundError(MemvaultError, LookupError):
    """Something named by the caller does not exist for the caller's resource."""


class ThreadNotFoundError(NotFoundError):
    """No such thread for this resource.

    A thread that belongs to another resource is reported exactly like a missing one.
    """

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"thread {thread_id!r} was not found for this resource; "
            "check the thread id and the resource id, or create the thread first"
        )
        self.thread_id = thread_id


class ThreadExistsError(MemvaultError):
    """``create_thread`` was asked for an id this resource already uses (pass ``exist_ok=True``)."""

    def __init__(self, thread_id: str, message: str | None = None) -> None:
        super().__init__(
            message or f"thread {thread_id!r} already exists for this resource; "
            "pass exist_ok=True to get the existing thread instead"
        )
        self.thread_id = thread_id


class SchemaVersionError(MemvaultError):
    """The database was written by a newer memvault than this one; upgrade memvault to open it."""


class ConfigurationError(MemvaultError, ValueError):
    """A URL, option or setting that memvault cannot use."""


class StoreError(MemvaultError):
    """The storage backend failed in a way memvault could not recover from by retrying."""


class StoreClosedError(StoreError):
    """A call reached a store (or a :class:`~memvault.Memory`) after it was closed.

    Raised at once, before anything is read or written; closing again stays harmless. Open a new
    store (``Memory.open`` / ``open_store``) to go on.
    """

    def __init__(self, message: str = "this store is closed: open it again (Memory.open or "
                 "open_store) to go on") -> None:
        super().__init__(message)


class StoreOpenError(StoreError):
    """A store could not be opened: the file or folder is missing, unwritable, not a database or
    damaged, or the server cannot be reached or refuses. The message names the path (or the
    server and database, never a password) and the cause; ``location`` holds that name.

    Nothing was written when this is raised.
    """

    def __init__(self, message: str, *, location: str = "") -> None:
        super().__init__(message)
        self.location = location


class ReadOnlyStoreError(StoreError):
    """A write reached a store opened read-only (``sqlite:///file.db?mode=ro``); nothing was
    written. Open the file without ``mode=ro`` to write."""


class EncryptionKeyError(StoreOpenError):
    """An encrypted SQLite file cannot be opened with the key given: no key was given, the key
    is wrong, or a key was given for a file that is not encrypted.

    Raised when the store opens, before anything is written to the file. SQLCipher cannot tell a
    wrong key from a file that is no SQLite database at all, so a damaged file opened with a key
    raises this too.
    """


class MissingExtraError(MemvaultError, ImportError):
    """An optional feature needs a package that is not installed; the message names the extra."""

    def __init__(self, feature: str, extra: str, package: str) -> None:
        super().__init__(
            f"{feature} needs the package {package!r}: pip install 'memvault[{extra}]'"
        )
        self.extra = extra


class ModelError(MemvaultError):
    """A language model could not answer (unreachable server, rejected request, bad reply);
    the message says which and what to check."""


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters, and safe for any value
    (an integer beyond Python's int-to-str limit, or a ``__repr__`` that raises, is named by its
    type instead of failing the message)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
