""":class:`MemvaultStore`: LangGraph's ``BaseStore`` (long-term memory) over a memvault store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from memvault.embeddings.base import Embedder
from memvault.errors import ValidationError
from memvault.integrations.langgraph import search as _search
from memvault.integrations.langgraph.bridge import Bridge
from memvault.integrations.langgraph.filters import matches_filter, namespace_matches
from memvault.model import check_json, valid_id
from memvault.stores.items import ItemKey, ItemRecord, Namespace

__all__ = ["MemvaultStore"]


class MemvaultStore(BaseStore):
    """LangGraph's long-term store for one resource, kept in the memvault store of ``memory``
    (its ``graph_items`` table on SQLite and PostgreSQL)::

        memory = await Memory.open("sqlite:///app.db")
        store = MemvaultStore(memory, resource_id="ada")
        graph = builder.compile(checkpointer=MemvaultSaver(memory, resource_id="ada"), store=store)

    ``memory`` is a :class:`memvault.Memory` or a :class:`memvault.sync.Memory` (as for
    :class:`~memvault.integrations.langgraph.MemvaultSaver`). ``resource_id`` (required) binds
    the store to one resource: its namespaces are that resource's alone, and
    :meth:`memvault.Memory.delete_resource` deletes them with the rest of the resource.

    Answers are those of LangGraph's ``InMemoryStore`` (the reference): ``get``, ``put``
    (``None`` deletes), ``delete``, ``search`` with a namespace prefix, a value ``filter``
    (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``), ``limit`` and ``offset``, and
    ``list_namespaces`` with prefix/suffix matches (``"*"`` for any label) and ``max_depth``.
    In one ``batch``, reads see the store as it was before the batch's writes.
    ``search`` without a query lists the most recently updated items first.

    ``search(query=...)`` ranks by memvault's recall scoring (:mod:`.search`): words always,
    and meaning with an embedder: ``embedder`` (any :func:`memvault.embeddings.resolve_embedder`
    spec), else the memory's own. ``fields`` (default ``("$",)``, the whole value) are the
    paths of the value that are indexed; ``put(..., index=[...])`` overrides them for one item,
    ``index=False`` indexes nothing.

    TTL (``supports_ttl``): ``put(..., ttl=minutes)``, or ``ttl={"default_ttl": minutes}`` for
    every item; an expired item is left out of every read at once, and a read refreshes its
    expiry unless ``refresh_ttl=False`` (or ``ttl={"refresh_on_read": False}``).
    :meth:`sweep` (``asweep``) erases expired items.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Any,
        *,
        resource_id: str,
        fields: Sequence[str] = ("$",),
        embedder: Any = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self._bridge = Bridge(memory)
        self.resource_id = valid_id(resource_id, "resource_id")
        self._items = self._bridge.memory.item_store()
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise ValidationError("fields must be a sequence of paths (strings), e.g. ('$',) or ('text',)")
        self.fields = tuple(fields)
        self.ttl_config = ttl
        self.embedder: Embedder | None = None
        if embedder is not None:
            from memvault.embeddings import resolve_embedder

            self.embedder = resolve_embedder(embedder)
        else:
            semantic = self._bridge.memory.semantic
            self.embedder = semantic.embedder if semantic is not None else None

    def __repr__(self) -> str:
        return f"MemvaultStore(resource_id={self.resource_id!r})"

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._bridge.run(self.abatch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` (LangGraph's ``GetOp``, ``SearchOp``, ``ListNamespacesOp``, ``PutOp``):
        the reads first, on the store as it was, then the writes (the last of one key wins)."""
        self._bridge.seen()
        ops = list(ops)
        for op in ops:
            if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
                raise ValidationError(f"unknown store operation {type(op).__name__}")
            validate_op_namespace(op)
        now = datetime.now(UTC)
        doomed, records = await self._prepare([op for op in ops if isinstance(op, PutOp)], now)
        results: list[Result] = [None] * len(ops)
        await self._gets(ops, results, now)
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = await self._search(op, now)
            elif isinstance(op, ListNamespacesOp):
                results[i] = await self._namespaces(op, now)
        await self._items.delete_items(self.resource_id, doomed)
        await self._items.put_items(self.resource_id, records)
        return results

    def sweep(self) -> int:
        """Erase the expired items of every resource; returns how many."""
        return self._bridge.run(self.asweep())

    async def asweep(self) -> int:
        """:meth:`sweep`, async."""
        self._bridge.seen()
        return await self._items.expire_items(datetime.now(UTC))

    async def _gets(self, ops: list[Op], results: list[Result], now: datetime) -> None:
        wanted = [(op.namespace, op.key) for op in ops if isinstance(op, GetOp)]
        if not wanted:
            return
        found = {(i.namespace, i.key): i for i in await self._items.get_items(self.resource_id, wanted, now)}
        refresh: list[ItemKey] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp) and (item := found.get((op.namespace, op.key))) is not None:
                results[i] = _item(item)
                if op.refresh_ttl and item.ttl_minutes is not None:
                    refresh.append((item.namespace, item.key))
        await self._items.refresh_items(self.resource_id, refresh, now)

    async def _search(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        candidates = [
            i
            for i in await self._items.scan_items(self.resource_id, op.namespace_prefix, now)
            if matches_filter(i.value, op.filter)
        ]
        if op.query:
            query_vector = (await _search.embed(self.embedder, [op.query]))[0]
            ranked: list[tuple[ItemRecord, float | None]] = [
                *_search.rank(op.query, candidates, query_vector)
            ]
        else:
            ranked = [(item, None) for item in candidates]
        page = ranked[op.offset : op.offset + op.limit] if op.limit >= 0 and op.offset >= 0 else []
        if op.refresh_ttl:
            await self._items.refresh_items(
                self.resource_id, [(i.namespace, i.key) for i, _ in page if i.ttl_minutes is not None], now
            )
        return [_search_item(item, score) for item, score in page]

    async def _namespaces(self, op: ListNamespacesOp, now: datetime) -> list[Namespace]:
        spaces = [
            ns
            for ns in await self._items.item_namespaces(self.resource_id, now)
            if all(namespace_matches(ns, c.match_type, tuple(c.path)) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            spaces = [ns[: op.max_depth] for ns in spaces]
        return sorted(set(spaces))[op.offset : op.offset + op.limit]

    async def _prepare(self, puts: list[PutOp], now: datetime) -> tuple[list[ItemKey], list[ItemRecord]]:
        """The keys the puts delete and the items they write (the last put of a key wins), all
        checked (and embedded) before anything is written."""
        last = {(op.namespace, op.key): op for op in puts}
        doomed = [key for key, op in last.items() if op.value is None]
        kept = [(op, _json_object(op.value), _ttl(op.ttl)) for op in last.values() if op.value is not None]
        texts = [_search.indexed_text(value, self._fields(op)) for op, value, _ in kept]
        vectors = await _search.embed(self.embedder, ["\n".join(t) for t in texts])
        records = [
            ItemRecord(
                namespace=op.namespace,
                key=op.key,
                value=value,
                created_at=now,
                updated_at=now,
                expires_at=now + timedelta(minutes=ttl) if ttl is not None else None,
                ttl_minutes=ttl,
                words=_search.words(text),
                vector=vector,
            )
            for (op, value, ttl), text, vector in zip(kept, texts, vectors, strict=True)
        ]
        return doomed, records

    def _fields(self, op: PutOp) -> Sequence[str]:
        if op.index is False:
            return ()
        return self.fields if op.index is None else list(op.index)


def _ttl(minutes: Any) -> float | None:
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes > 0:
        raise ValidationError(f"ttl is a positive number of minutes (or None), got {minutes!r}")
    return float(minutes)


def _json_object(value: Any) -> dict[str, Any]:
    """``value`` as a JSON object (checked: a store item must survive the database)."""
    if not isinstance(value, dict):
        raise ValidationError(f"a store item's value is a dict, got {type(value).__name__}")
    try:
        checked: dict[str, Any] = check_json(dict(value), "value")
    except ValueError as exc:
        raise ValidationError(f"a store item's value must be JSON: {exc}") from exc
    return checked


def _fields(record: ItemRecord) -> dict[str, Any]:
    """What LangGraph's :class:`Item` (and :class:`SearchItem`) takes of a stored item."""
    return {"namespace": record.namespace, "key": record.key, "value": record.value,
            "created_at": record.created_at, "updated_at": record.updated_at}


def _item(record: ItemRecord) -> Item:
    return Item(**_fields(record))


def _search_item(record: ItemRecord, score: float | None) -> SearchItem:
    return SearchItem(**_fields(record), score=score)
