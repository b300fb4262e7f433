"""Opening the PostgreSQL store is honest: each failure is a StoreOpenError (or a
ConfigurationError for a URL memvault cannot use) naming the server and the database, and the
cause, and never the password. Over the real test server: a database that does not exist, a port
nobody listens on, a role that does not exist, a role without the right to create a schema or
tables (created here and dropped afterwards)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from memvault import Memory
from memvault.errors import ConfigurationError, MemvaultError, StoreOpenError
from postgres_server import conninfo, drop_schema, postgres_url, with_params

PASSWORD = "s3cret-never-shown"


def _url(**changes: str) -> str:
    """The test server's URL with another user, password, port or database."""
    parts = urlsplit(postgres_url("the PostgreSQL open tests"))
    user = changes.get("user", parts.username or "postgres")
    password = changes.get("password", PASSWORD)
    host = parts.hostname or "127.0.0.1"
    port = changes.get("port", str(parts.port or 5432))
    database = changes.get("database", parts.path.lstrip("/"))
    return urlunsplit(("postgresql", f"{user}:{password}@{host}:{port}", f"/{database}", parts.query, ""))


async def _open_error(url: str) -> MemvaultError:
    error: MemvaultError | None = None
    try:
        memory = await Memory.open(url)
    except MemvaultError as exc:
        error = exc
    else:
        await memory.close()
        pytest.fail("it opened")
    assert PASSWORD not in str(error) and PASSWORD not in repr(error.args)
    return error


async def test_a_database_that_does_not_exist() -> None:
    error = await _open_error(_url(database="no_such_database_here"))
    assert isinstance(error, StoreOpenError)
    assert "no_such_database_here" in str(error) and "does not exist" in str(error)
    assert error.location.endswith("/no_such_database_here")


async def test_a_server_that_is_not_there() -> None:
    error = await _open_error(with_params(_url(port="1"), connect_timeout="3"))
    assert isinstance(error, StoreOpenError) and ":1/" in str(error)


async def test_a_role_that_does_not_exist() -> None:
    error = await _open_error(_url(user="no_such_role_here"))
    assert isinstance(error, StoreOpenError) and "no_such_role_here" in str(error)


async def test_a_url_that_cannot_be_parsed() -> None:
    error = await _open_error(f"postgresql://postgres:{PASSWORD}@[::1:5432/x")
    assert isinstance(error, ConfigurationError)


@pytest.fixture
async def powerless_role() -> AsyncIterator[str]:
    """A login role with no right to create anything in the test database; dropped after."""
    url = postgres_url("the PostgreSQL open tests")
    role = f"memvault_powerless_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(PASSWORD)))
    try:
        yield role
    finally:
        async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
            await conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            await conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


async def test_a_role_that_cannot_create_the_schema(powerless_role: str) -> None:
    schema = f"memvault_test_{uuid.uuid4().hex[:12]}"
    error = await _open_error(with_params(_url(user=powerless_role), schema=schema))
    assert isinstance(error, StoreOpenError)
    assert schema in str(error) and "permission denied" in str(error) and "CREATE right" in str(error)


async def test_a_role_that_cannot_create_tables_in_the_schema(powerless_role: str) -> None:
    url = postgres_url("the PostgreSQL open tests")
    schema = f"memvault_test_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(conninfo(url), autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        await conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
            sql.Identifier(schema), sql.Identifier(powerless_role)))
    try:
        error = await _open_error(with_params(_url(user=powerless_role), schema=schema))
        assert isinstance(error, StoreOpenError)
        assert schema in str(error) and "permission denied" in str(error)
    finally:
        await drop_schema(url, schema)


def test_the_cli_says_it_in_one_line() -> None:
    url = _url(database="no_such_database_here")
    done = subprocess.run([sys.executable, "-m", "memvault", "stats", "--db", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_database_here" in lines[0], done.stderr
    assert PASSWORD not in done.stderr and PASSWORD not in done.stdout
