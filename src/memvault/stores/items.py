"""The optional :class:`ItemStore` capability: a long-term key-value store of JSON documents in
namespaces (LangGraph's ``BaseStore``, :mod:`memvault.integrations.langgraph`), kept beside the
conversations.

An item is a JSON object under a key, in a namespace (a tuple of non-empty labels without
``.``). Everything is keyed by resource first: a resource never reads, lists or deletes another
resource's items, and deleting a resource deletes its items in the same transaction. An item
may expire (``expires_at``): from that moment every read leaves it out, and
:meth:`ItemStore.expire_items` erases it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeGuard, runtime_checkable

from memvault.errors import ConfigurationError
from memvault.stores.capabilities import implements

Namespace = tuple[str, ...]
ItemKey = tuple[Namespace, str]
"""An item's namespace and key."""
SEPARATOR = "."
"""Joins a namespace's labels in the stores' ``namespace`` column (labels never hold it)."""


@dataclass(frozen=True)
class ItemRecord:
    """One stored item."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: datetime
    """When the key was first written (kept by later writes of it)."""
    updated_at: datetime
    expires_at: datetime | None = None
    ttl_minutes: float | None = None
    """How long a read that refreshes pushes ``expires_at`` forward (``None``: never expires)."""
    words: str = ""
    """The item's indexed text as folded search words, space-separated (:mod:`memvault.rules.words`)."""
    vector: bytes = b""
    """The item's indexed text embedded, float32 (empty without an embedder)."""


def namespace_path(namespace: Namespace) -> str:
    """The stored form of a namespace."""
    return SEPARATOR.join(namespace)


def namespace_of(path: str) -> Namespace:
    """The namespace of a stored path."""
    return tuple(path.split(SEPARATOR))


def prefix_bounds(prefix: Namespace) -> tuple[str, str, str]:
    """``(path, low, high)``: a namespace is under ``prefix`` when its path equals ``path`` or
    lies in ``[low, high)`` (``/`` follows ``.`` in code-point order)."""
    path = namespace_path(prefix)
    return path, path + SEPARATOR, path + "/"


def under(namespace: Namespace, prefix: Namespace) -> bool:
    """Whether ``namespace`` starts with ``prefix``."""
    return namespace[: len(prefix)] == prefix


@runtime_checkable
class ItemStore(Protocol):
    """A resource's long-term items."""

    async def put_items(self, resource_id: str, items: Sequence[ItemRecord]) -> None:
        """Create or overwrite each item (an overwrite keeps the stored ``created_at``)."""
        ...

    async def delete_items(self, resource_id: str, keys: Sequence[ItemKey]) -> int:
        """Delete these items; returns how many existed."""
        ...

    async def get_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> list[ItemRecord]:
        """The items of ``keys`` that exist and have not expired at ``now``, in no set order."""
        ...

    async def scan_items(self, resource_id: str, prefix: Namespace, now: datetime) -> list[ItemRecord]:
        """Every unexpired item whose namespace starts with ``prefix`` (``()``: all), most
        recently updated first (then by namespace and key)."""
        ...

    async def item_namespaces(self, resource_id: str, now: datetime) -> list[Namespace]:
        """The namespaces holding an unexpired item, in path order."""
        ...

    async def refresh_items(self, resource_id: str, keys: Sequence[ItemKey], now: datetime) -> None:
        """Push the expiry of these items (those with a ``ttl_minutes``) to ``now`` plus it."""
        ...

    async def expire_items(self, now: datetime) -> int:
        """Erase every resource's items expired at ``now``; returns how many."""
        ...


def supports_items(store: object) -> TypeGuard[ItemStore]:
    """Whether ``store`` has :class:`ItemStore`."""
    return implements(store, ItemStore)


def require_items(store: object) -> ItemStore:
    """``store`` as an :class:`ItemStore`, or :class:`ConfigurationError`."""
    if not supports_items(store):
        raise ConfigurationError(f"{type(store).__name__} keeps no long-term items: use a store that does "
                                 "(the built-in memory://, sqlite:/// and postgresql:// stores all do)")
    return store
