"""The JSON shapes of the HTTP API: request bodies (unknown fields refused) and answers.

Threads and messages are memvault's own models (:class:`~memvault.model.Thread`,
:class:`~memvault.model.Message`), dumped as JSON; a message in a request is anything
:meth:`Message.parse` accepts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memvault.model import Message, SearchHit, State, Thread, check_text
from memvault.transfer.stats import STAT_KINDS


class ErrorDetail(BaseModel):
    code: str = Field(description="invalid, unauthorized, forbidden, not_found, conflict, too_large...")
    message: str = Field(description="What was wrong and what to do about it.")


class ErrorBody(BaseModel):
    """Every error answer (see :mod:`memvault.server.errors`)."""

    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description} for status, description in (
        (400, "An admin key without X-Memvault-Resource, or an unparsable body"),
        (401, "No key, or a malformed, unknown or revoked one"),
        (403, "Another resource, the reserved resource, or an admin endpoint"),
        (404, "No such thread or message for this resource"),
        (413, "The body is over the size limit"),
        (415, "The body is not JSON"),
        (422, "Invalid input"),
        (503, "The store failed: a server-side fault, try again later"),
    )
}
"""The error answers every endpoint may give, for the OpenAPI document."""
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "The resource already has a thread with this id"}}


class Body(BaseModel):
    """A request body: unknown fields refused, strict types (``true`` or ``"3"`` is not a
    number), and no string with a NUL byte or a lone surrogate (422)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _clean_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            check_text(value)
        return value


class ThreadCreate(Body):
    id: str | None = Field(None, description="The thread id (default: a new random id).")
    title: str | None = None
    metadata: dict[str, Any] | None = Field(None, description="A JSON object (default: {}).")


class ThreadChange(Body):
    title: str | None = Field(None, description="The new title; null clears it; absent keeps it.")
    metadata: dict[str, Any] | None = Field(None, description="Replaces the metadata; absent keeps it.")


class MessagesIn(Body):
    messages: list[dict[str, Any]] = Field(description="Messages as Message.parse accepts them.")


class RecallIn(Body):
    query: str
    thread_id: str | None = Field(None, description="The current thread: its recent window is merged in.")
    top_k: int | None = Field(None, ge=1, le=1000, description="At most this many hits (default 5).")


class WorkingMemoryIn(Body):
    content: str = Field(description="The new content: replaces the current one.")
    thread_id: str | None = Field(None, description="A thread's working memory instead of the resource's.")


STATE_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "The state is not at expected_version (another writer won)"}}


class StateIn(Body):
    value: Any = Field(description="Any JSON value.")
    status: str | None = Field(None, description='e.g. "running", "suspended", "done".')
    workflow_id: str | None = Field(None, description="The workflow the run belongs to.")
    thread_id: str | None = Field(None, description="One of the resource's threads (deleted with it).")
    expected_version: int | None = Field(
        None, ge=0, description="Present: write only at this version (null: only if there is no state yet).")


class StateChange(Body):
    merge: Any = Field(None, description="A JSON merge patch (RFC 7386) onto the value; absent keeps it.")
    status: str | None = Field(None, description="The new status (null clears it); absent keeps it.")
    expected_version: int | None = Field(None, ge=0, description="Change only at this version (else 409).")


class States(BaseModel):
    states: list[State]


class Me(BaseModel):
    resource_id: str | None
    admin: bool
    key_id: str
    name: str | None


class ResourceCounts(BaseModel):
    resource_id: str
    threads: int
    messages: int


class Resources(BaseModel):
    resources: list[ResourceCounts]


class Threads(BaseModel):
    threads: list[Thread]
    next_cursor: str | None


class ThreadCount(BaseModel):
    count: int


class Messages(BaseModel):
    messages: list[Message]


class SearchHits(BaseModel):
    hits: list[SearchHit]


class RecallHitOut(BaseModel):
    """A recalled message: ``source`` is ``lexical`` (words), ``vector`` (meaning) or ``both``;
    ``sources`` lists them; the raw score of each source is ``None`` where it did not find it."""

    message: Message
    thread_id: str
    created_at: datetime
    other_thread: bool
    score: float
    source: str
    sources: list[str]
    lexical_score: float | None
    vector_score: float | None


class RecallOut(BaseModel):
    """The hits, best first, and the messages recall feeds the model (recent window merged in)."""

    hits: list[RecallHitOut]
    messages: list[Message]
    warnings: list[str]


class WorkingMemory(BaseModel):
    content: str | None


class Stats(BaseModel):
    threads: int
    messages: int
    summaries: int
    working_memories: int
    states: int


assert tuple(Stats.model_fields) == STAT_KINDS


MAX_AGE_SECONDS = 36_525 * 86_400
"""The longest retention policy, in seconds (100 years: :data:`memvault.retention.MAX_AGE_LIMIT`)."""


class RetentionIn(Body):
    max_age_seconds: int | None = Field(
        ge=1, le=MAX_AGE_SECONDS,
        description="Keep messages this many seconds (null removes the policy).")


class Retention(BaseModel):
    max_age_seconds: int | None = Field(description="The policy in force (null: kept until deleted).")
    resource_max_age_seconds: int | None = Field(description="The resource's own policy, if any.")
    store_max_age_seconds: int | None = Field(description="The store's policy, if any.")


class StoreRetention(BaseModel):
    max_age_seconds: int | None = Field(description="The store's policy (null: none).")


class Swept(BaseModel):
    messages: int
    threads: int
    resources: int
