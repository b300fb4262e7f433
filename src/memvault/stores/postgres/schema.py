"""The PostgreSQL schema as numbered migrations, and the code that applies them on open.

Everything lives in one PostgreSQL schema (``public`` unless the URL says ``?schema=name``),
created when missing. ``memvault_schema_version`` holds one row: the version the schema is at.
Opening a store applies the missing migrations in one transaction that first takes a
transaction-scoped advisory lock derived from the schema's name, so N processes opening a new
schema at once apply them exactly once (the others wait, then find the work done). A schema at
a higher version than this code knows is refused with :class:`SchemaVersionError`.

Layout, and what keeps derived data right whoever writes the tables:

- ``threads`` carries ``next_seq``, the thread's next message ``seq``: writers reserve seqs by
  updating it while they hold the thread row's lock, so seqs are total and gap-free.
- ``messages`` has a ``pk`` identity column (the embedding cursor) and ``search``, a
  ``tsvector`` (``simple`` configuration, see :mod:`~.search`) under a GIN index.
  Messages belong to their thread (``ON DELETE CASCADE``).
- ``message_vectors`` (float32 ``bytea``, keyed by the message's ``pk``) go with their message
  (``ON DELETE CASCADE``) and a trigger drops one when the message's parts change.
- ``applied_ops`` holds the operation ids of recent working-memory and state writes
  (:mod:`~.ops`): a write run again after its commit's answer was lost applies once.
- ``summaries`` go with their thread, and triggers drop one when a message it summarises
  (``seq <= through_seq``) is deleted or its parts change, as in the SQLite store.

Ids and keys use the ``C`` collation, so that they sort by code point on every server, as in
the other stores. Times are microseconds since the Unix epoch (``bigint``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from psycopg import sql

from memvault.errors import SchemaVersionError
from memvault.rules.words import fold
from memvault.stores.postgres import search as _search
from memvault.stores.postgres.db import Conn

Step = str | Callable[[Conn], Awaitable[None]]
"""A migration: SQL, or a coroutine function for what SQL cannot compute (run in the same
transaction)."""

async def _refold_titles(conn: Conn) -> None:
    """Fold every title again with :func:`memvault.rules.words.fold`, as writes do: migration 8
    folded the titles it found with ``lower()``, which keeps accents and compatibility forms
    (so ``title_contains="cafe"`` missed a thread titled "Café" written before it). Reads the
    titles in pages of 1,000 by key; rewrites only those that differ."""
    after: tuple[str, str] = ("", "")
    while True:
        cursor = await conn.execute(
            "SELECT resource_id, id, title, title_fold FROM threads WHERE title IS NOT NULL "
            "AND (resource_id, id) > (%s, %s) ORDER BY resource_id, id LIMIT 1000", after)
        rows = await cursor.fetchall()
        if not rows:
            return
        changed = [(fold(title), resource, thread) for resource, thread, title, folded in rows
                   if fold(title) != folded]
        if changed:
            await cursor.executemany(
                "UPDATE threads SET title_fold = %s WHERE resource_id = %s AND id = %s", changed)
        after = (rows[-1][0], rows[-1][1])


async def _relexeme(conn: Conn) -> None:
    """Index again the messages whose words may be written differently now (:data:`.search.
    NOT_PLAIN`), in batches (savepoints of this migration's transaction)."""
    await _search.rebuild(conn, _search.NOT_PLAIN)


MIGRATIONS: tuple[Step, ...] = (
    # 1: threads and messages, with full-text search
    """
    CREATE TABLE threads (
        resource_id text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        title text,
        metadata text NOT NULL DEFAULT '{}',
        created_us bigint NOT NULL,
        updated_us bigint NOT NULL,
        next_seq bigint NOT NULL DEFAULT 1,
        PRIMARY KEY (resource_id, id)
    );
    CREATE INDEX threads_by_update ON threads (resource_id, updated_us DESC, id DESC);

    CREATE TABLE messages (
        pk bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        resource_id text COLLATE "C" NOT NULL,
        thread_id text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        role text NOT NULL,
        parts text NOT NULL,
        metadata text NOT NULL DEFAULT '{}',
        created_us bigint NOT NULL,
        search tsvector NOT NULL,
        UNIQUE (resource_id, thread_id, seq),
        UNIQUE (resource_id, thread_id, id),
        FOREIGN KEY (resource_id, thread_id) REFERENCES threads (resource_id, id) ON DELETE CASCADE
    );
    CREATE INDEX messages_search ON messages USING gin (search);
    """,
    # 2: working memory and agent/workflow states
    """
    CREATE TABLE working_memory (
        resource_id text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        content text NOT NULL,
        updated_us bigint NOT NULL,
        PRIMARY KEY (resource_id, key)
    );

    CREATE TABLE states (
        resource_id text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        value text NOT NULL,
        status text COLLATE "C",
        version bigint NOT NULL,
        updated_us bigint NOT NULL,
        PRIMARY KEY (resource_id, key)
    );
    CREATE INDEX states_by_update ON states (resource_id, updated_us DESC, key DESC);
    """,
    # 3: message embeddings (derived data), for semantic recall
    """
    CREATE TABLE embedding_model (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        model text NOT NULL,
        dimensions integer NOT NULL
    );
    CREATE TABLE message_vectors (
        message_pk bigint PRIMARY KEY REFERENCES messages (pk) ON DELETE CASCADE,
        vector bytea NOT NULL
    );
    CREATE FUNCTION memvault_drop_changed_vector() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        DELETE FROM message_vectors WHERE message_pk = OLD.pk;
        RETURN NULL;
    END $$;
    CREATE TRIGGER messages_vectors_update AFTER UPDATE OF parts ON messages
    FOR EACH ROW WHEN (OLD.parts IS DISTINCT FROM NEW.parts)
    EXECUTE FUNCTION memvault_drop_changed_vector();
    """,
    # 4: each thread's running summary (derived data: gone when a summarised message is)
    """
    CREATE TABLE summaries (
        resource_id text COLLATE "C" NOT NULL,
        thread_id text COLLATE "C" NOT NULL,
        text text NOT NULL,
        through_seq bigint NOT NULL,
        through_message_id text COLLATE "C" NOT NULL,
        version bigint NOT NULL,
        updated_us bigint NOT NULL,
        PRIMARY KEY (resource_id, thread_id),
        FOREIGN KEY (resource_id, thread_id) REFERENCES threads (resource_id, id) ON DELETE CASCADE
    );
    CREATE FUNCTION memvault_forget_deleted_summaries() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        DELETE FROM summaries AS s
        USING (SELECT resource_id, thread_id, min(seq) AS seq FROM gone GROUP BY 1, 2) AS g
        WHERE s.resource_id = g.resource_id AND s.thread_id = g.thread_id AND s.through_seq >= g.seq;
        RETURN NULL;
    END $$;
    CREATE TRIGGER messages_summary_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION memvault_forget_deleted_summaries();
    CREATE FUNCTION memvault_forget_edited_summary() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        DELETE FROM summaries WHERE resource_id = OLD.resource_id AND thread_id = OLD.thread_id
            AND through_seq >= OLD.seq;
        RETURN NULL;
    END $$;
    CREATE TRIGGER messages_summary_update AFTER UPDATE OF parts ON messages
    FOR EACH ROW WHEN (OLD.parts IS DISTINCT FROM NEW.parts)
    EXECUTE FUNCTION memvault_forget_edited_summary();
    """,
    # 5: retention policies: the maximum age of a resource's messages ('' for the store-wide
    # policy), read by every message read (:mod:`.retention`).
    """
    CREATE TABLE retention (
        resource_id text COLLATE "C" PRIMARY KEY,
        max_age_us bigint NOT NULL
    );
    """,
    # 6: operation ids of working-memory and state writes, so that a write run again after its
    # COMMIT's answer was lost applies once (:mod:`.ops`); random ids, pruned after a day.
    """
    CREATE TABLE applied_ops (
        op_id text COLLATE "C" PRIMARY KEY,
        applied_us bigint NOT NULL,
        version bigint
    );
    CREATE INDEX applied_ops_by_age ON applied_ops (applied_us);
    """,
    # 7: graph checkpoints, their pending writes and long-term items (LangGraph's checkpointer
    # and store, :mod:`memvault.stores.graph_sql`), per resource; deleted with it.
    """
    CREATE TABLE graph_checkpoints (
        resource_id text COLLATE "C" NOT NULL,
        thread_id text COLLATE "C" NOT NULL,
        ns text COLLATE "C" NOT NULL,
        checkpoint_id text COLLATE "C" NOT NULL,
        parent_id text COLLATE "C",
        run_id text COLLATE "C",
        checkpoint_type text NOT NULL,
        checkpoint bytea NOT NULL,
        metadata_type text NOT NULL,
        metadata bytea NOT NULL,
        PRIMARY KEY (resource_id, thread_id, ns, checkpoint_id)
    );
    CREATE INDEX graph_checkpoints_by_run ON graph_checkpoints (resource_id, run_id)
        WHERE run_id IS NOT NULL;
    CREATE TABLE graph_writes (
        resource_id text COLLATE "C" NOT NULL,
        thread_id text COLLATE "C" NOT NULL,
        ns text COLLATE "C" NOT NULL,
        checkpoint_id text COLLATE "C" NOT NULL,
        task_id text COLLATE "C" NOT NULL,
        idx integer NOT NULL,
        channel text NOT NULL,
        value_type text NOT NULL,
        value bytea NOT NULL,
        task_path text COLLATE "C" NOT NULL,
        PRIMARY KEY (resource_id, thread_id, ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE graph_items (
        resource_id text COLLATE "C" NOT NULL,
        namespace text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        value text NOT NULL,
        created_us bigint NOT NULL,
        updated_us bigint NOT NULL,
        expires_us bigint,
        ttl_minutes double precision,
        words text NOT NULL,
        vector bytea NOT NULL,
        PRIMARY KEY (resource_id, namespace, key)
    );
    CREATE INDEX graph_items_by_expiry ON graph_items (expires_us) WHERE expires_us IS NOT NULL;
    """,
    # thread queries: each title folded (``title_contains`` searches it; memvault writes it with
    # memvault.rules.words.fold; the titles found here are folded by lower() first, then again
    # by migration 10), and an index for listing a resource's threads by creation time
    """
    ALTER TABLE threads ADD COLUMN title_fold text;
    UPDATE threads SET title_fold = lower(title) WHERE title IS NOT NULL;
    CREATE INDEX threads_by_creation ON threads (resource_id, created_us DESC, id DESC);
    """,
    # workflow states: a workflow id, an optional thread (its states go with it: ON DELETE
    # CASCADE) and the first write's time, with an index per query
    """
    ALTER TABLE states ADD COLUMN workflow_id text COLLATE "C", ADD COLUMN thread_id text COLLATE "C",
        ADD COLUMN created_us bigint;
    UPDATE states SET created_us = updated_us;
    ALTER TABLE states ALTER COLUMN created_us SET NOT NULL,
        ADD FOREIGN KEY (resource_id, thread_id) REFERENCES threads (resource_id, id) ON DELETE CASCADE;
    CREATE INDEX states_by_status ON states (resource_id, status, updated_us DESC, key DESC);
    CREATE INDEX states_by_workflow ON states (resource_id, workflow_id, updated_us DESC, key DESC);
    CREATE INDEX states_by_thread ON states (resource_id, thread_id, updated_us DESC, key DESC);
    """,
    # titles written before migration 8 folded as memvault folds them (see _refold_titles)
    _refold_titles,
    # each token written as its lexeme (memvault.stores.postgres.search.lexeme), so that the
    # server's parser never splits one: the messages that may hold a token that is not plain
    _relexeme,
    # each message's sentences' vectors beside its own (derived data, NULL for a message of
    # one sentence or embedded before): the row, and so they, go with the message's deletion
    # (ON DELETE CASCADE) or change (memvault_drop_changed_vector)
    """
    ALTER TABLE message_vectors ADD COLUMN IF NOT EXISTS sentences bytea;
    """,
)

LATEST = len(MIGRATIONS)
_LOCK_NAMESPACE = "memvault.migrate:"


async def current_version(conn: Conn) -> int:
    """The schema's version; 0 when it has no ``memvault_schema_version`` table yet. The
    connection's ``search_path`` names the schema."""
    cursor = await conn.execute("SELECT to_regclass('memvault_schema_version') IS NOT NULL")
    row = await cursor.fetchone()
    if row is None or not row[0]:
        return 0
    cursor = await conn.execute("SELECT version FROM memvault_schema_version")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: Conn, schema: str, target: int = LATEST) -> int:
    """Create ``schema`` if missing and bring it to ``target``, in one transaction under the
    schema's advisory lock; returns the version found before. ``conn`` must be in autocommit
    mode with its ``search_path`` set to ``schema``. Raises :class:`SchemaVersionError` for a
    newer schema."""
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_LOCK_NAMESPACE + schema,)
        )
        cursor = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cursor.fetchone() is None:  # (only then: creating needs the database's CREATE right)
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        found = await current_version(conn)
        if found > LATEST:
            raise SchemaVersionError(
                f"the PostgreSQL schema {schema!r} is at memvault schema version {found}, but this "
                f"memvault knows versions up to {LATEST}: upgrade memvault (pip install -U "
                "'memvault[postgres]') to open it"
            )
        if found == 0:
            await conn.execute("CREATE TABLE memvault_schema_version (version integer NOT NULL)")
            await conn.execute("INSERT INTO memvault_schema_version (version) VALUES (0)")
        for version in range(found + 1, target + 1):
            step = MIGRATIONS[version - 1]
            if isinstance(step, str):
                await conn.execute(step)
            else:
                await step(conn)
            await conn.execute("UPDATE memvault_schema_version SET version = %s", (version,))
        return found
