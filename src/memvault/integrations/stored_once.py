"""Storing a framework's message once: its exact JSON form in metadata, minus the values a
readable part already shows.

An adapter builds a :class:`View` of one framework message (its JSON form): memvault parts for
what memvault can show, each exact value recorded with its place (``path``) in the JSON.
:meth:`View.stored` gives the JSON text to keep in metadata with those values blanked (so a
9 MiB text costs 9 MiB, not 18); :func:`restore` puts them back from the parts. Values memvault's
text cannot hold (NUL bytes, lone surrogates) are shown cleaned and kept exactly, escaped, in
the JSON text.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from memvault.model import Message, Part, ReasoningPart, TextPart, ToolResultPart
from memvault.rules.exact import clean_text, exact

__all__ = ["View", "exact", "restore"]

Path = list[str | int]


class View:
    """The readable parts of one framework message and where each exact value sits in its JSON."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.refs: list[list[Any]] = []

    def add(self, part: Part, path: Path | None = None) -> None:
        """Append ``part``; with ``path``, the part's value (text, output or URL) is the one at
        ``path`` in the JSON, which is then stored only in the part."""
        if path is not None:
            self.refs.append([len(self.parts), *path])
        self.parts.append(part)

    def text(self, value: Any, path: Path, *, reasoning: bool = False, signature: Any = None) -> None:
        """A :class:`TextPart` (or :class:`ReasoningPart`) of ``value`` when it is a string:
        exact and referenced when it can be, else cleaned."""
        if not isinstance(value, str):
            return
        ok = exact(value)
        text = value if ok else clean_text(value)
        if reasoning:
            sig = signature if isinstance(signature, str) and exact(signature) else None
            self.add(ReasoningPart(text=text, signature=sig), path if ok else None)
        else:
            self.add(TextPart(text=text), path if ok else None)

    def stored(self, data: Any) -> str:
        """The JSON text to keep: ``data`` without the referenced values, and the references."""
        data = copy.deepcopy(data)
        for ref in self.refs:
            target = data
            for key in ref[1:-1]:
                target = target[key]
            target[ref[-1]] = None
        return _dumps({"message": data, "refs": self.refs})


def _dumps(value: Any) -> str:
    """JSON text memvault can store: lone surrogates are written as escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, separators=(",", ":"))
    return text


def restore(message: Message, key: str) -> Any:
    """The JSON form kept under ``metadata[key]`` with its values put back from the parts;
    ``None`` when there is none or it no longer fits the parts (edited or damaged)."""
    raw = message.metadata.get(key)
    if not isinstance(raw, str):
        return None
    try:
        stored = json.loads(raw)
        data, refs = stored["message"], stored["refs"]
        for ref in refs:
            part = message.parts[ref[0]]
            if isinstance(part, TextPart | ReasoningPart):
                value: Any = part.text
            elif isinstance(part, ToolResultPart):
                value = part.output
            else:
                value = getattr(part, "url")  # noqa: B009 - an ImagePart or FilePart
            target = data
            for step in ref[1:-1]:
                target = target[step]
            target[ref[-1]] = value
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return data
