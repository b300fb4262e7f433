"""Reading a Mastra memory database (``@mastra/libsql``'s ``LibSQLStore`` used by
``@mastra/memory``, a local ``file:`` database) into a :class:`~memvault.transfer.seeds.Seed`.

The mapping:

- a Mastra resource (``resourceId``) is a memvault resource;
- a thread (``mastra_threads``) keeps its id, resource, title (an empty one becomes none),
  metadata and times;
- a message (``mastra_messages``, format 2) keeps its id, role, time and ``content.metadata``
  (as the message's metadata), in the thread's order (``createdAt``, then insertion); its parts
  are mapped by :func:`memvault.transfer.aiparts.v4_parts` (a message with no parts but a
  ``content`` string gets that text; ``experimental_attachments`` become file parts);
- working memory: the thread scope (``workingMemory`` in the thread's metadata) becomes the
  thread's note, the resource scope (``mastra_resources.workingMemory``) the resource's note;
- a workflow snapshot becomes the state ``mastra:workflow:<workflow name>:<run id>`` of its
  resource, its value the snapshot, its status the snapshot's ``status``.

JSON columns may be text or SQLite's binary JSONB (:mod:`memvault.transfer.jsonb`). Not carried
(and counted in the report): messages with role ``signal`` or in format 1, messages whose
resource is not their thread's, workflow snapshots with no resource, resource metadata,
observational memory and rows that cannot be read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memvault.errors import ValidationError
from memvault.model import Message, State, note_key
from memvault.transfer.aiparts import Part, v4_parts
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

ROLES = ("user", "assistant", "system", "tool")
TABLES = ("mastra_threads", "mastra_messages")


def read(path: Path) -> Seed:
    """The Mastra database at ``path`` as a seed (nothing written anywhere). A file that is not
    one is a :class:`~memvault.errors.StoreOpenError`."""
    seed = Seed()
    with open_source(path, TABLES, "Mastra") as db:
        names = table_names(db)
        threads = _threads(db, seed)
        _messages(db, threads, seed)
        seed.threads = list(threads.values())
        if "mastra_resources" in names:
            _resources(db, seed)
        if "mastra_workflow_snapshot" in names:
            _workflows(db, seed)
        if "mastra_observational_memory" in names:
            rows = db.execute("SELECT count(*) FROM mastra_observational_memory").fetchone()[0]
            seed.skip("observational memory records", rows)
    return seed


def _threads(db: sqlite3.Connection, seed: Seed) -> dict[str, SeedThread]:
    threads: dict[str, SeedThread] = {}
    for row in db.execute('SELECT * FROM mastra_threads ORDER BY "createdAt", rowid'):
        add_thread(seed, threads, {"id": row["id"], "resource_id": row["resourceId"], "title": row["title"],
                                   "metadata": row["metadata"], "created_at": row["createdAt"],
                                   "updated_at": row["updatedAt"]},
                   unreadable="threads that could not be read (with their messages)")
    return threads


def _messages(db: sqlite3.Connection, threads: dict[str, SeedThread], seed: Seed) -> None:
    for row in db.execute('SELECT * FROM mastra_messages ORDER BY thread_id, "createdAt", rowid'):
        owner = threads.get(row["thread_id"])
        if owner is None:
            seed.skip("messages of threads not carried")
            continue
        if row["resourceId"] not in (None, owner.thread.resource_id):
            seed.skip("messages whose resource is not their thread's")
            continue
        if row["role"] not in ROLES:
            seed.skip(f"messages with role {row['role']!r}")
            continue
        try:
            content = json_value(row["content"])
            if not isinstance(content, dict) or content.get("format") != 2:
                seed.skip("messages not in Mastra's format 2")
                continue
            metadata = content.get("metadata")
            owner.messages.append(Message.parse({
                "id": row["id"], "role": row["role"], "parts": _parts(content, seed),
                "metadata": metadata if isinstance(metadata, dict) else {},
                "created_at": timestamp(row["createdAt"]),
            }))
        except (ValueError, ValidationError):
            seed.skip("messages that could not be read")


def _parts(content: dict[str, Any], seed: Seed) -> list[Part]:
    parts = content.get("parts")
    out = v4_parts(parts, seed.skip) if isinstance(parts, list) else []
    if not out and isinstance(content.get("content"), str) and content["content"]:
        out.append({"type": "text", "text": content["content"]})
    for attachment in content.get("experimental_attachments") or []:
        if isinstance(attachment, dict):
            file: Part = {"type": "file", "url": attachment.get("url")}
            if attachment.get("contentType"):
                file["media_type"] = attachment["contentType"]
            if attachment.get("name"):
                file["name"] = attachment["name"]
            out.append(file)
    return out


def _resources(db: sqlite3.Connection, seed: Seed) -> None:
    for row in db.execute('SELECT * FROM mastra_resources ORDER BY rowid'):
        note = row["workingMemory"]
        if isinstance(note, str) and note:
            seed.notes.append((row["id"], note_key(None), note))
        try:
            seed.skip("resource metadata fields", len(json_object(row["metadata"])))
        except ValueError:
            seed.skip("resources whose metadata could not be read")


def _workflows(db: sqlite3.Connection, seed: Seed) -> None:
    for row in db.execute('SELECT * FROM mastra_workflow_snapshot ORDER BY "createdAt", rowid'):
        if not row["resourceId"]:
            seed.skip("workflow snapshots without a resource (memvault states belong to a resource)")
            continue
        try:
            snapshot = json_value(row["snapshot"])
            status = snapshot.get("status") if isinstance(snapshot, dict) else None
            seed.states.append(State.parse({
                "resource_id": row["resourceId"],
                "key": f"mastra:workflow:{row['workflow_name']}:{row['run_id']}",
                "value": snapshot, "status": status if isinstance(status, str) else None,
                "updated_at": timestamp(row["updatedAt"])}))
        except (ValueError, ValidationError):
            seed.skip("workflow snapshots that could not be read")
