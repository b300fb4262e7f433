"""What an imported message must hold, worked out from what VoltAgent or Mastra read back.

Each part becomes a comparable tuple: the source's parts by the documented mapping
(docs/importing.md), memvault's by their fields, so a test compares the two lists.
"""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any

from memvault import Memory
from memvault.model import Message

Row = tuple[Any, ...]


def memvault_parts(message: Message) -> list[Row]:
    """memvault's parts as tuples."""
    rows: list[Row] = []
    for part in message.parts:
        d = part.model_dump(mode="json")
        kind = d["type"]
        if kind in ("text", "reasoning"):
            rows.append((kind, d["text"]))
        elif kind == "tool-call":
            rows.append((kind, d["tool_call_id"], d["name"], d["args"]))
        elif kind == "tool-result":
            rows.append((kind, d["tool_call_id"], d["name"], d["output"], d["is_error"]))
        elif kind == "file":
            rows.append((kind, d["url"], d.get("media_type"), d.get("name")))
        else:
            rows.append((kind, d.get("name"), d.get("data")))
    return rows


def _tool(call_id: str, name: str, args: Any, state: str, output: Any, error: Any) -> list[Row]:
    rows: list[Row] = [("tool-call", call_id, name, args if args is not None else {})]
    if state in ("output-available", "result"):
        rows.append(("tool-result", call_id, name, output, False))
    elif state == "output-error":
        rows.append(("tool-result", call_id, name, error, True))
    return rows


def voltagent_parts(parts: list[dict[str, Any]]) -> list[Row]:
    """AI SDK 5 parts (VoltAgent) as the tuples their import must give."""
    rows: list[Row] = []
    for p in parts:
        kind = p["type"]
        if kind in ("text", "reasoning"):
            rows.append((kind, p["text"]))
        elif kind == "dynamic-tool" or kind.startswith("tool-"):
            name = p["toolName"] if kind == "dynamic-tool" else kind.removeprefix("tool-")
            rows += _tool(p["toolCallId"], name, p.get("input"), p["state"], p.get("output"),
                          p.get("errorText"))
        elif kind == "file":
            rows.append(("file", p["url"], p.get("mediaType"), p.get("filename")))
        elif kind.startswith("data-"):
            rows.append(("data", kind.removeprefix("data-"), p["data"]))
        elif kind.startswith("source-"):
            rows.append(("data", kind, {k: v for k, v in p.items() if k != "type"}))
        else:
            assert kind == "step-start", kind
    return rows


def mastra_parts(parts: list[dict[str, Any]]) -> list[Row]:
    """Mastra format 2 parts as the tuples their import must give."""
    rows: list[Row] = []
    for p in parts:
        kind = p["type"]
        if kind == "text":
            rows.append(("text", p["text"]))
        elif kind == "reasoning":
            rows += [("reasoning", d["text"]) for d in p["details"]]
        elif kind == "tool-invocation":
            t = p["toolInvocation"]
            rows += _tool(t["toolCallId"], t["toolName"], t.get("args"), t["state"], t.get("result"), None)
        elif kind == "file":
            rows.append(("file", p["data"], p.get("mimeType"), None))
        elif kind == "source":
            rows.append(("data", "source", p["source"]))
        else:
            assert kind == "step-start", kind
    return rows


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def dump(memory: Memory) -> str:
    """Every record of the store, as ``memvault export`` writes them."""
    sink = io.StringIO()
    await memory.export_records(sink)
    return sink.getvalue()


async def assert_reimport_changes_nothing(memory: Memory, source: str) -> None:
    """Importing ``source`` (``SYSTEM:PATH``) a second time leaves every record as the first
    import wrote it and reports the same counts."""
    first = await memory.import_from(source)
    before = await dump(memory)
    second = await memory.import_from(source)
    assert await dump(memory) == before
    assert second.as_dict() == first.as_dict()
