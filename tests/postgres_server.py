"""The PostgreSQL server the tests use, shared by every test module that needs one.

``MEMVAULT_TEST_POSTGRES_URL`` names it (e.g. ``postgresql://postgres@127.0.0.1:5432/memvault_test``).
Without it, or when it cannot be reached, the tests that need it skip and say why; with
``MEMVAULT_REQUIRE_POSTGRES=1`` (as ``.ci/run`` sets) they fail instead, so a skip in CI fails
the run. Each test works in a schema of its own (``with_schema``), dropped afterwards.
"""

from __future__ import annotations

import os
from functools import cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest


def postgres_url(what: str = "the PostgreSQL tests") -> str:
    """The test server's URL; skips the calling test when there is none (fails it when
    ``MEMVAULT_REQUIRE_POSTGRES=1``). ``what`` names the tests in the skip reason."""
    url = os.environ.get("MEMVAULT_TEST_POSTGRES_URL")
    problem = _problem(url) if url else (
        f"set MEMVAULT_TEST_POSTGRES_URL (e.g. postgresql://postgres@127.0.0.1:5432/memvault_test) "
        f"to run {what}"
    )
    if problem is None and url:
        return url
    if os.environ.get("MEMVAULT_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"MEMVAULT_REQUIRE_POSTGRES=1 but {problem}", pytrace=False)
    pytest.skip(problem)


@cache
def _problem(url: str) -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed: pip install -e '.[postgres]'"
    try:
        psycopg.connect(conninfo(url), connect_timeout=5).close()
    except psycopg.Error as exc:
        return f"the PostgreSQL server at MEMVAULT_TEST_POSTGRES_URL is unreachable: {exc}"
    return None


def conninfo(url: str) -> str:
    """``url`` for the driver itself (without memvault's own options such as ``schema``)."""
    from memvault.stores.postgres.store import postgres_options

    return postgres_options(url)[0]


def with_params(url: str, **params: str) -> str:
    """``url`` with these query parameters set (replacing any it had)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in params] + list(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def with_schema(url: str, schema: str) -> str:
    """``url`` naming another schema."""
    return with_params(url, schema=schema)


async def drop_schema(url: str, schema: str) -> None:
    """Drop a test's schema and everything in it."""
    import psycopg
    from psycopg import sql

    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
        await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def schemas_named(url: str, prefix: str) -> set[str]:
    """The database's schemas whose names start with ``prefix`` and an underscore (what a
    benchmark creates and must drop)."""
    import psycopg

    with psycopg.connect(conninfo(url)) as conn:
        rows = conn.execute("SELECT schema_name FROM information_schema.schemata"
                            " WHERE starts_with(schema_name, %s)", (prefix + "_",)).fetchall()
    return {row[0] for row in rows}
