"""Full-text search in SQLite: FTS5 finds a resource's matching messages, scored from that
resource's own statistics.

The index holds each message's body (:func:`memvault.rules.words.index_text`, stemmed by FTS5's
porter tokenizer) and its resource's scope token (:func:`~.schema.scope_token`); it is filled in
batches off the write path, and always before a search runs (:func:`~.schema.index_pending`).
When that indexing cannot write (a read-only open, a full disk, a read-only file system), the
search indexes the resource's pending messages in a temporary table instead (:func:`_index_tail`)
and its results are the same.
A query's words are matched as :func:`memvault.rules.words.query_groups` makes them, so matching
agrees with every other store.

Scores are BM25 computed from the resource's data alone (invariant 3), never from FTS5's
``bm25()``, whose statistics are those of the whole index (every resource's messages: one
resource could then learn whether another wrote a word from its own hits' scores). For a
message ``d`` of a resource with ``N`` messages of ``avg`` characters of indexed text on
average (``search_stats`` for its indexed messages, kept by :func:`~.schema.index_pending` and
triggers, plus those a search indexes on the fly), and the query groups it contains::

    score(d) = sum(idf(g)) * (k1 + 1) / (1 + k1 * (1 - b + b * length(d) / avg))
    idf(g)   = ln((N - n(g) + 0.5) / (n(g) + 0.5) + 1)

where ``n(g)`` is how many of the resource's messages contain ``g`` (FTS5 counts it within the
resource's scope token) and a group counts once per message (FTS5 gives no term frequencies
to SQL). Best first; ties go to the older message, then the earlier saved.

How it is computed: FTS5 finds each query group's messages, which are grouped by the set of
groups each contains (a class: every message of a class has the same ``sum(idf(g))``), so the
scoring handles a query's classes, not its thousands of matches. Classes are read best first;
within one, the score falls strictly with the length, so only its ``limit`` shortest are read
back; a class whose score at length 0 is below the ``limit``-th score found ends the search.
When the file holds no other resource's messages, a group is matched without the scope token
(the same rows, a quarter of the time).

A very common word of the resource (in more than ``COMMON_SHARE`` of its messages, and more
than ``COMMON_MIN_MESSAGES``) is left out of a query that has rarer ones: it adds little to a
score and would make a search score most of the resource. This too depends on the resource's
data alone.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memvault.rules.words import fts5_match, stem
from memvault.stores import rows
from memvault.stores.passages import Mark, Passage, SearchPool
from memvault.stores.sqlite.batch import BY_ROWID, rows_near
from memvault.stores.sqlite.retention import cutoff_us
from memvault.stores.sqlite.schema import (
    BODY_CHARS_SQL,
    BODY_SQL,
    PENDING_STATS_SQL,
    SCOPE_SQL,
    TOKENIZE,
    scope_token,
)

T = TypeVar("T")

COLUMNS = rows.qualified(rows.MESSAGE_COLUMNS, "m")
"""The message columns :func:`memvault.stores.rows.message` reads, from ``messages AS m``."""
COMMON_SHARE = 0.05
COMMON_MIN_MESSAGES = 1_000
K1 = 1.2
B = 0.75


def idf(docs: int, having: int) -> float:
    """BM25's inverse document frequency (always positive), as the reference store computes it."""
    return math.log((docs - having + 0.5) / (having + 0.5) + 1)


def search(
    conn: sqlite3.Connection, resource_id: str, groups: list[list[str]], thread_id: str | None, limit: int,
    make: Callable[[Any], T], counts: WordCounts | None = None,
) -> list[tuple[T, float]]:
    """The resource's (or the thread's) messages matching the query ``groups``, best first,
    each row (:data:`COLUMNS`) made into what ``make`` makes of it, with its score. ``counts``
    remembers what the search learnt of its words' counts, for the next searches."""
    found = _found(conn, resource_id, groups, thread_id, limit, counts)
    if not found.scored:
        return []
    rows_of = {r[0]: r[1:] for r in conn.execute(
        f"SELECT m.rowid, {COLUMNS} FROM messages AS m WHERE m.rowid IN"
        " (SELECT value FROM json_each(?))", (json.dumps([r for _, _, r in found.scored]),))}
    return [(make(rows_of[rowid]), -negative) for negative, _, rowid in found.scored if rowid in rows_of]


def search_pool(
    conn: sqlite3.Connection, resource_id: str, groups: list[list[str]], thread_id: str | None, limit: int,
    message_range: int, counts: WordCounts | None = None,
) -> SearchPool:
    """:func:`search`'s hits, each with ``message_range`` neighbours on each side (one read for
    every thread), and for each message read the query groups its indexed text holds, from the
    matches the search found (every message of the resource holding a searched group is in one
    of its classes), and the text's length: a :class:`~memvault.stores.passages.SearchPool`."""
    found = _found(conn, resource_id, groups, thread_id, limit, counts)
    terms = [tuple(stem(word) for word in group) for group in found.kept]
    if not found.scored:
        return SearchPool([], terms, message_range=message_range)
    columns = f"m.rowid, {BODY_CHARS_SQL.format(row='m')}, {COLUMNS}"
    hit_rowids = [rowid for _, _, rowid in found.scored]
    read_rows = rows_near(conn, resource_id, BY_ROWID, hit_rowids, message_range, columns)
    masks = found.classes.masks({row[0] for row in read_rows})
    threads: dict[str, list[Passage]] = {}
    marks: dict[tuple[str, str], Mark] = {}
    by_rowid: dict[int, Passage] = {}
    for row in read_rows:
        read = rows.passage(row[2:])
        rowid, chars, message_id, thread = row[0], row[1], row[2], row[3]
        threads.setdefault(thread, []).append(read)
        marks[(thread, message_id)] = (masks.get(rowid, 0), int(chars or 0))
        by_rowid[rowid] = read
    hits = [(by_rowid[rowid], -negative) for negative, _, rowid in found.scored if rowid in by_rowid]
    return SearchPool(hits, terms, threads, marks, message_range)


@dataclass
class _Found:
    """What a search found: its best matches as ``(-score, created_us, rowid)``, best first;
    the query groups it matched (``kept``: the query's, less its common words); and every
    match of those groups in the resource by class (:func:`_classes`)."""

    scored: list[tuple[float, int, int]]
    kept: list[tuple[str, ...]]
    classes: _Classes


def _found(
    conn: sqlite3.Connection, resource_id: str, groups: list[list[str]], thread_id: str | None, limit: int,
    counts: WordCounts | None,
) -> _Found:
    if not groups:
        return _Found([], [], _Classes.none())
    tail, docs, chars = _index_tail(conn, resource_id)
    try:
        return _search(conn, resource_id, groups, thread_id, limit, tail, docs, chars, counts)
    finally:
        for table in tail:
            conn.execute(f"DROP TABLE temp.{table}")


def _search(
    conn: sqlite3.Connection, resource_id: str, groups: list[list[str]], thread_id: str | None,
    limit: int, tail: tuple[str, ...], docs: int, chars: int, counts: WordCounts | None,
) -> _Found:
    """:func:`_found` once the resource's pending messages are in ``tail`` and its statistics
    (indexed and pending messages) are known."""
    stats = conn.execute(
        "SELECT docs, chars, id, changes FROM search_stats WHERE resource_id = ?", (resource_id,)).fetchone()
    known: _Known | None = None
    if stats is not None:
        docs, chars = docs + int(stats[0]), chars + int(stats[1])
        if counts is not None:
            known = _Known(counts, resource_id, int(stats[2]), int(stats[3]))
    unique = list(dict.fromkeys(tuple(g) for g in groups))
    if not docs:
        return _Found([], unique, _Classes.none())
    scope = "" if _alone(conn, resource_id) else f'scope : "{scope_token(resource_id)}" AND '
    common = _common(conn, scope, unique, docs, known)
    kept = [g for g in unique if g not in common] or unique
    classes = _classes(conn, scope, kept, tail)
    if not classes.sizes:
        return _Found([], kept, classes)
    idfs = [idf(docs, count) for count in classes.having]
    weights: dict[int, float] = {}
    for mask in classes.sizes:  # the groups in query order, so that a sum is always made the same way
        weight = 0.0
        for i, value in enumerate(idfs):
            if mask >> i & 1:
                weight += value
        weights[mask] = weight
    average = chars / docs if docs and chars else 0.0
    scale = K1 * B / average if average else 0.0
    # rowid lookups, one per match (CROSS JOIN keeps that order): never a scan of the
    # resource's index, whose cost would be the resource's size, not the matches'. Within a
    # class every match has the same weight, so its best scores are its shortest texts (the
    # score falls strictly with the length), then the older, then the earlier saved: the
    # statement returns only the `limit` best of the class.
    sql = (f"SELECT m.rowid, {BODY_CHARS_SQL.format(row='m')} AS chars, m.created_us FROM json_each(?)"
           " CROSS JOIN messages AS m ON m.rowid = json_each.value WHERE +m.resource_id = ?")
    extra: list[Any] = [resource_id]
    cutoff = cutoff_us(conn, resource_id)  # expired messages are never hits (scores count them until swept)
    if cutoff is not None:
        sql += " AND +m.created_us >= ?"
        extra.append(cutoff)
    if thread_id is not None:
        sql += " AND +m.thread_id = ?"
        extra.append(thread_id)
    sql += f" ORDER BY {'chars, ' if scale else ''}m.created_us, m.rowid LIMIT ?"
    # Best weight first: a message's score is at most its weight's score at length 0 (`bound`),
    # so once the next class's bound is below the `limit`-th score found, no message left can
    # enter the top `limit`. The hits are those of scoring every match, but a common word in a
    # large resource no longer costs a row read per match.
    scored: list[tuple[float, int, int]] = []
    for mask in sorted(classes.sizes, key=weights.__getitem__, reverse=True):
        weight = weights[mask]
        bound = weight * (K1 + 1) / (1 + K1 * (1 - B))
        if len(scored) >= limit and bound < -scored[-1][0]:
            break
        scored = sorted([*scored, *(
            (-(weight * (K1 + 1) / (1 + K1 * (1 - B) + scale * length)), created, rowid)
            for rowid, length, created in conn.execute(
                sql, [json.dumps(classes.members(mask)), *extra, limit]))])[:limit]
    return _Found(scored, kept, classes)


def _alone(conn: sqlite3.Connection, resource_id: str) -> bool:
    """Whether the store holds no other resource's messages (the usual embedded file: one
    user's agent). The index then holds the resource's messages alone, so a search matches
    without the scope token, whose doclist is every message of the resource (intersecting
    with it cost 3 of every 4 milliseconds of matching at 100,000 messages). Two index seeks,
    in the search's snapshot, so the answer holds for the whole search."""
    return not any(conn.execute(f"SELECT 1 FROM messages WHERE resource_id {op} ? LIMIT 1",
                                (resource_id,)).fetchone() for op in ("<", ">"))


def _classes(
    conn: sqlite3.Connection, scope: str, groups: list[tuple[str, ...]], tail: tuple[str, ...]
) -> _Classes:
    """The resource's messages matching any of ``groups``, by class (:class:`_Classes`). FTS5
    finds each group's messages and SQLite hands them over as one JSON list a group (in C);
    the lists are merged here, the largest group's left whole: most matches hold that group
    alone, and only the others' are walked in Python. Grouping every match in SQL instead (a
    ``GROUP BY rowid`` over their union) sorted them all: 12.1 ms p50 against 7.3 at 1M
    messages in one resource, 1.27 against 0.85 at 100k (merged in a dict of every match, each
    class written as JSON); keeping the largest list whole and sorting out only the classes read
    took the classes to about 5 ms at 1M, the whole pool search from about 25 to 21
    (docs/benchmarks.md, ninth pass)."""
    union = " UNION ALL ".join(f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
                               for table in ("messages_fts", *tail))
    found: list[tuple[list[int], int]] = []
    for i, group in enumerate(groups):
        match = scope + "body : " + (fts5_match([list(group)]) or "")
        (rowids,) = conn.execute(f"SELECT json_group_array(rowid) FROM ({union})",
                                 [match] * (1 + len(tail))).fetchone()
        found.append((json.loads(rowids), 1 << i))
    having = [len(rowids) for rowids, _ in found]
    found.sort(key=lambda pair: -len(pair[0]))
    (largest, bit), others = found[0], found[1:]
    rest: dict[int, int] = dict.fromkeys(others[0][0], others[0][1]) if others else {}
    get = rest.get
    for rowids, other in others[1:]:
        for rowid in rowids:
            rest[rowid] = get(rowid, 0) | other
    both = rest.keys() & largest  # a C loop over the largest list
    for rowid in both:
        rest[rowid] |= bit
    sizes = dict(Counter(rest.values()))
    if len(largest) > len(both):
        sizes[bit] = len(largest) - len(both)
    return _Classes(having, sizes, rest, largest, bit)


@dataclass
class _Classes:
    """A query's matches in the resource by class: the set of kept groups a message holds, as a
    bit mask (bit ``i`` for ``groups[i]``). ``having``: each group's matches (its ``n(g)``);
    ``sizes``: each class's messages. The members themselves are kept as :func:`_classes`
    found them, the largest group's list (``largest``, bit ``bit``) and a mask for every match
    of another group (``rest``), and sorted out only for the classes a search reads."""

    having: list[int]
    sizes: dict[int, int]
    rest: dict[int, int]
    largest: list[int]
    bit: int
    _by_mask: dict[int, list[int]] | None = field(default=None, init=False, repr=False)

    @classmethod
    def none(cls) -> _Classes:
        """No matches."""
        return cls([], {}, {}, [], 0)

    def members(self, mask: int) -> list[int]:
        """The rowids of class ``mask``: those of the largest group's class in the index's order
        (ascending), any other's sorted. The other classes are sorted out of ``rest`` together,
        on the first call for one."""
        if mask == self.bit:
            rest = self.rest
            return [rowid for rowid in self.largest if rowid not in rest] if rest else self.largest
        if self._by_mask is None:
            self._by_mask = {}
            for rowid, of in self.rest.items():
                members = self._by_mask.get(of)
                if members is None:
                    self._by_mask[of] = [rowid]
                else:
                    members.append(rowid)
            for members in self._by_mask.values():
                members.sort()
        return self._by_mask.get(mask, [])

    def masks(self, rowids: set[int]) -> dict[int, int]:
        """The class of each of ``rowids`` that matched (a message matching none is left out)."""
        rest = self.rest
        found = {rowid: rest[rowid] for rowid in rowids if rowid in rest}
        found.update(dict.fromkeys(rowids.difference(found).intersection(self.largest), self.bit))
        return found


TAIL_TABLE = "messages_fts_tail"
"""The temporary full-text table of :func:`_index_tail` (in the connection's ``temp`` schema)."""


def _index_tail(conn: sqlite3.Connection, resource_id: str) -> tuple[tuple[str, ...], int, int]:
    """The resource's messages the index does not hold yet (saved by a process that has not
    indexed them, or not indexable now: a read-only open, a full disk), indexed in a temporary
    FTS5 table of the connection with the index's own tokenizer, so that they match exactly as
    indexed ones do (``()`` when there are none), with their count and characters of indexed
    text (for the statistics). The caller drops the table. A temporary table is the
    connection's own (memory or a temporary file): the database file is not written."""
    row = conn.execute(PENDING_STATS_SQL.format(where=" AND +resource_id = ?"), (resource_id,)).fetchone()
    if row is None:
        return (), 0, 0
    conn.execute(f"CREATE VIRTUAL TABLE temp.{TAIL_TABLE} USING fts5(body, scope, tokenize='{TOKENIZE}')")
    conn.execute(
        f"INSERT INTO temp.{TAIL_TABLE} (rowid, body, scope)"
        f" SELECT rowid, {BODY_SQL.format(row='messages')}, {SCOPE_SQL.format(row='messages')}"
        " FROM messages"
        " WHERE rowid > (SELECT indexed_upto FROM messages_fts_progress) AND resource_id = ?",
        (resource_id,))
    return (TAIL_TABLE,), int(row[1]), int(row[2])


def _common(
    conn: sqlite3.Connection, scope: str, groups: list[tuple[str, ...]], docs: int,
    known: _Known | None = None,
) -> set[tuple[str, ...]]:
    """The query's single words held by more than ``COMMON_SHARE`` of the resource's messages
    (and more than ``COMMON_MIN_MESSAGES``). Only a resource that large has any.

    Each word's matches in the whole index are walked only up to ``bound + others + 1``, where
    ``others`` bounds the indexed messages of the other resources (rowids are distinct and
    positive, so there are at most ``max(rowid) - docs``): fewer than ``bound + 1`` matches in
    the whole index means not common in the resource; all ``bound + others + 1`` means common
    (at least ``bound + 1`` are the resource's); only in between is the word counted within the
    resource. The answer is the resource's own count's, and a common word in a large resource
    costs a bounded walk of its doclist, not the whole of it (``fts5vocab`` counted every
    match: 9 ms for a word in 69 % of 100k messages, against 0.7 ms walked).

    With ``known`` (what earlier searches learnt of the resource's words), a word whose count
    is known to lie wholly above or below the bound, however much the resource changed since,
    is decided without a walk; what a walk finds is remembered. The answer is the same."""
    bound = int(max(COMMON_MIN_MESSAGES, COMMON_SHARE * docs))
    words = [g for g in groups if len(g) == 1]
    if docs <= bound or len(groups) < 2 or not words:
        return set()
    others: int | None = None
    walked = "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)"
    common: set[tuple[str, ...]] = set()
    for group in words:
        if known is not None:
            low, high = known.bounds(group)
            if low > bound:
                common.add(group)
                continue
            if high <= bound:
                continue
        if others is None:
            (last,) = conn.execute("SELECT max(rowid) FROM messages").fetchone()
            others = max(0, int(last or 0) - docs)
        body = "body : " + (fts5_match([list(group)]) or "")
        (seen,) = conn.execute(walked, (body, bound + others + 1)).fetchone()
        if seen > bound + others:
            common.add(group)
            low, high = seen - others, _MANY
        elif seen > bound:
            (count,) = conn.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (scope + body,)).fetchone()
            if count > bound:
                common.add(group)
            low = high = count
        else:
            low, high = max(0, seen - others), seen
        if known is not None:
            known.note(group, low, high)
    return common


_MANY = 2**62
"""An upper bound of any count (no word is in more messages than this)."""


_Words = OrderedDict[tuple[str, ...], tuple[int, int, int]]
"""A resource's words: ``(low, high, changes)`` each."""


class WordCounts:
    """What searches learnt of how many of a resource's indexed messages hold a word, for the
    searches after them: a low and a high bound of the count, at the resource's ``changes``
    (how many indexed messages its statistics row has gained or lost, migration 13). However
    the resource changed since, its count now lies within ``changes`` of those bounds, so a
    word far from :func:`_common`'s bound (a very common word, or a rare one) is decided
    without walking its matches again, and the decision is the one a walk would make. An
    entry holds for the statistics row it was learnt on (its id, never reused), so a resource
    emptied and filled again starts afresh.

    Held in memory by the store, for at most ``resources`` resources of ``words`` words each,
    the least recently searched dropped first; it holds query words and counts, no message
    text. Safe to share between threads."""

    def __init__(self, *, resources: int = 1024, words: int = 256) -> None:
        self.resources = resources
        self.words = words
        self._lock = threading.Lock()
        self._by_resource: OrderedDict[str, tuple[int, _Words]] = OrderedDict()

    def bounds(self, resource_id: str, row: int, changes: int, group: tuple[str, ...]) -> tuple[int, int]:
        """The bounds of ``group``'s count in the resource whose statistics row ``row`` is at
        ``changes`` now (``(0, _MANY)`` when nothing is known)."""
        with self._lock:
            found = self._by_resource.get(resource_id)
            if found is None or found[0] != row or group not in found[1]:
                return 0, _MANY
            self._by_resource.move_to_end(resource_id)
            low, high, then = found[1][group]
            found[1].move_to_end(group)
        moved = changes - then
        if moved < 0:  # cannot happen on one row; never trust it
            return 0, _MANY
        return max(0, low - moved), min(_MANY, high + moved)

    def note(
        self, resource_id: str, row: int, changes: int, group: tuple[str, ...], low: int, high: int
    ) -> None:
        """Remember that ``group``'s count lies within ``low``..``high`` at ``changes``."""
        with self._lock:
            found = self._by_resource.get(resource_id)
            if found is None or found[0] != row:
                found = self._by_resource[resource_id] = (row, OrderedDict())
            self._by_resource.move_to_end(resource_id)
            found[1][group] = (low, high, changes)
            found[1].move_to_end(group)
            while len(found[1]) > self.words:
                found[1].popitem(last=False)
            while len(self._by_resource) > self.resources:
                self._by_resource.popitem(last=False)

    def forget(self, resource_id: str) -> None:
        """Drop what is known of a resource (its messages were deleted)."""
        with self._lock:
            self._by_resource.pop(resource_id, None)


@dataclass
class _Known:
    """:class:`WordCounts` for one resource's statistics row, as one search reads it."""

    counts: WordCounts
    resource_id: str
    row: int
    changes: int

    def bounds(self, group: tuple[str, ...]) -> tuple[int, int]:
        return self.counts.bounds(self.resource_id, self.row, self.changes, group)

    def note(self, group: tuple[str, ...], low: int, high: int) -> None:
        self.counts.note(self.resource_id, self.row, self.changes, group, low, high)
