"""What the wire-format tests share: the part of a message a round trip keeps, the check that a
converter refuses a value with a clear ValidationError, and Hypothesis strategies for the text
and JSON values memvault takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

from memvault.errors import ValidationError
from memvault.model import Message


def core(message: Message) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """What a round trip through a wire format must keep: role, parts, metadata."""
    return message.role, [p.model_dump() for p in message.parts], message.metadata


def assert_refused(convert: Callable[[Any], Any], value: Any, needle: str) -> None:
    """``convert(value)`` raises ValidationError whose message contains ``needle``."""
    with pytest.raises(ValidationError) as info:
        convert(value)
    assert needle in str(info.value)


def text_strategy(max_size: int) -> st.SearchStrategy[str]:
    """Strings memvault's text takes (no NUL byte, no lone surrogate) of up to ``max_size``."""
    return st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=max_size)


def json_values(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Small JSON values (no NaN or infinity) whose strings and keys come from ``text``."""
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=8,
    )
