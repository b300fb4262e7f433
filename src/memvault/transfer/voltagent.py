"""Reading a VoltAgent memory database (``@voltagent/libsql``'s ``LibSQLMemoryAdapter``, a local
``file:`` database) into a :class:`~memvault.transfer.seeds.Seed`.

The mapping (tables ``<prefix>_*``, prefix ``voltagent_memory`` by default):

- a user (``user_id``) becomes a memvault resource;
- a conversation becomes a thread of its user, with its id, title, metadata and times; the
  conversation's agent (its ``resource_id``) is kept in the thread's metadata as
  ``{"voltagent": {"resource_id": ...}}``;
- a message keeps its id, role, metadata and time, in the conversation's order (``created_at``,
  then insertion); its parts are mapped by :func:`memvault.transfer.aiparts.v5_parts`;
- working memory: the conversation scope (``workingMemory`` in the conversation's metadata)
  becomes the thread's note, the user scope (in the user's metadata) the resource's note;
- a workflow state becomes the state ``voltagent:workflow:<execution id>`` of its user, its
  value holding every column (``workflowId``, ``workflowName``, ``input``, ``context``,
  ``workflowState``, ``suspension``, ``events``, ``output``, ``cancellation``, ``conversationId``,
  ``metadata``, ``createdAt``), its status the workflow's.

Not carried (and counted in the report): conversation steps (the agents' run traces), workflow
states with no user, user metadata other than working memory, messages in VoltAgent's old format
or whose user is not their conversation's, and rows that cannot be read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memvault.errors import ValidationError
from memvault.model import Message, State, note_key
from memvault.transfer.aiparts import v5_parts
from memvault.transfer.seeds import (
    Seed,
    SeedThread,
    add_thread,
    json_object,
    json_value,
    open_source,
    table_names,
    timestamp,
)

PREFIX = "voltagent_memory"
"""The adapter's default ``tablePrefix``."""
ROLES = ("user", "assistant", "system")
_STATE_FIELDS = {"workflow_id": "workflowId", "workflow_name": "workflowName", "input": "input",
                 "context": "context", "workflow_state": "workflowState", "suspension": "suspension",
                 "events": "events", "output": "output", "cancellation": "cancellation",
                 "conversation_id": "conversationId", "metadata": "metadata", "created_at": "createdAt"}
_JSON_FIELDS = ("input", "context", "workflow_state", "suspension", "events", "output", "cancellation",
                "metadata")


def read(path: Path, *, prefix: str = PREFIX) -> Seed:
    """The VoltAgent database at ``path`` as a seed (nothing written anywhere). A file that is
    not one is a :class:`~memvault.errors.StoreOpenError`."""
    seed = Seed()
    tables = (f"{prefix}_conversations", f"{prefix}_messages")
    with open_source(path, tables, "VoltAgent") as db:
        names = table_names(db)
        threads = _conversations(db, prefix, seed)
        _messages(db, prefix, threads, seed)
        seed.threads = list(threads.values())
        if f"{prefix}_users" in names:
            _users(db, prefix, seed)
        if f"{prefix}_workflow_states" in names:
            _workflows(db, prefix, seed)
        if f"{prefix}_steps" in names:
            steps = db.execute(f'SELECT count(*) FROM "{prefix}_steps"').fetchone()[0]
            seed.skip("conversation steps (agent run traces)", steps)
    return seed


def _conversations(db: sqlite3.Connection, prefix: str, seed: Seed) -> dict[str, SeedThread]:
    threads: dict[str, SeedThread] = {}
    for row in db.execute(f'SELECT * FROM "{prefix}_conversations" ORDER BY created_at, rowid'):
        add_thread(seed, threads, {"id": row["id"], "resource_id": row["user_id"], "title": row["title"],
                                   "metadata": row["metadata"], "created_at": row["created_at"],
                                   "updated_at": row["updated_at"]},
                   unreadable="conversations that could not be read (with their messages)",
                   extra={"voltagent": {"resource_id": row["resource_id"]}})
    return threads


def _messages(db: sqlite3.Connection, prefix: str, threads: dict[str, SeedThread], seed: Seed) -> None:
    columns = {row[1] for row in db.execute(f'PRAGMA table_info("{prefix}_messages")')}
    version = "" if "format_version" in columns else ", NULL AS format_version"  # older adapters
    order = "ORDER BY conversation_id, created_at, rowid"
    for row in db.execute(f'SELECT *{version} FROM "{prefix}_messages" {order}'):
        owner = threads.get(row["conversation_id"])
        if owner is None:
            seed.skip("messages of conversations not carried")
            continue
        if row["user_id"] != owner.thread.resource_id:
            seed.skip("messages whose user is not their conversation's")
            continue
        if row["role"] not in ROLES:
            seed.skip(f"messages with role {row['role']!r}")
            continue
        if row["format_version"] not in (None, 2):
            seed.skip("messages in VoltAgent's old format (1)")
            continue
        try:
            parts = json_value(row["parts"])
            if not isinstance(parts, list):
                raise ValueError("parts is not a list")
            owner.messages.append(Message.parse({
                "id": row["message_id"], "role": row["role"], "parts": v5_parts(parts, seed.skip),
                "metadata": json_object(row["metadata"]), "created_at": timestamp(row["created_at"]),
            }))
        except (ValueError, ValidationError):
            seed.skip("messages that could not be read")


def _users(db: sqlite3.Connection, prefix: str, seed: Seed) -> None:
    for row in db.execute(f'SELECT * FROM "{prefix}_users" ORDER BY rowid'):
        try:
            metadata = json_object(row["metadata"])
        except ValueError:
            seed.skip("users whose metadata could not be read")
            continue
        note = metadata.pop("workingMemory", None)
        if isinstance(note, str) and note:
            seed.notes.append((row["id"], note_key(None), note))
        seed.skip("user metadata fields besides working memory", len(metadata))


def _workflows(db: sqlite3.Connection, prefix: str, seed: Seed) -> None:
    for row in db.execute(f'SELECT * FROM "{prefix}_workflow_states" ORDER BY created_at, rowid'):
        if not row["user_id"]:
            seed.skip("workflow states without a user (memvault states belong to a resource)")
            continue
        try:
            value: dict[str, Any] = {}
            for column, name in _STATE_FIELDS.items():
                raw = row[column]
                if raw is not None:
                    value[name] = json_value(raw) if column in _JSON_FIELDS else raw
            seed.states.append(State.parse({
                "resource_id": row["user_id"], "key": f"voltagent:workflow:{row['id']}", "value": value,
                "status": row["status"], "updated_at": timestamp(row["updated_at"])}))
        except (ValueError, ValidationError):
            seed.skip("workflow states that could not be read")
