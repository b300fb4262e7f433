"""The value filters and namespace matches of LangGraph's store, as its reference store
(``InMemoryStore``) applies them: what :class:`~.store.MemvaultStore` answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memvault.errors import ValidationError

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda value, wanted: bool(value == wanted),
    "$ne": lambda value, wanted: bool(value != wanted),
    "$gt": lambda value, wanted: float(value) > float(wanted),
    "$gte": lambda value, wanted: float(value) >= float(wanted),
    "$lt": lambda value, wanted: float(value) < float(wanted),
    "$lte": lambda value, wanted: float(value) <= float(wanted),
}


def matches_filter(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether an item's ``value`` passes ``wanted``: each key's value equals (nested objects
    and lists compared element by element), or passes the operators of ``{"$gt": 3, ...}``
    (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``; the ordering ones compare numbers)."""
    return not wanted or all(_matches(value.get(key), condition) for key, condition in wanted.items())


def _matches(value: Any, condition: Any) -> bool:
    if isinstance(condition, dict):
        if any(str(k).startswith("$") for k in condition):
            return all(_operator(op)(value, operand) for op, operand in condition.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in condition.items())
    if isinstance(condition, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(condition)
            and all(_matches(v, c) for v, c in zip(value, condition, strict=True))
        )
    return bool(value == condition)


def _operator(name: str) -> Callable[[Any, Any], bool]:
    operator = _OPERATORS.get(name)
    if operator is None:
        raise ValidationError(f"unknown filter operator {name!r}: use one of {', '.join(_OPERATORS)}")

    def safe(value: Any, operand: Any) -> bool:
        try:
            return operator(value, operand)
        except (TypeError, ValueError):
            raise ValidationError(f"filter {name} compares numbers, got {value!r} and {operand!r}") from None

    return safe


def namespace_matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    """Whether ``namespace`` starts (``kind="prefix"``) or ends (``"suffix"``) with ``path``,
    where a ``"*"`` label matches any label."""
    if len(namespace) < len(path):
        return False
    if kind == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif kind == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValidationError(f"a namespace match is 'prefix' or 'suffix', got {kind!r}")
    return all(wanted in ("*", label) for label, wanted in pairs)
