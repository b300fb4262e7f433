"""Recall's reads of a SQL store, as messages or as passages, from one query each.

A SQL store reads a row the same way whether it makes a :class:`~memvault.model.Message` of it
(:func:`~memvault.stores.rows.message`) or a :class:`~memvault.stores.passages.Passage`
(:func:`~memvault.stores.rows.passage`). :class:`RowReads` gives ``search_messages`` and
``search_passages`` from the store's ``_search``, and ``read_around`` and ``read_passages``
from its ``_read_around``, each called with what to make of a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memvault.model import Message, SearchHit
from memvault.stores import rows
from memvault.stores.passages import Passage

T = TypeVar("T")


class RowReads:
    """Full-text search and neighbourhood reads, as messages and as passages
    (:class:`~memvault.stores.capabilities.FullTextSearch`' ``search_messages``,
    :class:`~memvault.stores.capabilities.BatchReads`' ``read_around`` and
    :class:`~memvault.stores.capabilities.PassageReads`), for a store that implements the two
    row reads below."""

    async def _search(
        self, resource_id: str, query: str, thread_id: str | None, limit: int, make: Callable[[Any], T]
    ) -> list[tuple[T, float]]:
        """The full-text hits, best first, each row made into what ``make`` makes of it."""
        raise NotImplementedError

    async def _read_around(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int, make: Callable[[Any], T]
    ) -> dict[str, list[T]]:
        """``read_around``'s rows, each made into what ``make`` makes of it."""
        raise NotImplementedError

    async def search_messages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        found = await self._search(resource_id, query, thread_id, limit, rows.message)
        return [SearchHit.model_construct(message=message, score=score) for message, score in found]

    async def search_passages(
        self, resource_id: str, query: str, *, thread_id: str | None = None, limit: int = 10
    ) -> list[tuple[Passage, float]]:
        return await self._search(resource_id, query, thread_id, limit, rows.passage)

    async def read_around(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Message]]:
        return await self._read_around(resource_id, ids, message_range, rows.message)

    async def read_passages(
        self, resource_id: str, ids: Mapping[str, Sequence[str]], message_range: int
    ) -> dict[str, list[Passage]]:
        return await self._read_around(resource_id, ids, message_range, rows.passage)
