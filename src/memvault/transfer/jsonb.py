"""SQLite's binary JSON (JSONB, SQLite 3.45+) decoded in Python.

LibSQL writes some JSON columns with ``jsonb(...)`` (Mastra's thread metadata and workflow
snapshots); the standard library's SQLite may be older than 3.45 and cannot turn them back into
text, so :func:`loads` reads the format itself (https://sqlite.org/jsonb.html): each element is a
header byte (low four bits: the type; high four bits: the payload size, or 12-15 for a 1, 2, 4
or 8-byte big-endian size that follows) and its payload. A blob that is not well-formed JSONB
is a :class:`ValueError`.
"""

from __future__ import annotations

import json
from typing import Any

_NULL, _TRUE, _FALSE, _INT, _INT5, _FLOAT, _FLOAT5 = range(7)
_TEXT, _TEXTJ, _TEXT5, _TEXTRAW, _ARRAY, _OBJECT = range(7, 13)
_MAX_DEPTH = 1000


def loads(blob: bytes) -> Any:
    """The JSON value a JSONB blob holds (objects as dicts, arrays as lists)."""
    value, end = _element(blob, 0, 0)
    if end != len(blob):
        raise ValueError(f"JSONB: {len(blob) - end} bytes after the value")
    return value


def _header(blob: bytes, at: int) -> tuple[int, int, int]:
    """(type, payload start, payload end) of the element starting at ``at``."""
    if at >= len(blob):
        raise ValueError("JSONB: truncated")
    kind, size = blob[at] & 0x0F, blob[at] >> 4
    start = at + 1
    if size >= 12:
        width = 1 << (size - 12)
        if start + width > len(blob):
            raise ValueError("JSONB: truncated size")
        size = int.from_bytes(blob[start:start + width], "big")
        start += width
    if start + size > len(blob):
        raise ValueError("JSONB: payload runs past the end")
    return kind, start, start + size


def _element(blob: bytes, at: int, depth: int) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise ValueError("JSONB: nested too deeply")
    kind, start, end = _header(blob, at)
    payload = blob[start:end]
    if kind <= _FALSE:
        if payload:
            raise ValueError("JSONB: a null or boolean with a payload")
        return (None, True, False)[kind], end
    if kind in (_ARRAY, _OBJECT):
        items, cursor = [], start
        while cursor < end:
            item, cursor = _element(blob, cursor, depth + 1)
            items.append(item)
        if cursor != end:
            raise ValueError("JSONB: a container's elements overrun it")
        if kind == _ARRAY:
            return items, end
        if len(items) % 2 or not all(isinstance(k, str) for k in items[::2]):
            raise ValueError("JSONB: an object's keys are not text labels")
        return dict(zip(items[::2], items[1::2], strict=True)), end
    text = payload.decode("utf-8")
    if kind in (_INT, _INT5):
        return int(text, 0) if kind == _INT5 else int(text), end
    if kind in (_FLOAT, _FLOAT5):
        return float(text), end
    if kind in (_TEXT, _TEXTRAW):
        return text, end
    if kind in (_TEXTJ, _TEXT5):
        return json.loads(f'"{text}"'), end
    raise ValueError(f"JSONB: reserved element type {kind}")
