"""PgVectorIndex: a :class:`~memvault.vectors.base.VectorIndex` in a PostgreSQL table with
pgvector's HNSW index (needs pgvector >= 0.8 on the server and ``pip install
'memvault[postgres,vectors]'``: psycopg 3, its pool, numpy).

**The table** (``{schema}.{table}``, created on first use with its indexes)::

    id          text COLLATE "C" PRIMARY KEY     -- the caller's id, unique across the table
    resource_id text COLLATE "C" NOT NULL
    thread_id   text COLLATE "C" NOT NULL
    message_id  text COLLATE "C"
    created_at  timestamptz
    embedding   vector(d) NOT NULL               -- halfvec(d) with halfvec=True

with an HNSW index (``vector_cosine_ops`` / ``halfvec_cosine_ops``, ``WITH (m, ef_construction)``)
and a btree on ``(resource_id, thread_id)``. The extension, the schema, the table and its indexes
are created once, in one transaction under an advisory lock, so any number of processes may
open a new table at once. A table that exists with another vector type or dimension count raises
:class:`~memvault.errors.ConfigurationError` (``m`` and ``ef_construction`` apply only when the
index is made).

**Search** runs in one transaction: ``SET LOCAL hnsw.ef_search`` (at least ``top_k``),
``hnsw.iterative_scan`` (``relaxed_order`` by default), ``hnsw.max_scan_tuples`` and
``plan_cache_mode = force_custom_plan`` (each search is planned for its own resource and thread,
not with a generic plan of a prepared statement), then the
``top_k`` nearest by ``<=>`` (cosine distance) among the rows of the resource (and thread),
re-sorted exactly (distance, then id) in an outer query. PostgreSQL's planner chooses between
the HNSW index (approximate; with an iterative scan, it keeps scanning the graph until ``top_k``
rows pass the filter or ``max_scan_tuples`` are visited) and the btree (exact, for selective
filters). If that returns fewer than ``top_k`` hits (the filter holds fewer rows, or the graph
scan gave up), the search is answered again exactly, ordered by ``(distance, id)``, which no
HNSW index can serve: so a search returns ``top_k`` hits whenever the resource (thread) holds
that many. :attr:`PgVectorIndex.exact_fallbacks` counts those searches (a resource or thread
holding fewer than ``top_k`` vectors always takes that second query).

**Scores** are ``1 - (a <=> b)``, clamped to ``[-1, 1]``: the cosine similarity, computed by the
server in single precision (with ``halfvec``, of the vectors and the query in half precision).

**Vectors** are validated and L2-normalised like the other indexes' (a refused batch writes
nothing) and sent in pgvector's binary format (queries as binary parameters, batches through
``COPY`` into a temporary table), then
upserted (``INSERT ... ON CONFLICT (id) DO UPDATE``) in one transaction. :meth:`get` returns them
as float32 arrays (with ``halfvec``, the half-precision values stored, so only about 3 decimal
digits exact). ``created_at`` is kept as ``timestamptz``: an aware datetime comes back as the
same instant (in UTC); a naive one is taken as UTC and comes back aware.

**Connections**: give a URL (``postgresql://...?schema=name&min_size=1&max_size=10``, as for
the PostgreSQL store: the index opens and owns a pool, closed by :meth:`close`) or an open
psycopg ``AsyncConnectionPool`` (left open). Nothing connects before the first call (or
:meth:`open`). Writes are retried after a deadlock or serialization failure; other server
failures raise :class:`~memvault.errors.StoreError` naming the server.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, TypeAlias, TypeVar

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import AsyncConnection, errors, sql
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memvault.errors import ConfigurationError, MemvaultError, StoreError
from memvault.stores.postgres.db import reason
from memvault.stores.postgres.store import DEFAULT_CONNECT_TIMEOUT, postgres_options
from memvault.vectors import validate
from memvault.vectors.base import Vector, VectorHit, VectorItem

Conn: TypeAlias = AsyncConnection[TupleRow]
T = TypeVar("T")
IterativeScan: TypeAlias = bool | Literal["relaxed_order", "strict_order", "off"]

RETRIES = 8
"""Times a write is run again after a deadlock or a serialization failure."""
MAX_DIMENSIONS = {"vector": 2000, "halfvec": 4000}
"""The most dimensions pgvector's HNSW index takes for each type."""
_LOCK_KEY = "memvault.pgvector.setup"
_EPOCH_2000 = datetime(2000, 1, 1, tzinfo=UTC)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_TRAILER = struct.pack(">h", -1)
_NULL = struct.pack(">i", -1)
AUTO_EF_BASE = 200
"""``ef_search="auto"``: the list length for tables up to :data:`AUTO_EF_ROWS` rows."""
AUTO_EF_ROWS = 250_000
"""``ef_search="auto"``: beyond this many rows the list grows with the square root of the rows."""
_MEMORY_SETTING = re.compile(r"[1-9][0-9]{0,9}(kB|MB|GB|TB)")


class PgVectorIndex:
    """Vectors in a PostgreSQL table, searched with pgvector's HNSW index. See the module
    docstring for the table, the search and what each option does.

    ``PgVectorIndex("postgresql://postgres@localhost/db?schema=agents", 384)``; use it as an
    async context manager, or call :meth:`close` when done.

    - ``schema``: the table's schema; by default the URL's ``?schema=`` or ``public``.
    - ``table``: the table's name (its indexes are named after it).
    - ``m`` / ``ef_construction``: the HNSW index's build options.
    - ``ef_search`` (default ``"auto"``): the HNSW candidate list of a search (raised to
      ``top_k`` when smaller). pgvector's graph spans the whole table, and a larger graph needs a
      longer list for the same recall, so ``"auto"`` takes :func:`auto_ef_search` of the
      table's row estimate (``pg_class.reltuples``, read in the search's settings statement:
      no extra round trip): 200 up to 250,000 rows, growing with the square root of the rows
      beyond (400 at 1M), at most 1000. Measured (384-d, ``memvault bench recall --pgvector
      --pgvector-ef-sweep``, graphs built by :meth:`bulk_load`, which differ from build to
      build): at 100k, recall@10 0.94-0.99 at 100, 0.99-1.0 at 200 (p50 3 ms); at 1M,
      0.88-0.94 at 100, 0.94-0.98 at 258-300, 0.98-0.99 at 400-500 (p50 15-19 ms).
      docs/benchmarks-recall.md has each run. An integer fixes it.
    - ``halfvec``: store half-precision vectors (half the space; scores and :meth:`get` lose
      precision).
    - ``iterative_scan``: pgvector 0.8's iterative index scan for filtered searches: ``True``
      (``relaxed_order``, re-sorted exactly), ``"strict_order"``, or ``False`` (off).
    - ``max_scan_tuples``: where an iterative scan gives up (pgvector's default 20,000).
    """

    def __init__(
        self,
        url_or_pool: str | AsyncConnectionPool[Any],
        dimensions: int,
        *,
        schema: str | None = None,
        table: str = "memvault_vectors",
        m: int = 16,
        ef_construction: int = 64,
        ef_search: int | Literal["auto"] = "auto",
        halfvec: bool = False,
        iterative_scan: IterativeScan = True,
        max_scan_tuples: int = 20_000,
    ) -> None:
        self._dimensions = validate.check_dimensions(dimensions)
        self.type_name = "halfvec" if halfvec else "vector"
        if dimensions > MAX_DIMENSIONS[self.type_name]:
            raise ConfigurationError(
                f"pgvector's HNSW index takes at most {MAX_DIMENSIONS[self.type_name]} dimensions "
                f"of {self.type_name}, not {dimensions}"
                + ("" if halfvec else "; pass halfvec=True for up to 4000")
            )
        fixed_ef = [("ef_search", ef_search, 1, 1000)] if ef_search != "auto" else []
        for name, value, low, high in (("m", m, 2, 100), ("ef_construction", ef_construction, 4, 1000),
                                       *fixed_ef,
                                       ("max_scan_tuples", max_scan_tuples, 1, 2**31 - 1)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigurationError(f"{name} must be an integer from {low} to {high}, got {value!r}")
        if ef_construction < 2 * m:
            raise ConfigurationError(f"ef_construction ({ef_construction}) must be at least 2 * m ({m})")
        scans = {True: "relaxed_order", False: "off", "relaxed_order": "relaxed_order",
                 "strict_order": "strict_order", "off": "off"}
        if iterative_scan not in scans:
            raise ConfigurationError(
                f"iterative_scan must be True, False, 'relaxed_order', 'strict_order' or 'off', "
                f"got {iterative_scan!r}")
        self.iterative_scan: str = scans[iterative_scan]
        self.m, self.ef_construction, self.ef_search = m, ef_construction, ef_search
        self.max_scan_tuples = max_scan_tuples
        self.halfvec = halfvec
        self.exact_fallbacks = 0
        """How many searches the exact fallback answered (see the module docstring)."""
        if isinstance(url_or_pool, str):
            conninfo, url_schema, min_size, max_size, self.where = postgres_options(url_or_pool)
            self._conninfo = conninfo
            if schema is not None and "schema=" in url_or_pool and schema != url_schema:
                raise ConfigurationError(
                    f"the URL names the schema {url_schema!r} but schema={schema!r} was passed")
            self.schema = schema or url_schema
            self._pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                conninfo, kwargs={"autocommit": True}, min_size=min_size, max_size=max_size,
                open=False, name=f"memvault-pgvector:{self.schema}.{table}",
            )
            self._owns_pool = True
        elif isinstance(url_or_pool, AsyncConnectionPool):
            self.schema = schema or "public"
            self.where = f"pool {url_or_pool.name!r}"
            self._pool = url_or_pool
            self._owns_pool = False
        else:
            raise ConfigurationError(
                "url_or_pool must be a postgresql:// URL or a psycopg_pool.AsyncConnectionPool, "
                f"got {type(url_or_pool).__name__}")
        for what, name in (("schema", self.schema), ("table", table)):
            if not name or len(name.encode()) > 54 or "\x00" in name:
                raise ConfigurationError(f"{what} must be a PostgreSQL name of 1 to 54 bytes, got {name!r}")
        self.table = table
        self._ready = False
        self._opening = asyncio.Lock()
        self._closed = False
        self._sql: dict[str, sql.SQL | sql.Composed] = {}
        self._dumper: type[Dumper] = _QueryDumper

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.where}, table={self.schema}.{self.table}, "
                f"dimensions={self._dimensions}, type={self.type_name})")

    @property
    def dimensions(self) -> int:
        return self._dimensions

    # life cycle

    async def open(self) -> None:
        """Open the pool (when the index owns it) and make the table if missing. Every other
        method calls this first; calling it again does nothing."""
        if self._ready:
            return
        async with self._opening:
            if self._ready:
                return
            if self._closed:
                raise StoreError(f"this {type(self).__name__} is closed")
            if self._owns_pool:
                try:  # one connection first: a refused one fails now, with the server's reason
                    conn = await psycopg.AsyncConnection.connect(self._conninfo)
                    await conn.close()
                except psycopg.Error as exc:
                    raise StoreError(
                        f"could not connect to PostgreSQL at {self.where}: {reason(exc)}") from exc
                try:
                    await self._pool.open(wait=True, timeout=DEFAULT_CONNECT_TIMEOUT * 3)
                except PoolTimeout as exc:
                    await self._pool.close()
                    raise StoreError(f"could not open connections to PostgreSQL at {self.where}: "
                                     f"{reason(exc)}") from exc
            extension_schema, oid = await self._write(self._setup)
            self._dumper = type("_VectorDumper", (_QueryDumper,), {"oid": oid})
            self._build_sql(extension_schema)
            self._ready = True

    async def close(self) -> None:
        """Close the pool if the index opened it; closing twice is harmless."""
        self._closed = True
        self._ready = False
        if self._owns_pool:
            await self._pool.close()

    async def __aenter__(self) -> PgVectorIndex:
        await self.open()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.close()

    async def _setup(self, conn: Conn) -> tuple[str, int]:
        """Create the extension, schema, table and indexes where missing; check an existing
        table's vector column. Returns the extension's schema and the vector type's oid."""
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_LOCK_KEY,))
        cursor = await conn.execute(
            "SELECT extnamespace::regnamespace::text, extversion FROM pg_extension WHERE extname = 'vector'")
        row = await cursor.fetchone()
        if row is None:
            await conn.execute("CREATE EXTENSION vector")
            cursor = await conn.execute(
                "SELECT extnamespace::regnamespace::text, extversion FROM pg_extension "
                "WHERE extname = 'vector'")
            row = await cursor.fetchone()
            assert row is not None
        ext_schema, version = str(row[0]).strip('"'), str(row[1])
        cursor = await conn.execute("SELECT %s::regtype::oid",
                                    (sql.Identifier(ext_schema, self.type_name).as_string(conn),))
        type_row = await cursor.fetchone()
        assert type_row is not None
        oid = int(type_row[0])
        if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (0, 8):
            raise ConfigurationError(
                f"PgVectorIndex needs pgvector 0.8 or later (iterative index scans); the server at "
                f"{self.where} has {version}: ALTER EXTENSION vector UPDATE")
        cursor = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,))
        if await cursor.fetchone() is None:
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
        cursor = await conn.execute(
            "SELECT t.typname, a.atttypmod FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' AND NOT a.attisdropped",
            (sql.Identifier(self.schema, self.table).as_string(conn),))
        found = await cursor.fetchone()
        if found is not None:
            if (found[0], found[1]) != (self.type_name, self._dimensions):
                raise ConfigurationError(
                    f"the table {self.schema}.{self.table} at {self.where} holds {found[0]}({found[1]}) "
                    f"embeddings, but this index was made for {self.type_name}({self._dimensions}): "
                    "use another table (or schema), or the model the table was made for")
            return ext_schema, oid
        table = sql.Identifier(self.schema, self.table)
        vector_type = sql.SQL("{}({})").format(sql.Identifier(ext_schema, self.type_name),
                                               sql.Literal(self._dimensions))
        await conn.execute(sql.SQL(
            'CREATE TABLE {table} (id text COLLATE "C" PRIMARY KEY, '
            'resource_id text COLLATE "C" NOT NULL, thread_id text COLLATE "C" NOT NULL, '
            'message_id text COLLATE "C", created_at timestamptz, embedding {vector_type} NOT NULL)'
        ).format(table=table, vector_type=vector_type))
        await conn.execute(self._create_hnsw(ext_schema))
        await conn.execute(sql.SQL("CREATE INDEX {name} ON {table} (resource_id, thread_id)").format(
            name=sql.Identifier(f"{self.table}_scope"), table=table))
        return ext_schema, oid

    def _create_hnsw(self, ext_schema: str) -> sql.Composed:
        return sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw (embedding {ops}) "
            "WITH (m = {m}, ef_construction = {ef})"
        ).format(name=sql.Identifier(f"{self.table}_hnsw"), table=sql.Identifier(self.schema, self.table),
                 ops=sql.Identifier(ext_schema, f"{self.type_name}_cosine_ops"),
                 m=sql.Literal(self.m), ef=sql.Literal(self.ef_construction))

    def _build_sql(self, ext_schema: str) -> None:
        table = sql.Identifier(self.schema, self.table)
        vector_type = sql.SQL("{}({})").format(sql.Identifier(ext_schema, self.type_name),
                                               sql.Literal(self._dimensions))
        distance = sql.SQL("(embedding OPERATOR({}.<=>) %(q)b::{})").format(
            sql.Identifier(ext_schema), vector_type)
        stage = sql.Identifier(f"memvault_stage_{self.type_name}_{self._dimensions}")
        where = sql.SQL("resource_id = %(r)s")
        thread = sql.SQL(" AND thread_id = %(t)s")
        columns = sql.SQL("id, resource_id, thread_id, message_id, created_at, embedding")
        self._sql = {
            "stage": sql.SQL(
                "CREATE TEMPORARY TABLE IF NOT EXISTS {stage} (id text, resource_id text, "
                "thread_id text, message_id text, created_at timestamptz, embedding {vector_type}) "
                "ON COMMIT DELETE ROWS").format(stage=stage, vector_type=vector_type),
            "copy": sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(stage, columns),
            "merge": sql.SQL(
                "INSERT INTO {table} ({columns}) SELECT {columns} FROM {stage} ORDER BY id "
                "ON CONFLICT (id) DO UPDATE SET resource_id = EXCLUDED.resource_id, "
                "thread_id = EXCLUDED.thread_id, message_id = EXCLUDED.message_id, "
                "created_at = EXCLUDED.created_at, embedding = EXCLUDED.embedding"
            ).format(table=table, columns=columns, stage=stage),
            "settings": sql.SQL(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', %s, true), "
                "set_config('hnsw.max_scan_tuples', %s, true), "
                "set_config('plan_cache_mode', 'force_custom_plan', true)"),
            "settings_auto": sql.SQL(  # the same, with ef_search from the table's row estimate
                "SELECT set_config('hnsw.ef_search', least(1000, greatest(%s::int, "
                "round({base} * sqrt(greatest(reltuples, 0) / {rows}))::int))::text, true), "
                "set_config('hnsw.iterative_scan', %s, true), "
                "set_config('hnsw.max_scan_tuples', %s, true), "
                "set_config('plan_cache_mode', 'force_custom_plan', true) "
                "FROM pg_class WHERE oid = {table}::regclass"
            ).format(base=sql.Literal(AUTO_EF_BASE), rows=sql.Literal(float(AUTO_EF_ROWS)),
                     table=sql.Literal(table.as_string())),
        }
        for name, filters in (("", where), ("_thread", where + thread)):
            self._sql["search" + name] = sql.SQL(
                "WITH hits AS MATERIALIZED (SELECT id, thread_id, message_id, {d} AS distance "
                "FROM {table} WHERE {filters} ORDER BY {d} LIMIT %(k)s) "
                "SELECT id, thread_id, message_id, distance FROM hits ORDER BY distance, id"
            ).format(d=distance, table=table, filters=filters)
            self._sql["exact" + name] = sql.SQL(
                "SELECT id, thread_id, message_id, {d} AS distance FROM {table} WHERE {filters} "
                "ORDER BY {d}, id LIMIT %(k)s").format(d=distance, table=table, filters=filters)
        self._sql |= {
            "get": sql.SQL("SELECT id, resource_id, thread_id, message_id, created_at, embedding::text "
                           "FROM {} WHERE id = ANY(%(ids)s)").format(table),
            "delete": sql.SQL("DELETE FROM {} WHERE id = ANY(%(ids)s)").format(table),
            "delete_thread": sql.SQL("DELETE FROM {} WHERE resource_id = %(r)s AND thread_id = %(t)s"
                                     ).format(table),
            "delete_resource": sql.SQL("DELETE FROM {} WHERE resource_id = %(r)s").format(table),
            "clear": sql.SQL("DELETE FROM {}").format(table),
            "create_hnsw": self._create_hnsw(ext_schema),
            "drop_hnsw": sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(self.schema, f"{self.table}_hnsw")),
            "count": sql.SQL("SELECT count(*) FROM {}").format(table),
            "count_resource": sql.SQL("SELECT count(*) FROM {} WHERE resource_id = %(r)s").format(table),
        }

    # the protocol

    async def upsert(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        batch = validate.batch(items, self._dimensions)
        await self.open()
        payload = self._copy_payload(batch)
        await self._write(self._upsert, payload)

    async def search(
        self,
        vector: Vector,
        *,
        resource_id: str,
        thread_id: str | None = None,
        top_k: int = 10,
        min_score: float | None = None,
    ) -> list[VectorHit]:
        query = validate.search(vector, self._dimensions, resource_id, thread_id, top_k)
        await self.open()
        params = {"q": _QueryVector(self._vector_bytes(query)), "r": resource_id, "t": thread_id,
                  "k": top_k}
        suffix = "" if thread_id is None else "_thread"
        rows = await self._write(self._search, params, suffix)
        if len(rows) < top_k:
            self.exact_fallbacks += 1
            rows = await self._read(self._fetch, self._sql["exact" + suffix], params)
        hits = []
        for id_, thread, message_id, distance in rows:
            score = min(1.0, max(-1.0, 1.0 - float(distance)))
            if min_score is None or score >= float(np.float32(min_score)):
                hits.append(VectorHit(id_, score, resource_id, thread, message_id))
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits

    async def delete(self, ids: Sequence[str], *, resource_id: str | None = None) -> int:
        checked = validate.check_ids(ids)
        if not checked:
            return 0
        await self.open()
        query = self._sql["delete"]
        if resource_id is not None:
            query = query + sql.SQL(" AND resource_id = %(r)s")
        return await self._write(self._rowcount, query, {"ids": checked, "r": resource_id})

    async def delete_thread(self, resource_id: str, thread_id: str) -> int:
        validate.check_key(resource_id, "resource_id")
        validate.check_key(thread_id, "thread_id")
        await self.open()
        return await self._write(self._rowcount, self._sql["delete_thread"],
                                 {"r": resource_id, "t": thread_id})

    async def delete_resource(self, resource_id: str) -> int:
        validate.check_key(resource_id, "resource_id")
        await self.open()
        return await self._write(self._rowcount, self._sql["delete_resource"], {"r": resource_id})

    async def clear(self) -> int:
        await self.open()
        return await self._write(self._rowcount, self._sql["clear"], {})

    async def count(self, resource_id: str | None = None) -> int:
        if resource_id is not None:
            validate.check_key(resource_id, "resource_id")
        await self.open()
        if resource_id is None:
            rows = await self._read(self._fetch, self._sql["count"], {})
        else:
            rows = await self._read(self._fetch, self._sql["count_resource"], {"r": resource_id})
        return int(rows[0][0])

    async def get(self, ids: Sequence[str], *, resource_id: str | None = None) -> list[VectorItem]:
        checked = validate.check_ids(ids)
        if not checked:
            return []
        await self.open()
        query = self._sql["get"]
        if resource_id is not None:
            query = query + sql.SQL(" AND resource_id = %(r)s")
        rows = await self._read(self._fetch, query, {"ids": list(dict.fromkeys(checked)),
                                                     "r": resource_id})
        found = {
            row[0]: VectorItem(row[0], _parse_vector(row[5]), row[1], row[2], row[3],
                               None if row[4] is None else row[4].astimezone(UTC))
            for row in rows
        }
        return [found[id_] for id_ in checked if id_ in found]

    # maintenance

    async def analyze(self) -> None:
        """Refresh the planner's statistics of the table (``ANALYZE``), e.g. after a bulk load,
        so that it chooses well between the HNSW index and the btree."""
        await self.open()
        await self._write(self._execute, sql.SQL("ANALYZE {}").format(
            sql.Identifier(self.schema, self.table)))

    @asynccontextmanager
    async def bulk_load(self, *, maintenance_work_mem: str = "2GB",
                        parallel_workers: int = 2) -> AsyncIterator[PgVectorIndex]:
        """Load many vectors at once: the HNSW index is dropped on entering, the vectors
        upserted inside the block go into the bare table, and the index is built once over all
        of them on leaving (also when the block fails: the table never stays without it), then
        the table is analysed. Building once is far faster than inserting each vector into a
        growing graph (upserts into an existing index stay the normal path).

        ``maintenance_work_mem`` (default ``"2GB"``, a PostgreSQL memory setting such as
        ``"512MB"``) is what the build may use: pgvector builds much faster while the graph
        fits in it (about 1.7 GB for 1M 384-d vectors with ``m=16``), and it is taken from the
        server's RAM for the build's duration. ``parallel_workers`` (default 2) is
        ``max_parallel_maintenance_workers`` for the build (0: the leader alone).

        While the block runs, searches of this table (from any process) are exact scans: slow
        on a large table, but correct."""
        if not _MEMORY_SETTING.fullmatch(maintenance_work_mem):
            raise ConfigurationError(
                f"maintenance_work_mem must be a PostgreSQL memory setting such as '512MB' or "
                f"'2GB', got {maintenance_work_mem!r}")
        if isinstance(parallel_workers, bool) or not isinstance(parallel_workers, int) \
                or not 0 <= parallel_workers <= 64:
            raise ConfigurationError(f"parallel_workers must be an integer from 0 to 64, got "
                                     f"{parallel_workers!r}")
        await self.open()
        await self._write(self._execute, self._sql["drop_hnsw"])
        try:
            yield self
        finally:
            await self._write(self._build_hnsw, maintenance_work_mem, parallel_workers)
            await self.analyze()

    async def _build_hnsw(self, conn: Conn, memory: str, workers: int) -> None:
        await conn.execute("SELECT set_config('maintenance_work_mem', %s, true), "
                           "set_config('max_parallel_maintenance_workers', %s, true)",
                           (memory, str(workers)))
        await conn.execute(self._sql["create_hnsw"])

    async def info(self) -> dict[str, Any]:
        """The table's rows and on-disk sizes (bytes: ``table_bytes`` with TOAST, ``hnsw_bytes``,
        ``total_bytes`` with every index) and the server's and pgvector's versions."""
        await self.open()
        name = sql.Identifier(self.schema, self.table).as_string()
        hnsw = sql.Identifier(self.schema, f"{self.table}_hnsw").as_string()
        rows = await self._read(self._fetch, sql.SQL(
            "SELECT (SELECT count(*) FROM {}), pg_table_size(%(t)s::regclass), "
            "pg_relation_size(%(i)s::regclass), pg_total_relation_size(%(t)s::regclass), "
            "current_setting('server_version'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        ).format(sql.Identifier(self.schema, self.table)), {"t": name, "i": hnsw})
        keys = ("rows", "table_bytes", "hnsw_bytes", "total_bytes", "server_version", "pgvector_version")
        return dict(zip(keys, rows[0], strict=True))

    async def drop_table(self) -> None:
        """Drop the table and its indexes: every vector of this index is gone. The next call
        makes the table again."""
        await self.open()
        await self._write(self._execute, sql.SQL("DROP TABLE IF EXISTS {}").format(
            sql.Identifier(self.schema, self.table)))
        self._ready = False

    # transaction bodies

    @staticmethod
    async def _execute(conn: Conn, query: sql.Composed) -> None:
        await conn.execute(query)

    async def _upsert(self, conn: Conn, payload: bytes) -> None:
        await conn.execute(self._sql["stage"])
        async with conn.cursor().copy(self._sql["copy"]) as copy:
            await copy.write(payload)
        await conn.execute(self._sql["merge"])

    async def _search(self, conn: Conn, params: dict[str, Any], suffix: str) -> list[TupleRow]:
        conn.adapters.register_dumper(_QueryVector, self._dumper)
        top_k = int(params["k"])
        if self.ef_search == "auto":
            await conn.execute(self._sql["settings_auto"],
                               (max(AUTO_EF_BASE, top_k), self.iterative_scan, str(self.max_scan_tuples)))
        else:
            await conn.execute(self._sql["settings"], (str(min(1000, max(self.ef_search, top_k))),
                                                       self.iterative_scan, str(self.max_scan_tuples)))
        cursor = await conn.execute(self._sql["search" + suffix], params)
        return await cursor.fetchall()

    async def _fetch(self, conn: Conn, query: sql.SQL | sql.Composed,
                     params: dict[str, Any]) -> list[TupleRow]:
        if isinstance(params.get("q"), _QueryVector):
            conn.adapters.register_dumper(_QueryVector, self._dumper)
        cursor = await conn.execute(query, params)
        return await cursor.fetchall()

    @staticmethod
    async def _rowcount(conn: Conn, query: sql.SQL | sql.Composed, params: dict[str, Any]) -> int:
        cursor = await conn.execute(query, params)
        return max(0, cursor.rowcount)

    # running

    async def _read(self, body: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``body(conn, *args)`` on a pooled connection, in a transaction (nothing written)."""
        try:
            async with self._pool.connection() as conn, conn.transaction():
                return await body(conn, *args)
        except MemvaultError:
            raise
        except psycopg.Error as exc:
            raise self._failure(exc) from exc

    async def _write(self, body: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``body(conn, *args)`` in one transaction, run again after a deadlock or a
        serialization failure."""
        for attempt in range(RETRIES + 1):
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    return await body(conn, *args)
            except (errors.DeadlockDetected, errors.SerializationFailure) as exc:
                if attempt == RETRIES:
                    raise self._failure(exc) from exc
                await asyncio.sleep(random.uniform(0, 0.01 * 2**attempt))
            except MemvaultError:
                raise
            except psycopg.Error as exc:
                raise self._failure(exc) from exc
        raise AssertionError("unreachable")

    def _failure(self, exc: Exception) -> StoreError:
        return StoreError(f"PostgreSQL at {self.where} failed ({self.schema}.{self.table}): {reason(exc)}")

    def _vector_bytes(self, vector: NDArray[np.float32]) -> bytes:
        """pgvector's binary form of one vector (``halfvec``'s with ``halfvec``)."""
        data = vector.astype(">f2" if self.halfvec else ">f4").tobytes()
        return struct.pack(">hh", self._dimensions, 0) + data

    def _copy_payload(self, batch: validate.Batch) -> bytes:
        """The batch as a binary ``COPY`` stream of the staging table's six columns."""
        element = ">f2" if self.halfvec else ">f4"
        matrix = batch.matrix.astype(element)
        vector_head = struct.pack(">ihh", 4 + matrix.itemsize * self._dimensions, self._dimensions, 0)
        parts = [_COPY_HEADER]
        fields = struct.pack(">h", 6)
        for i, id_ in enumerate(batch.ids):
            parts.append(fields)
            for text in (id_, batch.resource_ids[i], batch.thread_ids[i], batch.message_ids[i]):
                parts.append(_NULL if text is None else _text(text))
            created = batch.created_ats[i]
            parts.append(_NULL if created is None else _timestamp(created))
            parts.append(vector_head)
            parts.append(matrix[i].tobytes())
        parts.append(_COPY_TRAILER)
        return b"".join(parts)


def auto_ef_search(rows: float, top_k: int = 10) -> int:
    """The ``ef_search`` that ``ef_search="auto"`` uses for a table of ``rows`` rows (the
    search's settings statement computes the same formula in SQL): ``AUTO_EF_BASE`` (at least
    ``top_k``) up to ``AUTO_EF_ROWS`` rows, then ``AUTO_EF_BASE * sqrt(rows / AUTO_EF_ROWS)``,
    at most 1000."""
    grown = round(AUTO_EF_BASE * math.sqrt(max(rows, 0) / AUTO_EF_ROWS))
    return min(1000, max(AUTO_EF_BASE, top_k, grown))


def _text(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">i", len(data)) + data


def _timestamp(value: datetime) -> bytes:
    """A ``timestamptz`` in binary: microseconds since 2000-01-01 UTC (naive taken as UTC)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    delta = aware - _EPOCH_2000
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return struct.pack(">iq", 8, micros)


class _QueryVector:
    """A query vector in pgvector's binary form, sent as a binary parameter (see
    :class:`_QueryDumper`)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class _QueryDumper(Dumper):
    """Dumps a :class:`_QueryVector` as is; each index subclasses it with its type's ``oid``."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        data: bytes = obj.data
        return data


def _parse_vector(text: str) -> NDArray[np.float32]:
    values: NDArray[np.float32] = np.array(text[1:-1].split(","), dtype=np.float32)
    return values
