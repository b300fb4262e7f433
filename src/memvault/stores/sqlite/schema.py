"""The SQLite schema as numbered migrations, and the code that applies them on open.

The ``schema_version`` table holds one row: the version the database is at. Opening a database
applies the missing migrations in one write transaction (so two processes opening a new file at
once cannot both apply them). A database at a higher version than this code knows is refused.

Full-text rows are derived data, indexed in batches off the write path: ``messages`` rows with
a ``rowid`` above ``messages_fts_progress.indexed_upto`` are not indexed yet, and
:func:`index_pending` indexes them (the store runs it before every search and after every few
hundred new messages). Triggers keep indexed rows right when they are updated or deleted,
whoever writes the ``messages`` table, so deleted text never stays in the index. ``rowid`` is
AUTOINCREMENT, so a new row never reuses the rowid of an indexed one.

A message's indexed text is :data:`BODY_SQL`: its ``body`` column, the folded text
(:func:`memvault.rules.words.index_text`), or, for a message of one text part whose folded text
differs from the text by ASCII case alone (most messages), a BLOB marker holding the text's
length in decimal digits (:func:`same_as_text`, migration 8): the text is then stored once, in
``parts``, and indexed from there (FTS5's tokenizer folds case itself, so the tokens are the
same), and its length in characters (:data:`BODY_CHARS_SQL`, for the search statistics) is read
without parsing the JSON. The ``parts`` of a message of one text part is that text as a JSON
string (:func:`memvault.stores.sqlite.messages.stored_parts`, migration 12), any other message's
a JSON list of parts. The index keeps no per-message token counts (``columnsize=0``): search
scores from ``search_stats`` and the ``body`` lengths, never from FTS5's own statistics.

Message vectors (``message_vectors``, float32 BLOBs keyed by the message's rowid) are derived
data too: triggers delete a message's vector with the message, or when its text changes (it is
then embedded again). ``embedding_model`` records the one model the vectors came from.
"""

from __future__ import annotations

import sqlite3

from memvault.errors import SchemaVersionError, StoreOpenError
from memvault.stores.thread_queries import sqlite_metadata_matches

SCOPE_SQL = "'s' || hex({row}.resource_id) || '0'"
"""The resource's token in the full-text index, in SQL (``{row}``: a table name or alias)."""


def same_as_text(text: str) -> bytes:
    """The ``body`` of a message whose indexed text is ``text``, its single text part: the
    length of ``text`` in characters, in decimal digits, as a BLOB (a folded text is never a
    BLOB)."""
    return str(len(text)).encode()


BODY_SQL = ("CASE WHEN typeof({row}.body) = 'blob' THEN CASE WHEN NOT json_valid({row}.parts) THEN ''"
            " WHEN json_type({row}.parts) = 'text' THEN json_extract({row}.parts, '$')"
            " ELSE json_extract({row}.parts, '$[0].text') END ELSE {row}.body END")
"""A message's indexed text, in SQL (``{row}``: a table name or alias): ``body``, or the text of
its single text part when ``body`` is a :func:`same_as_text` marker, read from ``parts`` in
either of its forms (a JSON string, :func:`stored_parts`, or a list of one part; ``''`` if the
parts are damaged, whenever it is read: what is indexed is what is deleted from the index)."""

BODY_CHARS_SQL = ("CASE WHEN typeof({row}.body) = 'blob' THEN CAST(CAST({row}.body AS TEXT) AS INTEGER)"
                  " ELSE length({row}.body) END")
"""The length of :data:`BODY_SQL` in characters, without parsing the parts."""

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The full-text index's tokenizer (as in the migrations below)."""


def scope_token(resource_id: str) -> str:
    """:data:`SCOPE_SQL` in Python: ``s``, the id's UTF-8 bytes in hex, ``0`` (the trailing
    digit keeps the porter stemmer off it; a collision could only cost speed, never
    isolation: searches also filter on ``resource_id``)."""
    return "s" + resource_id.encode("utf-8").hex() + "0"


VECTORS_UPDATE_TRIGGER = """
    CREATE TRIGGER messages_vectors_update AFTER UPDATE OF parts ON messages
    WHEN old.parts IS NOT new.parts BEGIN
        DELETE FROM message_vectors WHERE message_rowid = old.rowid;
    END;
"""
"""A message's vector goes when its parts change (migrations 3 and 12)."""

SUMMARY_UPDATE_TRIGGER = """
    CREATE TRIGGER messages_summary_update AFTER UPDATE OF parts ON messages
    WHEN old.parts IS NOT new.parts BEGIN
        DELETE FROM summaries WHERE resource_id = old.resource_id AND thread_id = old.thread_id
            AND through_seq >= old.seq;
    END;
"""
"""A summary goes when the parts of a message it covers change (migrations 4 and 12)."""

FTS_SOURCE_AND_TRIGGERS = f"""
    CREATE VIEW messages_fts_source AS
        SELECT rowid AS row_id, {BODY_SQL.format(row='messages')} AS body,
            {SCOPE_SQL.format(row='messages')} AS scope FROM messages;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, scope)
        VALUES ('delete', old.rowid, {BODY_SQL.format(row='old')}, {SCOPE_SQL.format(row='old')});
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF body, parts, resource_id ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, scope)
        VALUES ('delete', old.rowid, {BODY_SQL.format(row='old')}, {SCOPE_SQL.format(row='old')});
        INSERT INTO messages_fts (rowid, body, scope)
        VALUES (new.rowid, {BODY_SQL.format(row='new')}, {SCOPE_SQL.format(row='new')});
    END;
"""
"""The full-text index's source view (:data:`BODY_SQL`, :data:`SCOPE_SQL`) and the triggers that
keep indexed rows right (migrations 11 and 12)."""

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
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
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
    CREATE TABLE messages_fts_progress (indexed_upto INTEGER NOT NULL);
    INSERT INTO messages_fts_progress (indexed_upto) VALUES (0);
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.rowid, old.body);
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF body ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
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
    # 3: message embeddings (derived data), for semantic recall
    """
    CREATE TABLE embedding_model (model TEXT NOT NULL, dimensions INTEGER NOT NULL);
    CREATE TABLE message_vectors (
        message_rowid INTEGER PRIMARY KEY,
        vector BLOB NOT NULL
    );
    CREATE TRIGGER messages_vectors_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE message_rowid = old.rowid;
    END;
    """ + VECTORS_UPDATE_TRIGGER,
    # 4: each thread's running summary (derived data: gone when a summarised message is)
    """
    CREATE TABLE summaries (
        resource_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        text TEXT NOT NULL,
        through_seq INTEGER NOT NULL,
        through_message_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        updated_us INTEGER NOT NULL,
        PRIMARY KEY (resource_id, thread_id)
    ) WITHOUT ROWID;
    CREATE TRIGGER messages_summary_delete AFTER DELETE ON messages BEGIN
        DELETE FROM summaries WHERE resource_id = old.resource_id AND thread_id = old.thread_id
            AND through_seq >= old.seq;
    END;
    """ + SUMMARY_UPDATE_TRIGGER,
    # 5: the full-text index gets a second column, each message's resource as one token
    # (SCOPE_SQL), so that a search intersects with its resource's rows instead of matching the
    # whole store and filtering; and the index's term statistics (fts5vocab), read by search.
    # The index is rebuilt lazily from the messages (indexed_upto = 0).
    f"""
    DROP TRIGGER messages_fts_delete;
    DROP TRIGGER messages_fts_update;
    DROP TABLE messages_fts;
    CREATE VIEW messages_fts_source AS
        SELECT rowid AS row_id, body, {SCOPE_SQL.format(row="messages")} AS scope FROM messages;
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        body, scope, content='messages_fts_source', content_rowid='row_id',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    UPDATE messages_fts_progress SET indexed_upto = 0;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, scope)
        VALUES ('delete', old.rowid, old.body, {SCOPE_SQL.format(row="old")});
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF body ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, body, scope)
        VALUES ('delete', old.rowid, old.body, {SCOPE_SQL.format(row="old")});
        INSERT INTO messages_fts (rowid, body, scope)
        VALUES (new.rowid, new.body, {SCOPE_SQL.format(row="new")});
    END;
    CREATE VIRTUAL TABLE messages_fts_vocab USING fts5vocab(messages_fts, row);
    """,
    # 6: each resource's own search statistics (how many messages, how many characters of
    # indexed text), kept by triggers whoever writes ``messages``, so that search scores are
    # computed from the resource's data alone (invariant 3), never from the whole index's.
    """
    CREATE TABLE search_stats (
        resource_id TEXT PRIMARY KEY,
        docs INTEGER NOT NULL,
        chars INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO search_stats (resource_id, docs, chars)
        SELECT resource_id, count(*), coalesce(sum(length(body)), 0) FROM messages GROUP BY resource_id;
    CREATE TRIGGER messages_stats_insert AFTER INSERT ON messages BEGIN
        INSERT INTO search_stats (resource_id, docs, chars) VALUES (new.resource_id, 1, length(new.body))
        ON CONFLICT (resource_id) DO UPDATE SET docs = docs + 1, chars = chars + excluded.chars;
    END;
    CREATE TRIGGER messages_stats_delete AFTER DELETE ON messages BEGIN
        UPDATE search_stats SET docs = docs - 1, chars = chars - length(old.body)
        WHERE resource_id = old.resource_id;
        DELETE FROM search_stats WHERE resource_id = old.resource_id AND docs <= 0;
    END;
    CREATE TRIGGER messages_stats_update AFTER UPDATE OF body, resource_id ON messages BEGIN
        UPDATE search_stats SET docs = docs - 1, chars = chars - length(old.body)
        WHERE resource_id = old.resource_id;
        INSERT INTO search_stats (resource_id, docs, chars) VALUES (new.resource_id, 1, length(new.body))
        ON CONFLICT (resource_id) DO UPDATE SET docs = docs + 1, chars = chars + excluded.chars;
        DELETE FROM search_stats WHERE resource_id = old.resource_id AND docs <= 0;
    END;
    """,
    # 7: retention policies: the maximum age of a resource's messages ('' for the store-wide
    # policy), read by every message read (:mod:`.retention`).
    """
    CREATE TABLE retention (
        resource_id TEXT PRIMARY KEY,
        max_age_us INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 8: graph checkpoints, their pending writes and long-term items (LangGraph's checkpointer
    # and store, :mod:`memvault.stores.graph_sql`), per resource; deleted with it.
    """
    CREATE TABLE graph_checkpoints (
        resource_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        parent_id TEXT,
        run_id TEXT,
        checkpoint_type TEXT NOT NULL,
        checkpoint BLOB NOT NULL,
        metadata_type TEXT NOT NULL,
        metadata BLOB NOT NULL,
        PRIMARY KEY (resource_id, thread_id, ns, checkpoint_id)
    );
    CREATE INDEX graph_checkpoints_by_run ON graph_checkpoints (resource_id, run_id)
        WHERE run_id IS NOT NULL;
    CREATE TABLE graph_writes (
        resource_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        value_type TEXT NOT NULL,
        value BLOB NOT NULL,
        task_path TEXT NOT NULL,
        PRIMARY KEY (resource_id, thread_id, ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE graph_items (
        resource_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        created_us INTEGER NOT NULL,
        updated_us INTEGER NOT NULL,
        expires_us INTEGER,
        ttl_minutes REAL,
        words TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (resource_id, namespace, key)
    );
    CREATE INDEX graph_items_by_expiry ON graph_items (expires_us) WHERE expires_us IS NOT NULL;
    """,
    # thread queries: each title case-folded by Python (``title_contains`` searches it; the
    # function is registered on every connection, :func:`register_functions`), and an index
    # for listing a resource's threads by creation time
    """
    ALTER TABLE threads ADD COLUMN title_fold TEXT;
    UPDATE threads SET title_fold = memvault_casefold(title) WHERE title IS NOT NULL;
    CREATE INDEX threads_by_creation ON threads (resource_id, created_us DESC, id DESC);
    """,
    # workflow states: a workflow id, an optional thread (deleting the thread deletes its
    # states) and the first write's time, with an index per query
    """
    ALTER TABLE states ADD COLUMN workflow_id TEXT;
    ALTER TABLE states ADD COLUMN thread_id TEXT;
    ALTER TABLE states ADD COLUMN created_us INTEGER NOT NULL DEFAULT 0;
    UPDATE states SET created_us = updated_us;
    CREATE INDEX states_by_update ON states (resource_id, updated_us DESC, key DESC);
    CREATE INDEX states_by_workflow ON states (resource_id, workflow_id, updated_us DESC, key DESC);
    CREATE INDEX states_by_thread ON states (resource_id, thread_id, updated_us DESC, key DESC);
    """,
    # 11: fewer bytes stored and written per message.
    # - The text of a plain text message is stored once: ``body`` holds a same_as_text marker
    #   instead of a copy that differs by ASCII case alone, and the index and its triggers read
    #   BODY_SQL, the search statistics BODY_CHARS_SQL. The tokens and lengths are unchanged, so
    #   the index stays as it is; the freed space is reused by new rows (VACUUM returns it).
    # - ``search_stats`` counts the indexed messages only: index_pending adds a batch's counts,
    #   and the triggers change them only for indexed rows, so a save no longer writes the
    #   statistics page (a search adds the counts of the messages it indexes on the fly).
    f"""
    DROP TRIGGER messages_fts_delete;
    DROP TRIGGER messages_fts_update;
    DROP TRIGGER messages_stats_insert;
    DROP TRIGGER messages_stats_delete;
    DROP TRIGGER messages_stats_update;
    DROP VIEW messages_fts_source;
    UPDATE messages SET body = CAST(length(body) AS BLOB)
    WHERE typeof(body) = 'text' AND json_valid(parts) AND json_array_length(parts) = 1
        AND json_extract(parts, '$[0].type') = 'text'
        AND typeof(json_extract(parts, '$[0].text')) = 'text'
        AND length(body) = length(json_extract(parts, '$[0].text'))
        AND body = lower(json_extract(parts, '$[0].text'));
    {FTS_SOURCE_AND_TRIGGERS}
    DELETE FROM search_stats;
    INSERT INTO search_stats (resource_id, docs, chars)
        SELECT resource_id, count(*), sum({BODY_CHARS_SQL.format(row='messages')}) FROM messages
        WHERE rowid <= (SELECT indexed_upto FROM messages_fts_progress) GROUP BY resource_id;
    CREATE TRIGGER messages_stats_delete AFTER DELETE ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        UPDATE search_stats SET docs = docs - 1, chars = chars - {BODY_CHARS_SQL.format(row='old')}
        WHERE resource_id = old.resource_id;
        DELETE FROM search_stats WHERE resource_id = old.resource_id AND docs <= 0;
    END;
    CREATE TRIGGER messages_stats_update AFTER UPDATE OF body, parts, resource_id ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        UPDATE search_stats SET docs = docs - 1, chars = chars - {BODY_CHARS_SQL.format(row='old')}
        WHERE resource_id = old.resource_id;
        INSERT INTO search_stats (resource_id, docs, chars) VALUES
            (new.resource_id, 1, {BODY_CHARS_SQL.format(row='new')})
        ON CONFLICT (resource_id) DO UPDATE SET docs = docs + 1, chars = chars + excluded.chars;
        DELETE FROM search_stats WHERE resource_id = old.resource_id AND docs <= 0;
    END;
    """,
    # 12: fewer bytes per message. The parts of a message of one text part are stored as that
    # text, a JSON string (28 bytes fewer than a list of one part object: stored_parts; both
    # forms are read). The full-text index is rebuilt without its per-message token counts
    # (columnsize=0: search scores from search_stats and the body lengths, never from FTS5's
    # own statistics). Rewriting the parts changes no text, so the triggers that drop a
    # message's vector and summaries when its parts change are off while it runs.
    f"""
    DROP TRIGGER messages_fts_delete;
    DROP TRIGGER messages_fts_update;
    DROP TRIGGER messages_vectors_update;
    DROP TRIGGER messages_summary_update;
    DROP VIEW messages_fts_source;
    DROP TABLE messages_fts;
    UPDATE messages SET parts = json_quote(json_extract(parts, '$[0].text'))
    WHERE json_valid(parts) AND json_type(parts) = 'array' AND json_array_length(parts) = 1
        AND json_type(parts, '$[0]') = 'object'
        AND json_extract(parts, '$[0].type') = 'text'
        AND json_type(parts, '$[0].text') = 'text'
        AND (SELECT count(*) FROM json_each(parts, '$[0]')) = 2;
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        body, scope, content='messages_fts_source', content_rowid='row_id',
        tokenize='{TOKENIZE}', columnsize=0
    );
    {FTS_SOURCE_AND_TRIGGERS}
    INSERT INTO messages_fts (rowid, body, scope)
        SELECT rowid, {BODY_SQL.format(row='messages')}, {SCOPE_SQL.format(row='messages')}
        FROM messages WHERE rowid <= (SELECT indexed_upto FROM messages_fts_progress) ORDER BY rowid;
    """ + VECTORS_UPDATE_TRIGGER + SUMMARY_UPDATE_TRIGGER,
    # 13: each resource's statistics row gets an id that is never reused (AUTOINCREMENT: a row
    # deleted when the resource's last indexed message goes and made again later has a new
    # one) and ``changes``, how many indexed messages it has gained or lost since the row was
    # made, so that a search can tell how far a word's count may have moved since it last
    # counted it (:class:`memvault.stores.sqlite.search.WordCounts`).
    f"""
    DROP TRIGGER messages_stats_delete;
    DROP TRIGGER messages_stats_update;
    CREATE TABLE search_stats_new (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        resource_id TEXT NOT NULL UNIQUE,
        docs INTEGER NOT NULL,
        chars INTEGER NOT NULL,
        changes INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO search_stats_new (resource_id, docs, chars) SELECT resource_id, docs, chars FROM search_stats;
    DROP TABLE search_stats;
    ALTER TABLE search_stats_new RENAME TO search_stats;
    CREATE TRIGGER messages_stats_delete AFTER DELETE ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        UPDATE search_stats SET docs = docs - 1, chars = chars - {BODY_CHARS_SQL.format(row='old')},
            changes = changes + 1
        WHERE resource_id = old.resource_id;
        DELETE FROM search_stats WHERE resource_id = old.resource_id AND docs <= 0;
    END;
    CREATE TRIGGER messages_stats_update AFTER UPDATE OF body, parts, resource_id ON messages
    WHEN old.rowid <= (SELECT indexed_upto FROM messages_fts_progress) BEGIN
        UPDATE search_stats SET docs = docs - 1, chars = chars - {BODY_CHARS_SQL.format(row='old')},
            changes = changes + 1
        WHERE resource_id = old.resource_id;
        INSERT INTO search_stats (resource_id, docs, chars) VALUES
            (new.resource_id, 1, {BODY_CHARS_SQL.format(row='new')})
        ON CONFLICT (resource_id) DO UPDATE SET docs = docs + 1, chars = chars + excluded.chars,
            changes = changes + 1;
        DELETE FROM search_stats WHERE resource_id = old.resource_id AND docs <= 0;
    END;
    """,
    # 14: each message's sentences' vectors beside its own (derived data, NULL for a message
    # of one sentence or embedded before): the row, and so they, go with the message's
    # deletion or change by the triggers of migration 3
    """
    ALTER TABLE message_vectors ADD COLUMN sentences BLOB;
    """,
)

LATEST = len(MIGRATIONS)


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions of memvault's statements, on a new connection: ``memvault_casefold``
    (:meth:`str.casefold`, for the migration that folds titles) and ``memvault_metadata_matches``
    (the thread metadata filter, :func:`memvault.stores.thread_queries.sqlite_metadata_matches`)."""
    conn.create_function("memvault_casefold", 1, lambda text: None if text is None else str(text).casefold(),
                         deterministic=True)
    conn.create_function("memvault_metadata_matches", 2, sqlite_metadata_matches, deterministic=True)


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
    register_functions(conn)  # (the migrations call them: on any connection, the store's or not)
    found = current_version(conn)
    if found > LATEST:
        raise SchemaVersionError(
            f"this database is at schema version {found}, but this memvault knows versions up to "
            f"{LATEST}: upgrade memvault (pip install -U memvault) to open it"
        )
    if found < 0:
        raise StoreOpenError(f"its schema version reads {found}: the file is damaged")
    if found == 0:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version (version) VALUES (0)")
    for version in range(found + 1, target + 1):
        for statement in _statements(MIGRATIONS[version - 1]):
            conn.execute(statement)
        conn.execute("UPDATE schema_version SET version = ?", (version,))
    return found


def check_version(conn: sqlite3.Connection) -> int:
    """For a read-only open (``?mode=ro``), which never migrates: the version found, when it is
    :data:`LATEST`. A newer database raises :class:`SchemaVersionError`; an older one, or a file
    that holds no memvault database, raises :class:`StoreOpenError` (open it once read-write to
    upgrade it: a read-only open never writes, and this code cannot read an older schema)."""
    found = current_version(conn)
    if found > LATEST:
        raise SchemaVersionError(
            f"this database is at schema version {found}, but this memvault knows versions up to "
            f"{LATEST}: upgrade memvault (pip install -U memvault) to open it"
        )
    if found == 0:
        raise StoreOpenError("the file holds no memvault database (mode=ro never creates one)")
    if found < LATEST:
        raise StoreOpenError(
            f"the database is at schema version {found}, older than this memvault's {LATEST}, and "
            "mode=ro never migrates: open it once without mode=ro to upgrade it (on a copy if the "
            "file must stay untouched)"
        )
    return found


def unindexed(conn: sqlite3.Connection) -> int:
    """How many messages wait to be indexed (one statement: cheap, no transaction needed)."""
    (count,) = conn.execute(
        "SELECT count(*) FROM messages WHERE rowid > (SELECT indexed_upto FROM messages_fts_progress)"
    ).fetchone()
    return int(count)


def any_unindexed(conn: sqlite3.Connection) -> bool:
    """Whether any message waits to be indexed: one seek past the indexed rowids, whose cost
    does not grow with the number waiting (:func:`unindexed` counts them), so it may run on
    the caller's thread."""
    (waiting,) = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM messages"
        " WHERE rowid > (SELECT indexed_upto FROM messages_fts_progress))"
    ).fetchone()
    return bool(waiting)


PENDING_STATS_SQL = (
    f"SELECT resource_id, count(*), coalesce(sum({BODY_CHARS_SQL.format(row='messages')}), 0)"
    " FROM messages WHERE rowid > (SELECT indexed_upto FROM messages_fts_progress){where}"
    " GROUP BY +resource_id"
)
"""Messages not indexed yet, and their characters of indexed text, by resource; ``{where}``:
``""``, or ``" AND +resource_id = ?"`` for one resource. The unary ``+`` keeps the plan on the
rowid range of the pending rows, never a walk of a ``resource_id`` index."""


def index_pending(conn: sqlite3.Connection) -> int:
    """Index the messages not indexed yet, and add them to their resources' ``search_stats``,
    inside the caller's write transaction; returns how many."""
    (upto,) = conn.execute("SELECT indexed_upto FROM messages_fts_progress").fetchone()
    (last,) = conn.execute("SELECT max(rowid) FROM messages").fetchone()
    if last is None or last <= upto:
        return 0
    conn.execute(
        f"INSERT INTO search_stats (resource_id, docs, chars) {PENDING_STATS_SQL.format(where='')}"
        " ON CONFLICT (resource_id) DO UPDATE SET docs = docs + excluded.docs,"
        " chars = chars + excluded.chars, changes = changes + excluded.docs")
    count = conn.execute(
        "INSERT INTO messages_fts (rowid, body, scope)"
        f" SELECT rowid, {BODY_SQL.format(row='messages')}, {SCOPE_SQL.format(row='messages')}"
        " FROM messages"
        " WHERE rowid > ? ORDER BY rowid",
        (upto,),
    ).rowcount
    conn.execute("UPDATE messages_fts_progress SET indexed_upto = ?", (last,))
    return int(count)


def rebuild_search_index(conn: sqlite3.Connection) -> int:
    """Rebuild the whole full-text index from the messages, inside the caller's write
    transaction; returns how many messages it covers."""
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')")
    conn.execute("DELETE FROM search_stats")
    conn.execute("UPDATE messages_fts_progress SET indexed_upto = 0")
    index_pending(conn)
    (count,) = conn.execute("SELECT count(*) FROM messages").fetchone()
    return int(count)


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``executescript`` would commit the transaction)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return [s for s in statements if s]
