"""JSON Merge Patch (RFC 7386): how a partial update of a state changes its value.

A patch that is an object changes the target key by key: ``null`` removes a key, an object is
merged into the key's value the same way (a value that is not an object is first replaced by
``{}``), anything else replaces the key's value. A patch that is not an object (an array, a
string, a number, ``true``, ``null``) replaces the whole target. Arrays are never merged.
"""

from __future__ import annotations

from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (RFC 7386, section 2); neither argument is changed."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = merge_patch(merged.get(name), value)
    return merged
