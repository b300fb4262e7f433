"""What went wrong with a SQLite file, said in a typed error that names the file and the cause.

SQLite's own messages are terse and sometimes misleading ("unable to open database file" for a
folder in place of the file, "attempt to write a readonly database" when it is the *folder* that
cannot be written, where SQLite must create the ``-wal`` and ``-shm`` files). :func:`open_error`
looks at the path itself to say which case it is; :func:`store_error` classifies a failure met
later, on a read or a write (a damaged page, a full disk, a read-only file system).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from memvault.errors import ReadOnlyStoreError, StoreError, StoreOpenError

MEMORY = ":memory:"
_DAMAGED = ("malformed", "not a database", "corrupt", "file is encrypted")
_FULL = ("database or disk is full", "disk is full")
_READONLY = ("readonly", "read-only")


def is_memory(path: Path) -> bool:
    """``path`` names SQLite's in-process database (``sqlite:///:memory:``)."""
    return str(path) == MEMORY


def folder_error(path: Path, exc: OSError) -> StoreOpenError:
    """Creating the missing folders of ``path`` failed with ``exc``."""
    blocker = _first_non_folder(path.parent)
    if blocker is not None:
        cause = f"{blocker} is a file, not a folder"
    else:
        cause = f"its folder cannot be created ({exc.strerror or exc})"
    return StoreOpenError(f"cannot open the SQLite database {path}: {cause}", location=str(path))


def open_error(path: Path, exc: BaseException, *, read_only: bool = False) -> StoreOpenError:
    """The error for SQLite failing to open (or first read) ``path`` with ``exc``: the cause
    found by looking at the path, else SQLite's own message."""
    return StoreOpenError(f"cannot open the SQLite database {path}: {_cause(path, exc, read_only)}",
                          location=str(path))


def _cause(path: Path, exc: BaseException, read_only: bool) -> str:
    text = " ".join(str(exc).split())
    folder = path.parent
    blocker = _first_non_folder(folder)
    if path.is_dir():
        return "it is a folder, not a file"
    if blocker is not None:
        return f"{blocker} is a file, not a folder"
    if not path.exists():
        if read_only:
            return "the file does not exist (mode=ro opens an existing database only)"
        if not folder.exists():
            return "its folder does not exist"
    if any(word in text.lower() for word in _DAMAGED):
        return f"the file is not a SQLite database, or it is damaged ({text})"
    if not read_only:
        if read_only_file_system(folder):
            return ("it is on a read-only file system; open it with ?mode=ro to read it "
                    f"(SQLite: {text})")
        if path.exists() and not os.access(path, os.W_OK):
            return f"the file is not writable; open it with ?mode=ro to read it (SQLite: {text})"
        if not os.access(folder, os.W_OK | os.X_OK):
            return (f"the folder {folder} is not writable, and SQLite must create the -wal and "
                    f"-shm files next to the database; make it writable, or open the file with "
                    f"?mode=ro to read it (SQLite: {text})")
    if path.exists() and not os.access(path, os.R_OK):
        return f"the file is not readable (SQLite: {text})"
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied (SQLite: {text})"
    return text


def store_error(path: Path, exc: BaseException) -> StoreError:
    """The error for a read or write of ``path`` that failed with ``exc`` after the store
    opened: damage found on a page, a full disk, a read-only file system, or SQLite's message."""
    text = " ".join(str(exc).split())
    lower = text.lower()
    if any(word in lower for word in _DAMAGED):
        return StoreError(
            f"the SQLite database {path} is damaged ({text}): restore it from a backup, or "
            f"recover what can be read with `sqlite3 {path} .recover`")
    if any(word in lower for word in _FULL):
        return StoreError(f"the disk holding the SQLite database {path} is full ({text}): "
                          "free some space; nothing of the failed write was kept")
    if any(word in lower for word in _READONLY):
        return ReadOnlyStoreError(f"the SQLite database {path} cannot be written ({text}): it or "
                                  "its folder is read-only; nothing was written")
    return StoreError(f"SQLite failed on {path}: {text}")


UNDECODABLE = (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeDecodeError)
"""What decoding a row that is not what memvault wrote raises (bad JSON, a missing key, an
out-of-range timestamp, bytes that are not UTF-8): on a read, a sign of a damaged file."""


def undecodable(path: Path, exc: BaseException) -> StoreError:
    """The error for a read of ``path`` that met a row it cannot decode (``exc``)."""
    text = " ".join(str(exc).split())
    return StoreError(
        f"a row of the SQLite database {path} cannot be decoded ({type(exc).__name__}: {text}): the "
        f"file may be damaged; check it with `sqlite3 {path} 'PRAGMA integrity_check'`")


def index_write_failed(exc: BaseException) -> bool:
    """A full-text index write that failed because the file cannot take writes now (full disk,
    read-only file or file system): search goes on without it."""
    lower = str(exc).lower()
    return isinstance(exc, ReadOnlyStoreError) or any(w in lower for w in (*_FULL, *_READONLY))


def _first_non_folder(folder: Path) -> Path | None:
    """The first existing ancestor-or-self of ``folder`` that is not a folder (a file where a
    folder should be), or ``None``."""
    for candidate in (folder, *folder.parents):
        try:
            if candidate.exists():
                return None if candidate.is_dir() else candidate
        except OSError:
            return None
    return None


def read_only_file_system(folder: Path) -> bool:
    """``folder`` (or its nearest existing ancestor) is on a file system mounted read-only."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            try:
                return bool(os.statvfs(candidate).f_flag & os.ST_RDONLY)
            except OSError:
                return False
    return False
