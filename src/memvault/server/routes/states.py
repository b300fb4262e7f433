"""``/v1/states``: the resource's workflow states (suspended runs): query, read, write, patch
and delete, as :meth:`memvault.Memory.set_state` and :meth:`~memvault.Memory.update_state` do.

A thread named in a query or a write must be the caller's: another resource's thread is 404
exactly like a missing one. A compare-and-set that loses (``expected_version``) is 409, and
nothing is written."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Response

from memvault.errors import NotFoundError
from memvault.memory import SUSPENDED
from memvault.model import State
from memvault.server.auth import JsonResourceDep, MemoryDep, ResourceDep
from memvault.server.errors import ApiError
from memvault.server.gate import decoded
from memvault.server.routes.common import check_thread
from memvault.server.schemas import ERRORS, STATE_CONFLICT, StateChange, StateIn, States
from memvault.stores.base import UNSET

router = APIRouter(prefix="/v1/states", tags=["states"], responses=ERRORS)
NO_STATE = "no such state for this resource"
LOST = "the state is not at expected_version: another writer changed it first; read it and try again"


async def _state_key(key: Annotated[str, Path(description="Percent-encoded, as thread ids are.")]) -> str:
    try:
        return decoded(key)
    except ValueError:
        raise ApiError(404, NO_STATE) from None


StateKey = Annotated[str, Depends(_state_key)]
"""The ``{key}`` path segment, decoded (see :mod:`memvault.server.gate`)."""


@router.get("")
async def list_states(
    resource_id: ResourceDep,
    memory: MemoryDep,
    workflow_id: Annotated[str | None, Query(description="Only this workflow's states.")] = None,
    status: Annotated[str | None, Query(description="Only states with this status.")] = None,
    thread_id: Annotated[str | None, Query(description="Only this thread's states (or 404).")] = None,
    suspended: Annotated[bool, Query(description='Only suspended runs (status "suspended").')] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> States:
    """The resource's states that every given filter selects, most recently updated first."""
    if suspended:
        if status not in (None, SUSPENDED):
            raise ApiError(422, f"suspended=true selects status {SUSPENDED!r}: give one or the other")
        status = SUSPENDED
    await check_thread(memory, resource_id, thread_id or None)
    return States(states=await memory.list_states(
        resource_id=resource_id, status=status, workflow_id=workflow_id or None, thread_id=thread_id or None,
        limit=limit))


@router.get("/{key}")
async def get_state(key: StateKey, resource_id: ResourceDep, memory: MemoryDep) -> State:
    """The state, or 404."""
    state = await memory.get_state(resource_id=resource_id, key=key)
    if state is None:
        raise ApiError(404, NO_STATE)
    return state


@router.put("/{key}", responses=STATE_CONFLICT)
async def put_state(key: StateKey, resource_id: JsonResourceDep, memory: MemoryDep, body: StateIn) -> State:
    """Write the whole state (value, status, workflow id, thread): its version grows by one.
    With ``expected_version`` in the body (``null``: the state must not exist yet), only if the
    state is at that version, else 409."""
    await check_thread(memory, resource_id, body.thread_id)
    tags = {"status": body.status, "workflow_id": body.workflow_id, "thread_id": body.thread_id}
    if "expected_version" not in body.model_fields_set:
        return await memory.set_state(body.value, resource_id=resource_id, key=key, **tags)
    state = await memory.compare_and_set_state(body.value, resource_id=resource_id, key=key,
                                               expected_version=body.expected_version, **tags)
    if state is None:
        raise ApiError(409, LOST)
    return state


@router.patch("/{key}", responses=STATE_CONFLICT)
async def patch_state(
    key: StateKey, resource_id: JsonResourceDep, memory: MemoryDep, body: StateChange
) -> State:
    """Change part of the state: ``merge`` is a JSON merge patch (RFC 7386) onto its value,
    ``status`` sets (``null`` clears) the status; a field left out is kept. With
    ``expected_version``, only if the state is at that version, else 409; 404 without a state."""
    given: dict[str, Any] = {name: getattr(body, name) for name in body.model_fields_set}
    try:
        state = await memory.update_state(
            resource_id=resource_id, key=key, merge=given.get("merge", UNSET),
            status=given.get("status", UNSET), expected_version=body.expected_version)
    except NotFoundError:
        raise ApiError(404, NO_STATE) from None
    if state is None:
        raise ApiError(409, LOST)
    return state


@router.delete("/{key}", status_code=204)
async def delete_state(key: StateKey, resource_id: ResourceDep, memory: MemoryDep) -> Response:
    """Delete the state (204 whether or not there was one)."""
    await memory.delete_state(resource_id=resource_id, key=key)
    return Response(status_code=204)
