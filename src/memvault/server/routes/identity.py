"""``GET /v1/me`` (who the key is) and ``GET /v1/resources`` (admin: every resource, counted)."""

from __future__ import annotations

from fastapi import APIRouter

from memvault.server.auth import AdminDep, CallerDep, MemoryDep
from memvault.server.schemas import ERRORS, Me, ResourceCounts, Resources
from memvault.transfer.reserved import KEYS_RESOURCE
from memvault.transfer.stats import export_store, resource_stats

router = APIRouter(prefix="/v1", tags=["identity"], responses=ERRORS)


@router.get("/me")
async def me(who: CallerDep) -> Me:
    """The key's id and name, whether it is an admin key, and the resource it acts on (for an
    admin key: the ``X-Memvault-Resource`` header's, or null)."""
    return Me(resource_id=who.resource_id, admin=who.key.admin, key_id=who.key.key_id, name=who.key.name)


@router.get("/resources")
async def resources(who: AdminDep, memory: MemoryDep) -> Resources:
    """Admin only: every resource with its thread and message counts, in id order (the reserved
    key resource is hidden)."""
    ids = [r for r in await export_store(memory.store).resource_ids() if r != KEYS_RESOURCE]
    rows = []
    for resource_id in ids:
        counts = await resource_stats(memory.store, resource_id)
        rows.append(ResourceCounts(resource_id=resource_id, threads=counts["threads"],
                                   messages=counts["messages"]))
    return Resources(resources=rows)
