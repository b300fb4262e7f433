"""The SQLite schema as numbered migrations, and the code that applies them on open.

The ``schema_version`` table holds one row: the version the database is at. Opening a database
applies the missing migrations in one write transaction (so two processes opening a new file at
once cannot both apply them). A database at a higher version than this code knows is refused.

Full-text rows are derived data kept in step by triggers: whoever writes the ``messages`` table,
through memvault or not, keeps ``messages_fts`` right.
"""

from __future__ import annotations

import sqlite3

from memvault.errors import SchemaVersionError

MIGRATIONS: tuple[str, ...] = (
    # 1: threads and messages, with full-text search
    """
    CREATE TABLE threads (
        resource_id TEXT NOT NULL,
        id TEXT NOT NULL,
        title TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_us INTEGER NOT NULL,
        updated_us INTEGER NOT NULL,
        next_seq INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (resource_id, id)
    ) WITHOUT ROWID;
    CREATE INDEX threads_by_update ON threads (resource_id, updated_us DESC, id DESC);

    CREATE TABLE messages (
        rowid INTEGER PRIMARY KEY,
        resource_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        parts TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_us INTEGER NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        UNIQUE (resource_id, thread_id, seq),
        UNIQUE (resource_id, thread_id, id)
    );

    CREATE VIRTUAL TABLE messages_fts USING fts5(
        body, content='messages', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, body) VALUES (new.rowid, new.body);
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.rowid, old.body);
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF body ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.rowid, old.body);
        INSERT INTO messages_fts (rowid, body) VALUES (new.rowid, new.body);
    END;
    """,
    # 2: working memory and agent/workflow states
    """
    CREATE TABLE working_memory (
        resource_id TEXT NOT NULL,
        key TEXT NOT NULL,
        content TEXT NOT NULL,
        updated_us INTEGER NOT NULL,
        PRIMARY KEY (resource_id, key)
    ) WITHOUT ROWID;

    CREATE TABLE states (
        resource_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        status TEXT,
        version INTEGER NOT NULL,
        updated_us INTEGER NOT NULL,
        PRIMARY KEY (resource_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX states_by_status ON states (resource_id, status, updated_us DESC);
    """,
)

LATEST = len(MIGRATIONS)


def current_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, target: int = LATEST) -> int:
    """Bring the database to ``target`` inside the caller's write transaction; returns the
    version found before. Raises :class:`SchemaVersionError` for a newer database."""
    found = current_version(conn)
    if found > LATEST:
        raise SchemaVersionError(
            f"this database is at schema version {found}, but this memvault knows versions up to "
            f"{LATEST}: upgrade memvault (pip install -U memvault) to open it"
        )
    if found == 0:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (0)")
    for version in range(found + 1, target + 1):
        for statement in _statements(MIGRATIONS[version - 1]):
            conn.execute(statement)
        conn.execute("UPDATE schema_version SET version = ?", (version,))
    return found


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``executescript`` would commit the transaction)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return [s for s in statements if s]
