"""Throwaway PostgreSQL schemas for the benchmarks: each run stores into a fresh schema of the
database it is given, named by :func:`fresh_name`, and drops it afterwards."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def is_postgres(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return url.startswith(("postgresql://", "postgres://"))


def fresh_name(prefix: str) -> str:
    """A schema name no other run uses: ``prefix`` and ten random hexadecimal digits."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def with_schema(url: str, schema: str) -> str:
    """``url`` naming ``schema`` (replacing any schema it named)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))


async def drop_schema(url: str, schema: str) -> None:
    """Drop ``schema`` and everything in it from the database of ``url`` (nothing when missing)."""
    import psycopg
    from psycopg import sql

    from memvault.stores.postgres.store import postgres_options

    async with await psycopg.AsyncConnection.connect(postgres_options(url)[0], autocommit=True) as conn:
        await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
