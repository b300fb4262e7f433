"""What only the PostgreSQL store has: migrations under an advisory lock, many real processes
writing one thread or one working memory, schema options, connection errors, search safety.

The conformance suite (``tests/conformance``) checks its behaviour like every other store's.
These tests need ``MEMVAULT_TEST_POSTGRES_URL``; without it they skip (and fail with
``MEMVAULT_REQUIRE_POSTGRES=1``). Each uses fresh schemas, dropped afterwards.

The multi-process tests run this very file as a script (``python <this file> <task> <url>
<index>``): a worker imports memvault, prints ``@@ready`` and waits on stdin until the parent,
having seen every worker ready, answers ``go``, so all of them really start together. A worker
never lets an exception escape: it prints ``@@result`` with what it did or the traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from postgres_server import conninfo, postgres_url, with_params

WORKERS = 8
RESOURCE = "res"

# --------------------------------------------------------------------------------------------
# The worker side: runs in the child processes.
# --------------------------------------------------------------------------------------------


async def _barrier() -> None:
    """Wait for the parent's ``go`` (every worker is ready)."""
    await asyncio.to_thread(sys.stdin.readline)


async def _worker(task: str, url: str, index: int) -> dict[str, Any]:
    from memvault import Memory, Message

    if task == "open":
        await _barrier()  # every worker opens the fresh schema at once
        async with await Memory.open(url):
            return {"opened": True}
    async with await Memory.open(url) as memory:
        await _barrier()
        if task == "save":  # 100 messages into one thread, in batches of 1-3
            saved: list[list[Any]] = []
            i = 0
            while i < 100:
                batch = [Message.user(f"worker {index} message {j}", id=f"w{index}.m{j}")
                         for j in range(i, min(i + 1 + (i + index) % 3, 100))]
                out = await memory.save_messages(batch, thread_id="t", resource_id=RESOURCE)
                saved += [[m.id, m.seq] for m in out]
                i += len(batch)
            return {"saved": saved}
        if task == "append":  # 25 appends to one working memory
            for j in range(25):
                await memory.update_working_memory(f"w{index} line {j}", resource_id=RESOURCE,
                                                   mode="append")
            return {"appended": 25}
    raise ValueError(f"unknown task {task!r}")


def _worker_main(task: str, url: str, index: int) -> None:
    import memvault  # noqa: F401  (imported before the barrier, so the start is simultaneous)

    print("@@ready", flush=True)
    try:
        result: dict[str, Any] = asyncio.run(_worker(task, url, index))
    except BaseException:
        result = {"error": traceback.format_exc()}
    print("@@result " + json.dumps(result), flush=True)


# --------------------------------------------------------------------------------------------
# The test side.
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> str:
    return postgres_url("the PostgreSQL store's tests")


def _sql(server: str, statement: Any, args: Any = None) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(conninfo(server), autocommit=True) as conn:
        cursor = conn.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


@pytest.fixture
def schemas(server: str) -> Iterator[list[str]]:
    """Names of fresh schemas to use (append one with ``new``); all dropped afterwards."""
    from psycopg import sql

    made: list[str] = []
    yield made
    for name in made:
        _sql(server, sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def _new(schemas: list[str], name: str | None = None) -> str:
    schemas.append(name or f"memvault_test_{uuid.uuid4().hex[:16]}")
    return schemas[-1]


@pytest.fixture
async def memory(server: str, schemas: list[str]) -> AsyncIterator[Any]:
    from memvault import Memory

    async with await Memory.open(with_params(server, schema=_new(schemas))) as opened:
        yield opened


def _run_workers(task: str, url: str) -> list[dict[str, Any]]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, task, url, str(i)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # tests/, for its helpers, before the caller's path (the memvault under test)
            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).parents[1]), *filter(None, [os.environ.get("PYTHONPATH")])])},
        )
        for i in range(WORKERS)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stderr is not None
            line = proc.stdout.readline()
            assert line.strip() == "@@ready", f"worker did not start: {line!r} {proc.stderr.read()}"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            lines = [line for line in out.splitlines() if line.startswith("@@result ")]
            assert lines, f"worker printed no result; stderr: {err}"
            results.append(json.loads(lines[-1].removeprefix("@@result ")))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    errors = [r["error"] for r in results if "error" in r]
    assert not errors, "\n".join(errors)
    return results


def test_migrations_run_once_with_many_processes_opening_a_new_schema(
    server: str, schemas: list[str]
) -> None:
    from psycopg import sql

    from memvault.stores.postgres.schema import LATEST

    schema = _new(schemas)
    _run_workers("open", with_params(server, schema=schema))
    rows = _sql(server, sql.SQL("SELECT version FROM {}.memvault_schema_version").format(
        sql.Identifier(schema)))
    assert rows == [(LATEST,)]


def test_concurrent_saves_into_one_thread_get_seqs_1_to_800(server: str, schemas: list[str]) -> None:
    url = with_params(server, schema=_new(schemas))
    results = _run_workers("save", url)

    async def stored() -> list[Any]:
        from memvault import Memory

        async with await Memory.open(url) as memory:
            return await memory.get_messages(thread_id="t", resource_id=RESOURCE)

    messages = asyncio.run(stored())
    assert [m.seq for m in messages] == list(range(1, WORKERS * 100 + 1))
    expected = {f"w{i}.m{j}" for i in range(WORKERS) for j in range(100)}
    assert {m.id for m in messages} == expected and len(messages) == len(expected)
    by_id = {m.id: m.seq for m in messages}
    for result in results:  # each worker was told the seq its message is stored at
        assert all(by_id[message_id] == seq for message_id, seq in result["saved"])
        worker_seqs = [seq for _, seq in result["saved"]]
        assert worker_seqs == sorted(worker_seqs)  # a worker's own messages stay in its order


async def test_concurrent_saves_of_the_same_ids_store_each_once_without_gaps(memory: Any) -> None:
    """Saves of overlapping ids on many connections at once: a save finds the ids the thread has
    only after it holds the thread's lock, so every id is stored once, seqs stay 1..n without a
    gap, and each save is told the seq its messages are stored at."""
    from memvault import Message

    async def save(round_: int, writer: int) -> list[tuple[str, int]]:
        batch = [Message.user(f"shared {i} by {writer}", id=f"r{round_}.shared{i}") for i in range(4)]
        batch.append(Message.user(f"own {writer}", id=f"r{round_}.own{writer}"))
        saved = await memory.save_messages(batch[writer % 5:] + batch[:writer % 5], thread_id="t",
                                           resource_id=RESOURCE)
        return [(m.id, m.seq) for m in saved]

    told: list[tuple[str, int]] = []
    for round_ in range(5):
        for result in await asyncio.gather(*(save(round_, w) for w in range(8))):
            told += result
    stored = await memory.get_messages(thread_id="t", resource_id=RESOURCE)
    assert [m.seq for m in stored] == list(range(1, len(stored) + 1))
    assert len(stored) == len({m.id for m in stored}) == 5 * (4 + 8)
    by_id = {m.id: m.seq for m in stored}
    assert all(by_id[message_id] == seq for message_id, seq in told)


def test_concurrent_working_memory_appends_lose_nothing(server: str, schemas: list[str]) -> None:
    url = with_params(server, schema=_new(schemas))
    _run_workers("append", url)

    async def stored() -> str | None:
        from memvault import Memory

        async with await Memory.open(url) as memory:
            return await memory.get_working_memory(resource_id=RESOURCE)

    content = asyncio.run(stored())
    assert content is not None
    expected = [f"w{i} line {j}" for i in range(WORKERS) for j in range(25)]
    assert sorted(content.split("\n")) == sorted(expected)
    for i in range(WORKERS):  # each worker's lines in its order
        mine = [line for line in content.split("\n") if line.startswith(f"w{i} ")]
        assert mine == [f"w{i} line {j}" for j in range(25)]


@pytest.mark.parametrize("seed", [7, 8, 9])
async def test_mixed_concurrent_writes_never_deadlock(
    memory: Any, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Saves, deletions (messages, threads, the resource), expiry, summaries, titles, thread
    states, vectors and working-memory updates on a few threads at once: the store's lock order
    leaves no deadlock to retry. (Before vectors share-locked their threads first, about one run
    in fifteen met one: a vector write holding message rows that a thread's deletion was deleting
    in another order; before expiry locked its threads first, every run met one: expiry deleted
    message rows a vector write held.)"""
    import random
    from datetime import timedelta

    from memvault import Message, NotFoundError
    from memvault.model import now
    from memvault.stores.postgres import db as postgres_db

    monkeypatch.setattr(postgres_db, "RETRIES", 0)  # a deadlock would surface as a StoreError
    rng = random.Random(seed)
    store = memory.store
    await memory.set_retention(timedelta(hours=1), resource_id=RESOURCE)

    async def operation(i: int) -> None:
        ids = [f"m{rng.randint(0, 15)}" for _ in range(rng.randint(1, 4))]
        thread = f"t{rng.randint(0, 2)}"
        kind = rng.choice(["save"] * 6 + ["delete", "clear", "thread", "resource", "expire", "summary",
                                          "unsummary", "title", "state", "vectors", "note", "search"])
        where = {"thread_id": thread, "resource_id": RESOURCE}
        if kind == "save":
            await memory.save_messages([Message.user(f"tea {i}", id=x) for x in ids], **where)
        elif kind == "delete":
            await memory.delete_messages(ids, **where)
        elif kind == "clear":
            await memory.clear_thread(**where)
        elif kind == "thread":
            await memory.delete_thread(**where)
        elif kind == "resource":
            await memory.delete_resource(resource_id=RESOURCE)
        elif kind == "summary":
            with contextlib.suppress(NotFoundError):
                await memory.save_summary("sum", through_message_id=ids[0], expected_version=None, **where)
        elif kind == "vectors":
            rows = [(RESOURCE, thread, x, b"\0" * 8) for x in ids]
            await store.save_embeddings("test/model", 2, rows + rows[::-1])
        elif kind == "unsummary":
            await memory.delete_summary(**where)
        elif kind == "title":
            with contextlib.suppress(NotFoundError):
                await memory.update_thread(title=f"title {i}", **where)
        elif kind == "state":  # a thread's state: deleted with its thread
            with contextlib.suppress(NotFoundError):
                await memory.set_state({"i": i}, key=f"k{rng.randint(0, 2)}", **where)
        elif kind == "expire":  # two hours on: every message of the resource has expired
            await store.expire_messages(now() + timedelta(hours=2), rng.choice([RESOURCE, None]))
        elif kind == "note":
            await memory.update_working_memory(f"line {i}", **where)
        else:
            await memory.search_messages(resource_id=RESOURCE, query="tea")

    await asyncio.gather(*(operation(i) for i in range(1000)))
    for thread in ("t0", "t1", "t2"):
        seqs = [m.seq for m in await memory.get_messages(thread_id=thread, resource_id=RESOURCE)]
        assert seqs == sorted(set(seqs))


async def test_a_newer_schema_version_is_refused(server: str, schemas: list[str]) -> None:
    from psycopg import sql

    from memvault import Memory, SchemaVersionError
    from memvault.stores.postgres.schema import LATEST

    schema = _new(schemas)
    url = with_params(server, schema=schema)
    async with await Memory.open(url) as memory:
        await memory.save_messages([{"role": "user", "parts": [{"type": "text", "text": "kept"}]}],
                                   thread_id="t", resource_id=RESOURCE)
    table = sql.SQL("{}.memvault_schema_version").format(sql.Identifier(schema))
    _sql(server, sql.SQL("UPDATE {} SET version = %s").format(table), (LATEST + 1,))
    with pytest.raises(SchemaVersionError, match=f"version {LATEST + 1}.*upgrade memvault"):
        await Memory.open(url)
    assert _sql(server, sql.SQL("SELECT version FROM {}").format(table)) == [(LATEST + 1,)]


async def test_an_unreachable_server_raises_store_error_quickly() -> None:
    from memvault import Memory
    from memvault.errors import StoreError

    started = time.monotonic()
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:1/nowhere.*(refused|failed)"):
        await Memory.open("postgresql://postgres@127.0.0.1:1/nowhere")
    assert time.monotonic() - started < 5


async def test_open_store_takes_both_schemes_and_the_schema_option(
    server: str, schemas: list[str]
) -> None:
    from memvault import Memory
    from memvault.stores import open_store
    from memvault.stores.postgres import PostgresStore

    odd = _new(schemas, f'odd "schema"; drop {uuid.uuid4().hex[:6]}')  # quoted, never interpolated
    plain = _new(schemas)
    legacy = with_params(server.replace("postgresql://", "postgres://", 1), schema=odd)
    store = await open_store(legacy)
    try:
        assert isinstance(store, PostgresStore) and store.schema == odd
    finally:
        await store.close()
    async with await Memory.open(with_params(server, schema=odd)) as first, \
            await Memory.open(with_params(server, schema=plain)) as second:
        await first.save_messages([{"role": "user", "parts": [{"type": "text", "text": "in odd"}]}],
                                  thread_id="t", resource_id=RESOURCE)
        assert await second.get_messages(thread_id="t", resource_id=RESOURCE) == []
        assert [m.text for m in await first.get_messages(thread_id="t", resource_id=RESOURCE)] == [
            "in odd"]


@pytest.mark.parametrize(
    "options", ["min_size=x", "max_size=0", "min_size=5&max_size=2", "schema=", "schema=" + "s" * 64]
)
async def test_bad_options_are_configuration_errors(server: str, options: str) -> None:
    from memvault import ConfigurationError
    from memvault.stores import open_store

    with pytest.raises(ConfigurationError):
        await open_store(with_params(server, **dict(parse_qsl(options, keep_blank_values=True))))


async def test_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.errors import MissingExtraError
    from memvault.stores import open_store

    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "memvault.stores.postgres", raising=False)
    monkeypatch.delitem(sys.modules, "memvault.stores.postgres.store", raising=False)
    with pytest.raises(MissingExtraError, match=r"memvault\[postgres\]"):
        await open_store("postgresql://postgres@127.0.0.1/x")


HOSTILE = [
    "'; DROP TABLE messages; --", "a & b | !c", '"unterminated', "<->", ":*", "tea:*", "!tea",
    "tea <-> green", "tea <2> green", "'tea'", "\\'", "(tea", "tea & !", "中文", "茶 💥", "🎉🎉",
    "$$", "%s %(x)s", "{}", "\\x00", "x" * 3000, " | ".join(["tea"] * 300), "ñandú", "\u200b",
]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_search_strings_are_plain_words(memory: Any, query: str) -> None:
    from memvault import Message

    await memory.save_messages(
        [Message.user("green tea 中文 and ñandú", id="tea"), Message.user("coffee", id="coffee")],
        thread_id="t", resource_id=RESOURCE,
    )
    for thread_id in (None, "t"):
        hits = await memory.search_messages(resource_id=RESOURCE, query=query, thread_id=thread_id)
        assert isinstance(hits, list) and {h.message.id for h in hits} <= {"tea"}
    assert [m.id for m in await memory.get_messages(thread_id="t", resource_id=RESOURCE)] == [
        "tea", "coffee"]
    hits = await memory.search_messages(resource_id=RESOURCE, query="coffee")
    assert [h.message.id for h in hits] == ["coffee"]


async def test_rebuild_search_index_recomputes_the_search_column(
    server: str, memory: Any, schemas: list[str]
) -> None:
    from psycopg import sql

    from memvault import Message

    await memory.save_messages([Message.user("running shoes", id="a"), Message.user("tea", id="b")],
                               thread_id="t", resource_id=RESOURCE)
    _sql(server, sql.SQL("UPDATE {}.messages SET search = ''::tsvector").format(
        sql.Identifier(schemas[-1])))
    assert await memory.search_messages(resource_id=RESOURCE, query="run") == []
    assert await memory.store.rebuild_search_index() == 2
    assert [h.message.id for h in await memory.search_messages(resource_id=RESOURCE, query="run")] == ["a"]


if __name__ == "__main__":
    _worker_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))


async def test_titles_folded_by_lower_before_migration_8_are_folded_again(
        server: str, schemas: list[str]) -> None:
    """Migration 8 folded existing titles with ``lower()``, which keeps accents and full-width
    forms; migration 10 folds them as writes do, in pages (1,004 threads: more than one page),
    so ``title_contains`` finds them."""
    from psycopg import sql

    from memvault import Memory
    from memvault.rules.words import fold

    schema = _new(schemas)
    url = with_params(server, schema=schema)
    titles = {"accent": "Café Noir", "wide": "\uff26\uff35\uff2c\uff2c width"}  # full-width FULL
    async with await Memory.open(url) as memory:
        for thread_id, title in titles.items():
            await memory.create_thread(resource_id=RESOURCE, thread_id=thread_id, title=title)
        for n in range(1002):
            await memory.create_thread(resource_id=RESOURCE, thread_id=f"t{n:04}", title=f"Été {n}")
    threads = sql.SQL("{}.threads").format(sql.Identifier(schema))
    # as migration 8 left them:
    _sql(server, sql.SQL("UPDATE {} SET title_fold = lower(title)").format(threads))
    _sql(server, sql.SQL("UPDATE {}.memvault_schema_version SET version = 9").format(sql.Identifier(schema)))
    async with await Memory.open(url) as memory:
        for thread_id, query in (("accent", "cafe"), ("wide", "full")):
            page = await memory.list_threads(resource_id=RESOURCE, title_contains=query)
            assert [t.id for t in page.threads] == [thread_id], query
        # "Été 100", "Été 1000", "Été 1001":
        assert await memory.count_threads(resource_id=RESOURCE, title_contains="ete 100") == 3
    rows = _sql(server, sql.SQL("SELECT title, title_fold FROM {}").format(threads))
    assert len(rows) == 1004 and all(folded == fold(title) for title, folded in rows)


async def test_a_word_is_one_lexeme_whatever_the_servers_locale(server: str, schemas: list[str]) -> None:
    """Every stored and searched word reaches PostgreSQL's parser as one plain ASCII word
    (:func:`memvault.stores.postgres.search.lexeme`): a character the server's locale counts as
    a space (U+108FB under C.UTF-8) once split "\\U000108fb42" into "42", so the query matched a
    message saying "42" that the reference store does not match. Migration 11 indexes again the
    messages written before (parts beyond ASCII, lexemes starting with "x"), in batches."""
    from psycopg import sql

    from memvault import Memory, Message
    from memvault.rules.words import tokens

    schema = _new(schemas)
    url = with_params(server, schema=schema)
    said = {"digits": "x y z 42", "hatran": "\U000108fb42 here", "cafe": "Café au lait",
            "xbox": "an xbox game", "plain": "green tea"}
    async with await Memory.open(url) as memory:
        await memory.save_messages([Message.user(text, id=key) for key, text in said.items()],
                                   thread_id="t", resource_id=RESOURCE)
        reference = await Memory.open("memory://")
        await reference.save_messages([Message.user(text, id=key) for key, text in said.items()],
                                      thread_id="t", resource_id=RESOURCE)

        async def found(on: Memory, query: str) -> list[str]:
            return sorted(h.message.id for h in await on.search_messages(resource_id=RESOURCE, query=query))

        queries = ["\U000108fb42", "42", "cafe", "café", "xbox", "green", "x"]
        expected = {q: await found(reference, q) for q in queries}
        assert expected["\U000108fb42"] == ["hatran"] and expected["42"] == ["digits"]
        assert {q: await found(memory, q) for q in queries} == expected
        # as a version-10 schema left them: the stemmed tokens, each parsed by the server
        messages = sql.SQL("{}.messages").format(sql.Identifier(schema))
        for key, text in said.items():
            _sql(server, sql.SQL("UPDATE {} SET search = to_tsvector('simple', %s) WHERE id = %s").format(
                messages), (" ".join(tokens(text)), key))
        assert await found(memory, "\U000108fb42") == await found(memory, "xbox") == []
        await reference.close()
    _sql(server, sql.SQL("UPDATE {}.memvault_schema_version SET version = 10").format(sql.Identifier(schema)))
    async with await Memory.open(url) as memory:
        assert {q: await found(memory, q) for q in queries} == expected
