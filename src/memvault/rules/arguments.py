"""Checks of a public call's arguments that are not ids or messages: each returns the value or
raises :class:`memvault.errors.ValidationError` naming the argument, before anything is read or
written (ids: :func:`memvault.model.valid_id`; messages: :meth:`memvault.model.Message.parse`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memvault.errors import ValidationError, shown

T = TypeVar("T")


def id_list(value: Any, name: str) -> list[Any]:
    """A list or tuple (of what the caller then checks one by one); a single string, or anything
    that is not a sequence, is refused."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValidationError(f"{name} must be a list of ids, got {type(value).__name__}")
    return list(value)


def count(value: Any, name: str, maximum: int = 2**63 - 1) -> int:
    """An integer from 0 to ``maximum`` (not a bool)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= maximum:
        raise ValidationError(f"{name} must be an integer from 0 to {maximum}, got {shown(value)}")
    return value


def records(value: Any, name: str = "records") -> list[Mapping[str, Any]]:
    """A list of records (JSON objects), as :func:`memvault.transfer.jsonl.parse_records` gives."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValidationError(f"{name} must be a list of records (dicts), got {type(value).__name__}")
    for number, record in enumerate(value, 1):
        if not isinstance(record, Mapping):
            raise ValidationError(f"{name}: record {number} is a {type(record).__name__}, not a dict")
    return list(value)


def optional_str(value: Any, name: str) -> str | None:
    """``None`` or a string."""
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"{name} must be a string or None, got {type(value).__name__}")
    return value


def flag(value: Any, name: str) -> bool:
    """A bool (not a number or a string that looks like one)."""
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def callback(value: Any, name: str) -> Callable[..., Any] | None:
    """``None`` or something callable."""
    if value is not None and not callable(value):
        raise ValidationError(f"{name} must be a function or None, got {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def writable(value: Any, name: str) -> Any:
    """A text sink: an object with a ``write`` method (an open text file, ``io.StringIO``)."""
    if not callable(getattr(value, "write", None)):
        raise ValidationError(f"{name} must be an open text file or stream, got {type(value).__name__}")
    return value


def instance(value: Any, kind: type[T], name: str) -> T | None:
    """``None`` or an instance of ``kind``."""
    if value is not None and not isinstance(value, kind):
        raise ValidationError(f"{name} must be a {kind.__name__} or None, got {type(value).__name__}")
    return value
