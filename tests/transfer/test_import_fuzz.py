"""Fuzzing the import's readers: SQLite's binary JSON decoded as encoded (every size width), any
bytes refused with ValueError only, and any parts a source row may hold either imported or
counted as not carried, never an untyped error."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory
from memvault.transfer import jsonb

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)


def encode(value: Any, width: int) -> bytes:
    """JSONB as https://sqlite.org/jsonb.html describes it; ``width`` picks the size header
    (0: in the first byte when it fits, else at least 1, 2, 4 or 8 bytes)."""
    if value is None or isinstance(value, bool):
        return bytes([0 if value is None else 1 if value else 2])
    if isinstance(value, int):
        kind, payload = 3, str(value).encode()
    elif isinstance(value, float):
        kind, payload = 5, repr(value).encode()
    elif isinstance(value, str):
        kind, payload = 8, json.dumps(value)[1:-1].encode()
    elif isinstance(value, list):
        kind, payload = 11, b"".join(encode(v, width) for v in value)
    else:
        kind, payload = 12, b"".join(encode(k, width) + encode(v, width) for k, v in value.items())
    if width == 0 and len(payload) <= 11:
        return bytes([len(payload) << 4 | kind]) + payload
    width = next(w for w in (1, 2, 4, 8) if w >= width and len(payload) < 256 ** w)
    code = {1: 12, 2: 13, 4: 14, 8: 15}[width]
    return bytes([code << 4 | kind]) + len(payload).to_bytes(width, "big") + payload


@given(JSON, st.sampled_from([0, 1, 2, 4, 8]))
def test_jsonb_decodes_what_was_encoded(value: Any, width: int) -> None:
    assert jsonb.loads(encode(value, width)) == value


@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_value_error(blob: bytes) -> None:
    with contextlib.suppress(ValueError):
        jsonb.loads(blob)


PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "reasoning", "tool-x", "dynamic-tool", "file", "data-y", "step-start",
                              "source-url", "mystery", ""])},
    optional={"text": JSON, "toolCallId": JSON, "toolName": JSON, "state": JSON, "input": JSON,
              "output": JSON, "errorText": JSON, "url": JSON, "mediaType": JSON, "data": JSON,
              "providerMetadata": JSON},
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(PART | JSON, max_size=4), role=st.sampled_from(["user", "assistant", "tool", ""]))
def test_any_voltagent_row_is_imported_or_counted(parts: list[Any], role: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "v.db"
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE voltagent_memory_conversations (id, resource_id, user_id, title, "
                       "metadata, created_at, updated_at)")
            db.execute("CREATE TABLE voltagent_memory_messages (conversation_id, message_id, user_id, role, "
                       "parts, metadata, format_version, created_at)")
            db.execute("INSERT INTO voltagent_memory_conversations VALUES "
                       "('c', 'agent', 'u', 't', '{}', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')")
            db.execute("INSERT INTO voltagent_memory_messages VALUES ('c', 'm', 'u', ?, ?, NULL, 2, "
                       "'2026-01-01T00:00:01Z')", (role, json.dumps(parts)))
        db.close()
        report = asyncio.run(_import(f"voltagent:{path}"))
    assert report["counts"]["threads"] == 1
    assert report["counts"]["messages"] + sum(
        n for reason, n in report["not_carried"].items() if reason.startswith("messages")) == 1


async def _import(source: str) -> dict[str, Any]:
    async with await Memory.open("memory://") as memory:
        return (await memory.import_from(source)).as_dict()


def test_sqlite_cannot_read_jsonb_itself_here() -> None:
    """Why :mod:`memvault.transfer.jsonb` exists: this SQLite predates ``json()`` on JSONB."""
    if sqlite3.sqlite_version_info >= (3, 45):
        pytest.skip(f"SQLite {sqlite3.sqlite_version} reads JSONB itself")
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(":memory:").execute("SELECT json(?)", (encode({"a": 1}, 0),)).fetchone()
