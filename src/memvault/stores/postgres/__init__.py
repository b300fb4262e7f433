"""The PostgreSQL store (:class:`PostgresStore`, in :mod:`.store`): many processes, one server
(``pip install 'memvault[postgres]'``; importing this package needs psycopg).

The class is thin; its transaction bodies live one module per capability (threads, messages,
records, search, summaries, vectors, export), coroutines of a pooled connection run by
:mod:`.db`, over the schema of :mod:`.schema`. The SQLite store (:mod:`memvault.stores.sqlite`)
has the same shape.
"""

from memvault.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
