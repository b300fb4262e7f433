"""Retention over HTTP (:mod:`memvault.retention`): a resource's policy (``/v1/retention``), the
store's policy and an immediate sweep (``/v1/store/...``, admin keys only).

A resource key may shorten its resource's retention, never lengthen it beyond the store's
policy (an operator's maximum): a value above it is 403. An admin key may set any value."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter

from memvault.server.auth import AdminDep, CallerDep, JsonResourceDep, MemoryDep, ResourceDep
from memvault.server.errors import ApiError
from memvault.server.schemas import ERRORS, Retention, RetentionIn, StoreRetention, Swept

router = APIRouter(prefix="/v1", tags=["retention"], responses=ERRORS)


def _seconds(age: timedelta | None) -> int | None:
    return None if age is None else int(age.total_seconds())


async def _retention(memory: MemoryDep, resource_id: str) -> Retention:
    policies = await memory.retention_policies()
    own, store = policies.get(resource_id), policies.get(None)
    return Retention(max_age_seconds=_seconds(own or store), resource_max_age_seconds=_seconds(own),
                     store_max_age_seconds=_seconds(store))


@router.get("/retention")
async def get_retention(resource_id: ResourceDep, memory: MemoryDep) -> Retention:
    """The resource's retention: its own policy, the store's, and the one in force."""
    return await _retention(memory, resource_id)


@router.put("/retention")
async def put_retention(
    who: CallerDep, resource_id: JsonResourceDep, memory: MemoryDep, body: RetentionIn
) -> Retention:
    """Set the resource's own maximum age (null removes it: the store's applies). From now on
    older messages are never returned; the next sweep erases them. A resource key may not set
    more than the store's policy (403)."""
    store = await memory.get_retention()
    wanted = None if body.max_age_seconds is None else timedelta(seconds=body.max_age_seconds)
    if not who.key.admin and wanted is not None and store is not None and wanted > store:
        raise ApiError(403, f"the store keeps messages at most {_seconds(store)} seconds: a resource key "
                            "may shorten its retention, not lengthen it")
    await memory.set_retention(wanted, resource_id=resource_id)
    return await _retention(memory, resource_id)


@router.get("/store/retention")
async def get_store_retention(who: AdminDep, memory: MemoryDep) -> StoreRetention:
    """Admin only: the store's policy."""
    return StoreRetention(max_age_seconds=_seconds(await memory.get_retention()))


@router.put("/store/retention")
async def put_store_retention(who: AdminDep, memory: MemoryDep, body: RetentionIn) -> StoreRetention:
    """Admin only: set (null removes) the store's policy, for every resource without its own."""
    wanted = None if body.max_age_seconds is None else timedelta(seconds=body.max_age_seconds)
    await memory.set_retention(wanted)
    return StoreRetention(max_age_seconds=_seconds(await memory.get_retention()))


@router.post("/store/sweep")
async def sweep(who: AdminDep, memory: MemoryDep) -> Swept:
    """Admin only: erase the expired messages now (the server also sweeps hourly by itself)."""
    return Swept(**await memory.sweep())
