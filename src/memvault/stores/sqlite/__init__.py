"""The SQLite store (:class:`SqliteStore`, in :mod:`.store`): one file, the embedded default.

The class is thin; its transaction bodies live one module per capability (threads, messages,
records, search, summaries, vectors, export), plain functions of a ``sqlite3.Connection`` run on
the store's worker thread (:mod:`.worker`), over the schema of :mod:`.schema`. The PostgreSQL
store (:mod:`memvault.stores.postgres`) has the same shape.
"""

from memvault.stores.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
