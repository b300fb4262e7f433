"""Turning stored rows back into the vocabulary, for the SQL stores.

Rows were validated when they were written, so they are rebuilt without validating again
(``model_construct``): reading stays cheap.
"""

from __future__ import annotations

import json
from typing import Any, cast

from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    Model,
    Part,
    ReasoningPart,
    State,
    TextPart,
    Thread,
    ToolCallPart,
    ToolResultPart,
)
from memvault.stores.common import from_micros

_PARTS: dict[str, type[Model]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool-call": ToolCallPart,
    "tool-result": ToolResultPart,
    "file": FilePart,
    "image": ImagePart,
    "data": DataPart,
}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message(row: Any) -> Message:
    """A row of ``id, thread_id, resource_id, seq, role, parts, metadata, created_us``."""
    message_id, thread_id, resource_id, seq, role, parts, metadata, created_us = row
    return Message.model_construct(
        id=message_id,
        thread_id=thread_id,
        resource_id=resource_id,
        seq=seq,
        role=role,
        parts=[cast(Part, _PARTS[p["type"]].model_construct(**p)) for p in json.loads(parts)],
        metadata=json.loads(metadata),
        created_at=from_micros(created_us),
    )


def thread(row: Any) -> Thread:
    """A row of ``resource_id, id, title, metadata, created_us, updated_us``."""
    resource_id, thread_id, title, metadata, created_us, updated_us = row
    return Thread.model_construct(
        resource_id=resource_id,
        id=thread_id,
        title=title,
        metadata=json.loads(metadata),
        created_at=from_micros(created_us),
        updated_at=from_micros(updated_us),
    )


def state(row: Any) -> State:
    """A row of ``resource_id, key, value, status, version, updated_us``."""
    resource_id, key, value, status, version, updated_us = row
    return State.model_construct(
        resource_id=resource_id,
        key=key,
        value=json.loads(value),
        status=status,
        version=version,
        updated_at=from_micros(updated_us),
    )
