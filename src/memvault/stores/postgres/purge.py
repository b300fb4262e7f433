"""Purge: make deleted rows unrecoverable from PostgreSQL's table files.

A ``DELETE`` in PostgreSQL only marks rows dead: their bytes stay in the table's (and its
TOAST table's and indexes') files until the space is reused, and a plain ``VACUUM`` marks it
reusable without overwriting it. ``VACUUM FULL`` writes each table and its indexes into new
files and drops the old ones (truncated at once, unlinked at the next checkpoint), so no dead
row survives in the data directory. It takes an ``ACCESS EXCLUSIVE`` lock on each table while
it rewrites it (reads and writes of that table wait) and cannot run inside a transaction
block, so it runs on an autocommit connection, one table at a time.

What purge cannot reach: PostgreSQL's write-ahead log (``pg_wal``) and its archives or base
backups keep the text until they are recycled or expire (see docs/security.md).
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from memvault.stores.postgres.db import Conn


async def tables(conn: Conn) -> list[str]:
    """The ordinary tables of the connection's schema (memvault's), in name order."""
    cursor = await conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname"
    )
    return [str(name) for (name,) in await cursor.fetchall()]


async def purge(conn: Conn) -> dict[str, Any]:
    """``VACUUM FULL`` every table of the schema, outside any transaction (``conn`` is in
    autocommit mode); returns the tables rewritten."""
    done = []
    for table in await tables(conn):
        await conn.execute(sql.SQL("VACUUM (FULL) {}").format(sql.Identifier(table)))
        done.append(table)
    return {"vacuum_full": done}
