"""The SQLite schema: versions and migrations on open, full-text rows kept in step, file options."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, Message, SchemaVersionError, ToolResultPart
from memvault.errors import ConfigurationError
from memvault.stores.sqlite import SqliteStore
from memvault.stores.sqlite.schema import LATEST, MIGRATIONS, current_version, index_pending, migrate


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection of our own, in autocommit mode."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


def version_of(path: Path) -> int:
    with raw(path) as conn:
        return current_version(conn)


def names(path: Path, kind: str) -> set[str]:
    with raw(path) as conn:
        return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))}


def test_latest_is_the_number_of_migrations() -> None:
    assert LATEST == len(MIGRATIONS) >= 2


async def test_a_new_file_gets_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = await SqliteStore.open(path)
    await store.close()
    assert version_of(path) == LATEST
    assert {"threads", "messages", "messages_fts", "working_memory", "states", "summaries"} <= names(
        path, "table")
    assert {"messages_fts_delete", "messages_fts_update", "messages_vectors_delete",
            "messages_vectors_update", "messages_summary_delete", "messages_summary_update",
            "messages_stats_delete", "messages_stats_update"} == names(
        path, "trigger"
    )
    store = await SqliteStore.open(path)  # opening again changes nothing
    await store.close()
    assert version_of(path) == LATEST


def test_migrate_runs_inside_the_callers_transaction(tmp_path: Path) -> None:
    path = tmp_path / "rollback.db"
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        assert migrate(conn) == 0
        assert current_version(conn) == LATEST
        conn.execute("ROLLBACK")
    assert version_of(path) == 0
    assert names(path, "table") == set()


def build_version_1(path: Path) -> None:
    """A database as the first release left it: one thread with one message."""
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        assert migrate(conn, target=1) == 0
        conn.execute(
            "INSERT INTO threads (resource_id, id, title, metadata, created_us, updated_us,"
            " next_seq) VALUES ('ada', 't1', 'Old chat', '{\"from\":\"v1\"}', 1700000000000000,"
            " 1700000000000000, 2)"
        )
        parts = json.dumps([{"type": "text", "text": "I like green tea"}])
        conn.execute(
            "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata,"
            " created_us, body) VALUES ('ada', 't1', 'm1', 1, 'user', ?, '{}',"
            " 1700000000000000, 'I like green tea')",
            (parts,),
        )
        conn.execute("COMMIT")
    assert version_of(path) == 1
    assert "working_memory" not in names(path, "table")


async def test_an_older_database_is_migrated_on_open_and_stays_usable(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_version_1(path)
    async with await Memory.open(f"sqlite:///{path}") as memory:
        assert version_of(path) == LATEST
        thread = await memory.get_thread(thread_id="t1", resource_id="ada")
        assert thread is not None
        assert (thread.title, thread.metadata) == ("Old chat", {"from": "v1"})
        # the title written before thread queries existed was folded by the migration
        found = await memory.list_threads(resource_id="ada", title_contains="OLD CH", metadata={"from": "v1"})
        assert [t.id for t in found.threads] == ["t1"]
        (old,) = await memory.get_messages(thread_id="t1", resource_id="ada")
        assert (old.id, old.seq, old.text) == ("m1", 1, "I like green tea")
        assert [h.message.id for h in await memory.search_messages(resource_id="ada", query="tea")] == [
            "m1"
        ]
        (new,) = await memory.save_messages(
            [Message.assistant("noted")], thread_id="t1", resource_id="ada"
        )
        assert new.seq == 2
        # what migration 2 added works
        await memory.update_working_memory("likes green tea", resource_id="ada")
        await memory.update_working_memory("name Ada", resource_id="ada")
        assert await memory.get_working_memory(resource_id="ada") == "likes green tea\nname Ada"
        state = await memory.set_state({"step": 1}, resource_id="ada", key="run")
        assert state.version == 1
    async with await Memory.open(f"sqlite:///{path}") as memory:  # and it all persisted
        assert await memory.get_working_memory(resource_id="ada") == "likes green tea\nname Ada"
        assert len(await memory.get_messages(thread_id="t1", resource_id="ada")) == 2


async def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    store = await SqliteStore.open(path)
    await store.save_messages("ada", "t1", [Message.user("from the future")])
    await store.close()
    with raw(path) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (LATEST + 1,))
    with pytest.raises(SchemaVersionError, match="upgrade memvault") as caught:
        await Memory.open(f"sqlite:///{path}")
    assert str(LATEST + 1) in str(caught.value)
    assert version_of(path) == LATEST + 1  # left as it was
    with raw(path) as conn:
        assert conn.execute("SELECT count(*) FROM messages").fetchone() == (1,)


@pytest.mark.parametrize("count", [2, 4])
async def test_concurrent_opens_of_a_new_file_all_succeed(tmp_path: Path, count: int) -> None:
    for attempt in range(5):
        path = tmp_path / f"race-{attempt}.db"
        stores = await asyncio.gather(*(SqliteStore.open(path) for _ in range(count)))
        try:
            await asyncio.gather(*(
                s.save_messages("r", "t", [Message.user(f"hello {i}")]) for i, s in enumerate(stores)
            ))
            assert len(await stores[0].get_messages("r", "t")) == count
        finally:
            await asyncio.gather(*(s.close() for s in stores))
        assert version_of(path) == LATEST


# -- full-text rows in step --------------------------------------------------------------------


def assert_fts_in_step(path: Path) -> int:
    """No index row outlives its message, even before pending messages are indexed; once they
    are, the index holds exactly the messages."""
    with raw(path) as conn:
        # messages_fts reads an external-content table through to `messages`, so look at the
        # index's own rows (the documents its tokens are in: every indexed message has its scope
        # token; the index keeps no docsize table), then have FTS5 compare the index with the
        # content table
        conn.execute("CREATE VIRTUAL TABLE temp.fts_instances USING fts5vocab(main, messages_fts, instance)")
        indexed_rows = "SELECT DISTINCT doc FROM temp.fts_instances"
        (orphans,) = conn.execute(
            f"SELECT count(*) FROM ({indexed_rows}) WHERE doc NOT IN (SELECT rowid FROM messages)"
        ).fetchone()
        assert orphans == 0
        conn.execute("BEGIN IMMEDIATE")
        index_pending(conn)
        conn.execute("COMMIT")
        (messages,) = conn.execute("SELECT count(*) FROM messages").fetchone()
        (indexed,) = conn.execute(f"SELECT count(*) FROM ({indexed_rows})").fetchone()
        assert indexed == messages
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    return int(messages)


def test_the_fts_check_detects_drift(tmp_path: Path) -> None:
    path = tmp_path / "drift.db"
    with raw(path) as conn:
        conn.execute("BEGIN")
        migrate(conn)
        conn.execute("COMMIT")
        conn.execute(
            "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, created_us, body)"
            " VALUES ('r', 't', 'm', 1, 'user', '[]', 0, 'words')"
        )
        assert_fts_in_step(path)
        conn.execute("DROP TRIGGER messages_fts_delete")
        conn.execute("DELETE FROM messages")
    with pytest.raises((AssertionError, sqlite3.DatabaseError)):
        assert_fts_in_step(path)


Step = Callable[[Memory], Awaitable[Any]]


def save(thread: str, *messages: Message, resource: str = "ada") -> Step:
    return lambda m: m.save_messages(list(messages), thread_id=thread, resource_id=resource)


TOOL = Message(role="tool", id="tool", parts=[ToolResultPart(tool_call_id="c", output="rainy")])
STEPS: list[tuple[str, Step, int, dict[str, list[str]]]] = [
    ("save", save("t1", Message.user("green tea", id="a"), Message.user("black coffee", id="b")),
     2, {"tea": ["a"], "coffee": ["b"]}),
    ("save-tool-and-empty", save("t1", TOOL, Message(role="assistant", id="empty")),
     4, {"rainy": ["tool"]}),
    ("save-other-thread", save("t2", Message.user("tea again", id="c")), 5, {"tea": ["a", "c"]}),
    ("save-other-resource", save("t1", Message.user("tea", id="x"), resource="bo"),
     6, {"tea": ["a", "c"]}),
    ("update-text", save("t1", Message.user("jasmine", id="a")), 6,
     {"tea": ["c"], "jasmine": ["a"]}),
    ("update-to-no-text", save("t1", Message(role="assistant", id="b")), 6, {"coffee": []}),
    ("update-same-batch-twice", save("t1", Message.user("one", id="d"), Message.user("two", id="d")),
     7, {"one": [], "two": ["d"]}),
    ("delete-messages", lambda m: m.delete_messages(["a", "nope"], thread_id="t1", resource_id="ada"),
     6, {"jasmine": []}),
    ("clear-thread", lambda m: m.clear_thread(thread_id="t1", resource_id="ada"), 2,
     {"two": [], "rainy": [], "tea": ["c"]}),
    ("delete-thread", lambda m: m.delete_thread(thread_id="t2", resource_id="ada"), 1, {"tea": []}),
    ("delete-resource", lambda m: m.delete_resource(resource_id="bo"), 0, {}),
]


async def test_full_text_rows_stay_in_step(tmp_path: Path) -> None:
    path = tmp_path / "fts.db"
    async with await Memory.open(f"sqlite:///{path}") as memory:
        for name, step, expected_rows, finds in STEPS:
            await step(memory)
            assert assert_fts_in_step(path) == expected_rows, name
            for word, ids in finds.items():
                hits = await memory.search_messages(resource_id="ada", query=word)
                assert sorted(h.message.id for h in hits) == ids, (name, word)


def test_raw_sql_writes_keep_the_index_in_step(tmp_path: Path) -> None:
    """Writers other than memvault keep FTS right: their new rows are indexed by the next
    catch-up, and the triggers fix indexed rows they update or delete."""
    path = tmp_path / "raw.db"
    build_version_1(path)
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        migrate(conn)  # the version-1 rows, in today's schema
        conn.execute("COMMIT")
        assert_fts_in_step(path)  # indexes them
        conn.execute("UPDATE messages SET body = 'oolong' WHERE id = 'm1'")
        assert_fts_in_step(path)
        assert conn.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'oolong'"
        ).fetchone() == (1,)
        assert conn.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'green'"
        ).fetchone() == (0,)
        conn.execute("DELETE FROM messages")
        assert_fts_in_step(path)


# -- file options ------------------------------------------------------------------------------


async def test_missing_parent_folders_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c" / "deep.db"
    async with await Memory.open(f"sqlite:///{path}") as memory:
        await memory.save_messages([Message.user("hi")], thread_id="t", resource_id="r")
    assert version_of(path) == LATEST


@pytest.mark.parametrize(
    ("query", "durability", "synchronous"),
    [("", "normal", 1), ("?durability=normal", "normal", 1), ("?durability=full", "full", 2)],
)
async def test_durability(tmp_path: Path, query: str, durability: str, synchronous: int) -> None:
    path = tmp_path / "durable.db"
    async with await Memory.open(f"sqlite:///{path}{query}") as memory:
        store = memory.store
        assert isinstance(store, SqliteStore)
        assert store.durability == durability
        pragmas = await store._worker.run(lambda: [
            store._worker.connection().execute(f"PRAGMA {p}").fetchone()[0]
            for p in ("synchronous", "journal_mode")
        ])
        assert pragmas == [synchronous, "wal"]
        await memory.save_messages([Message.user("kept")], thread_id="t", resource_id="r")
        assert [m.text for m in await memory.get_messages(thread_id="t", resource_id="r")] == ["kept"]


def test_unknown_durability_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        SqliteStore(tmp_path / "x.db", durability="sometimes")  # type: ignore[arg-type]


def index_before_8(conn: sqlite3.Connection) -> None:
    """Index the pending messages as memvault did before migration 8 (from ``body``; the
    statistics were kept by a trigger on insert)."""
    conn.execute("INSERT INTO messages_fts (rowid, body, scope) SELECT rowid, body,"
                 " 's' || hex(resource_id) || '0' FROM messages"
                 " WHERE rowid > (SELECT indexed_upto FROM messages_fts_progress)")
    conn.execute("UPDATE messages_fts_progress SET indexed_upto = (SELECT max(rowid) FROM messages)")


SCORED = {"ada": ["I like green tea", "tea time", "green paint, green wall", "ok"],
          "bob": ["green tea secret"] * 5}


def build_version_5(path: Path) -> None:
    """A database before migration 6 (each resource's search statistics): two resources'
    messages, indexed, some deleted and updated."""
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        assert migrate(conn, target=5) == 0
        for resource, texts in SCORED.items():
            conn.execute(
                "INSERT INTO threads (resource_id, id, created_us, updated_us, next_seq)"
                " VALUES (?, 't1', 1700000000000000, 1700000000000000, ?)", (resource, len(texts) + 2))
            for seq, text in enumerate([*texts, "to delete", "to update"], start=1):
                conn.execute(
                    "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata,"
                    " created_us, body) VALUES (?, 't1', ?, ?, 'user', ?, '{}', ?, ?)",
                    (resource, f"m{seq}", seq, json.dumps([{"type": "text", "text": text}]),
                     1700000000000000 + seq, text.lower()))
        index_before_8(conn)
        conn.execute("DELETE FROM messages WHERE body = 'to delete'")
        conn.execute("UPDATE messages SET body = 'tea', parts = ? WHERE body = 'to update'",
                     (json.dumps([{"type": "text", "text": "tea"}]),))
        conn.execute("COMMIT")


async def test_migration_6_computes_each_resources_search_statistics(tmp_path: Path) -> None:
    """An old file gets each resource's statistics from its messages; its scores are then
    those of a new file holding the same messages, and another resource's changes none."""
    path = tmp_path / "v5.db"
    build_version_5(path)
    async with await Memory.open(f"sqlite:///{path}") as memory:
        assert version_of(path) == LATEST
        with raw(path) as conn:
            stats = dict(conn.execute("SELECT resource_id, docs FROM search_stats").fetchall())
        assert stats == {"ada": 5, "bob": 6}
        migrated = await memory.search_messages(resource_id="ada", query="green tea")
        await memory.delete_resource(resource_id="bob")
        assert await memory.search_messages(resource_id="ada", query="green tea") == migrated
    async with await Memory.open(f"sqlite:///{tmp_path / 'new.db'}") as memory:
        texts = {f"m{i}": t for i, t in enumerate(SCORED["ada"], start=1)}
        await memory.save_messages([Message.user(t, id=i) for i, t in {**texts, "m6": "tea"}.items()],
                                   thread_id="t1", resource_id="ada")
        fresh = await memory.search_messages(resource_id="ada", query="green tea")
    assert [(h.message.id, h.score) for h in fresh] == [(h.message.id, h.score) for h in migrated]


# -- migration 8: the text of a plain text message stored once ---------------------------------

PLAIN = {"p1": "Green TEA at Noon", "p2": "the café is open", "p3": "\uff23\uff21\uff26\uff25 time",
         "p4": "tea — “quoted”"}
"""Texts whose folded body differs from them by ASCII case alone (p1, p4) or by more (p2, p3:
full-width letters)."""


def build_version_7(path: Path) -> None:
    """A database before migration 8: plain text messages (some indexed, some not), a tool
    result and a two-part message, each with ``body`` holding its folded copy."""
    from memvault.rules.words import index_text

    messages = [Message.user(text, id=i) for i, text in PLAIN.items()]
    messages += [TOOL, Message(role="user", id="two", parts=[*Message.user("Tea one").parts,
                                                             *Message.user("tea two").parts])]
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        assert migrate(conn, target=7) == 0
        conn.execute("INSERT INTO threads (resource_id, id, created_us, updated_us, next_seq)"
                     " VALUES ('ada', 't1', 1700000000000000, 1700000000000000, ?)", (len(messages) + 1,))
        for seq, message in enumerate(messages, start=1):
            conn.execute(
                "INSERT INTO messages (resource_id, thread_id, id, seq, role, parts, metadata,"
                " created_us, body) VALUES ('ada', 't1', ?, ?, ?, ?, '{}', ?, ?)",
                (message.id, seq, message.role, message.parts_json(), 1700000000000000 + seq,
                 index_text(message)))
            if seq == 3:
                index_before_8(conn)  # p1-p3 indexed, the rest pending
        conn.execute("COMMIT")


def bodies(path: Path) -> dict[str, str]:
    with raw(path) as conn:
        return dict(conn.execute("SELECT id, typeof(body) FROM messages").fetchall())


async def test_migration_8_stores_plain_text_once_and_search_is_unchanged(tmp_path: Path) -> None:
    """An old file's plain text messages whose body is their text in lower case drop the copy;
    the index stays in step with the messages, and search finds and scores exactly as in a new
    file holding the same messages."""
    path = tmp_path / "v7.db"
    build_version_7(path)
    async with await Memory.open(f"sqlite:///{path}") as memory:
        assert version_of(path) == LATEST
        assert bodies(path) == {"p1": "blob", "p2": "text", "p3": "text", "p4": "blob",
                                "tool": "text", "two": "text"}
        assert_fts_in_step(path)
        queries = ("tea", "cafe", "quoted", "rainy", "noon", "two")
        migrated = {q: await memory.search_messages(resource_id="ada", query=q) for q in queries}
        assert {q: sorted(h.message.id for h in hits) for q, hits in migrated.items()} == {
            "tea": ["p1", "p4", "two"], "cafe": ["p2", "p3"], "quoted": ["p4"], "rainy": ["tool"],
            "noon": ["p1"], "two": ["two"]}
        (p1,) = await memory.get_messages(thread_id="t1", resource_id="ada", ids=["p1"])
        assert p1.text == PLAIN["p1"]
    async with await Memory.open(f"sqlite:///{tmp_path / 'new.db'}") as memory:
        await memory.save_messages(
            [Message.user(t, id=i) for i, t in PLAIN.items()]
            + [TOOL, Message(role="user", id="two", parts=[*Message.user("Tea one").parts,
                                                          *Message.user("tea two").parts])],
            thread_id="t1", resource_id="ada")
        assert bodies(tmp_path / "new.db") == bodies(path)
        for query, hits in migrated.items():
            fresh = await memory.search_messages(resource_id="ada", query=query)
            assert [(h.message.id, h.score) for h in fresh] == [(h.message.id, h.score) for h in hits]


async def test_a_message_stored_once_is_indexed_and_erased_like_any(tmp_path: Path) -> None:
    """A plain text message (its body a same_as_text marker) updated to a non-plain one and
    back, then deleted: the index follows each step, and nothing of it stays indexed."""
    path = tmp_path / "once.db"
    async with await Memory.open(f"sqlite:///{path}") as memory:
        await memory.save_messages([Message.user("Oolong Tea", id="m")], thread_id="t", resource_id="ada")
        await memory.store.index_pending()
        assert bodies(path) == {"m": "blob"}
        await memory.save_messages([Message.user("Crème brûlée", id="m")], thread_id="t", resource_id="ada")
        assert bodies(path) == {"m": "text"}
        assert [h.message.id for h in await memory.search_messages(resource_id="ada", query="creme")] == ["m"]
        assert await memory.search_messages(resource_id="ada", query="oolong") == []
        with raw(path) as conn:  # a raw writer changing only the parts of a stored-once message
            conn.execute("UPDATE messages SET body = CAST(7 AS BLOB), parts = ? WHERE id = 'm'",
                         (json.dumps([{"type": "text", "text": "Jasmine"}]),))
        assert_fts_in_step(path)
        hits = await memory.search_messages(resource_id="ada", query="jasmine")
        assert [h.message.id for h in hits] == ["m"]
        await memory.delete_messages(["m"], thread_id="t", resource_id="ada")
        assert assert_fts_in_step(path) == 0
        assert await memory.search_messages(resource_id="ada", query="jasmine") == []
        with raw(path) as conn:
            assert conn.execute("SELECT docs FROM search_stats").fetchall() == []


# -- migration 12: a plain text message's parts as a JSON string, an index without docsize ----


@contextmanager
def migrated_from_7(path: Path, target: int) -> Iterator[sqlite3.Connection]:
    """A version-7 file (:func:`build_version_7`) migrated to ``target`` in one transaction,
    open for more writes in it; committed when the block ends."""
    build_version_7(path)
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        assert migrate(conn, target=target) == 7
        yield conn
        conn.execute("COMMIT")


def parts_of(path: Path) -> dict[str, str]:
    with raw(path) as conn:
        return dict(conn.execute("SELECT id, parts FROM messages").fetchall())


async def test_migration_12_stores_plain_parts_as_a_string_and_search_is_unchanged(tmp_path: Path) -> None:
    """An old file's messages of one text part get their text as a JSON string for ``parts``
    (others keep their list), without dropping their vectors or summaries; the index is rebuilt
    without docsize, stays in step, and search finds and scores as in a new file."""
    path = tmp_path / "v11.db"
    with migrated_from_7(path, 11) as conn:
        conn.execute("INSERT INTO embedding_model (model, dimensions) VALUES ('m', 2)")
        conn.execute("INSERT INTO message_vectors (message_rowid, vector) SELECT rowid, x'0000803f0000803f'"
                     " FROM messages")
        conn.execute("INSERT INTO summaries VALUES ('ada', 't1', 'so far', 3, 'p3', 1, 1700000000000000)")
    async with await Memory.open(f"sqlite:///{path}") as memory:
        assert version_of(path) == LATEST
        assert "messages_fts_docsize" not in names(path, "table")
        stored = parts_of(path)
        assert {i: json.loads(stored[i]) for i in PLAIN} == PLAIN
        assert json.loads(stored["two"])[1] == {"type": "text", "text": "tea two"}
        assert json.loads(stored["tool"])[0]["type"] == "tool-result"
        with raw(path) as conn:
            assert conn.execute("SELECT count(*) FROM message_vectors").fetchone() == (len(stored),)
            assert conn.execute("SELECT count(*) FROM summaries").fetchone() == (1,)
        assert_fts_in_step(path)
        queries = ("tea", "cafe", "quoted", "rainy", "noon", "two")
        migrated = {q: await memory.search_messages(resource_id="ada", query=q) for q in queries}
        read = await memory.get_messages(thread_id="t1", resource_id="ada")
        assert {m.id: m.text for m in read if m.id in PLAIN} == PLAIN
    async with await Memory.open(f"sqlite:///{tmp_path / 'new.db'}") as memory:
        await memory.save_messages([m.model_copy(update={"seq": None}) for m in read],
                                   thread_id="t1", resource_id="ada")
        assert parts_of(tmp_path / "new.db") == stored
        assert [m.parts for m in await memory.get_messages(thread_id="t1", resource_id="ada")] == [
            m.parts for m in read]
        for query, hits in migrated.items():
            fresh = await memory.search_messages(resource_id="ada", query=query)
            assert [(h.message.id, h.score) for h in fresh] == [(h.message.id, h.score) for h in hits]


# -- migration 13: statistics rows with an id never reused and a count of changes --------------


STATS_OF_ZED = "SELECT id, docs, changes FROM search_stats WHERE resource_id = 'zed'"


async def test_migration_13_keeps_the_statistics_and_counts_changes_from_then(tmp_path: Path) -> None:
    """An old file's statistics are kept (docs and characters per resource, no changes yet);
    from then on each indexed message gained or lost after a row is made counts one change, and
    a resource whose last indexed message goes gets a new row id when it comes back."""
    path = tmp_path / "v12.db"
    with migrated_from_7(path, 12) as conn:
        before = conn.execute("SELECT resource_id, docs, chars FROM search_stats ORDER BY 1").fetchall()
    assert before
    async with await Memory.open(f"sqlite:///{path}") as memory:
        assert version_of(path) == LATEST
        with raw(path) as conn:
            assert conn.execute("SELECT resource_id, docs, chars, changes FROM search_stats ORDER BY 1"
                                ).fetchall() == [(*row, 0) for row in before]
        await memory.save_messages([Message.user("green tea", id="n1"), Message.user("more tea", id="n2")],
                                   thread_id="t9", resource_id="zed")
        await memory.search_messages(resource_id="zed", query="tea")  # indexes them
        await memory.save_messages([Message.user("black tea", id="n1")], thread_id="t9", resource_id="zed")
        await memory.delete_messages(["n2"], thread_id="t9", resource_id="zed")
        with raw(path) as conn:
            first = conn.execute(STATS_OF_ZED).fetchone()
        assert first[1:] == (1, 3)  # made with two indexed; one edited (lost and gained), one deleted
        await memory.delete_messages(["n1"], thread_id="t9", resource_id="zed")
        with raw(path) as conn:
            assert conn.execute("SELECT 1 FROM search_stats WHERE resource_id = 'zed'").fetchone() is None
        await memory.save_messages([Message.user("tea again", id="n3")], thread_id="t9", resource_id="zed")
        await memory.search_messages(resource_id="zed", query="tea")
        with raw(path) as conn:
            again = conn.execute(STATS_OF_ZED).fetchone()
        assert again[1:] == (1, 0) and again[0] > first[0]
        assert_fts_in_step(path)
