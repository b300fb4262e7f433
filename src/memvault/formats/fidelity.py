"""Keeping what a wire format has and memvault's parts do not: small patches in metadata.

A converter reads a wire object (a message, an item, a content block) into memvault's
vocabulary, then asks what its own writer would produce from that (the *canonical* form).
:func:`patch` records the difference: the fields whose value differs or that the canonical
form lacks (``"set"``) and the canonical fields the original did not have (``"drop"``).
:func:`apply` puts them back. So ``apply(write(read(x)), patch(x, write(read(x)))) == x``
for any ``x``, whatever the writer chooses as its default shape.

A patch of a content block is tied to the part it was read into by :func:`fingerprint`
(:func:`apply_to_part`): once the part is edited, its patch no longer applies and the edited
part is written in the canonical form, so an edit always wins over what was recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from memvault.model import Part, ToolResultPart

__all__ = ["apply", "apply_to_part", "fingerprint", "part_patch", "patch"]


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``True`` differ; key order does not matter)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def patch(original: Mapping[str, Any], canonical: Mapping[str, Any]) -> dict[str, Any] | None:
    """What turns ``canonical`` into ``original`` (``None`` when they are equal)."""
    changed = {k: v for k, v in original.items() if k not in canonical or not _same(canonical[k], v)}
    dropped = [k for k in canonical if k not in original]
    out: dict[str, Any] = {}
    if changed:
        out["set"] = changed
    if dropped:
        out["drop"] = dropped
    return out or None


def apply(canonical: Mapping[str, Any], recorded: Any) -> dict[str, Any]:
    """``canonical`` with a :func:`patch` applied (a malformed or missing patch is ignored)."""
    out = dict(canonical)
    if not isinstance(recorded, Mapping):
        return out
    dropped = recorded.get("drop")
    if isinstance(dropped, list):
        for key in dropped:
            if isinstance(key, str):
                out.pop(key, None)
    changed = recorded.get("set")
    if isinstance(changed, Mapping):
        out.update(changed)
    return out


def fingerprint(part: Part) -> str:
    """A short hash of a part's content (its JSON form), to tell whether it was edited. A tool
    result's ``name`` is left out: no wire format writes it (readers restore it from the
    matching call, which a list may or may not hold)."""
    dumped = part.model_dump(mode="json")
    if isinstance(part, ToolResultPart):
        dumped.pop("name", None)
    text = json.dumps(dumped, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def part_patch(
    part: Part, original: Mapping[str, Any], canonical: Mapping[str, Any]
) -> dict[str, Any] | None:
    """:func:`patch` tied to ``part`` (see :func:`apply_to_part`)."""
    found = patch(original, canonical)
    return None if found is None else {"part": fingerprint(part), **found}


def apply_to_part(part: Part, canonical: Mapping[str, Any], recorded: Any) -> dict[str, Any]:
    """Apply a :func:`part_patch` only while ``part`` is unchanged since it was recorded."""
    if isinstance(recorded, Mapping) and recorded.get("part") == fingerprint(part):
        return apply(canonical, recorded)
    return dict(canonical)
