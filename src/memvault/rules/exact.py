"""What memvault's text and JSON take exactly, and the cleaned copy shown when a value does not
fit: the rules the framework adapters (:mod:`memvault.integrations`) use to store a value once,
exactly, while showing a readable copy."""

from __future__ import annotations

import re
from typing import Any

from memvault.model import check_json

__all__ = ["clean_text", "exact"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` as memvault's text takes it: NUL bytes become spaces, lone surrogates U+FFFD."""
    return _SURROGATE.sub("\ufffd", text.replace("\x00", " "))


def exact(value: Any) -> bool:
    """Whether ``value`` passes through a part unchanged (plain JSON: no NUL byte, no lone
    surrogate, no NaN, at most 64 levels deep)."""
    try:
        check_json(value)
    except ValueError:
        return False
    return True
