"""Thread queries (:class:`~memvault.stores.base.ThreadQuery`): the rules every store shares.

- :func:`check_thread_query` refuses a bad query before anything is read;
- :func:`fold` is the case folding of ``title_contains`` (the SQL stores keep each title folded
  in a ``title_fold`` column, written by Python, so the three stores fold alike);
- :func:`json_equal` / :func:`metadata_matches` are the metadata filter's equality;
- :func:`encode_page_cursor` / :func:`decode_page_cursor`: a page cursor names its order, so a
  cursor of one order given with another is refused instead of skipping threads. The default
  order's cursors keep the format they always had;
- :func:`thread_page_sql` / :func:`count_sql` build the SQL stores' statements, each read through
  an index led by ``resource_id`` (and the order's time column).
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memvault.errors import ValidationError, shown
from memvault.model import Thread, ThreadPage, check_json, check_text
from memvault.stores.base import ThreadQuery
from memvault.stores.common import MAX_COUNT, decode_cursor, encode_cursor, to_micros

ORDERS = ("updated_at", "created_at")
DIRECTIONS = ("desc", "asc")
_COLUMNS = {"updated_at": "updated_us", "created_at": "created_us"}
_TAGS = {("updated_at", "asc"): "ua", ("created_at", "desc"): "cd", ("created_at", "asc"): "ca"}


def fold(text: str | None) -> str:
    """``text`` case-folded (:meth:`str.casefold`); ``None`` (no title) folds to ``""``."""
    return "" if text is None else text.casefold()


def check_thread_query(query: ThreadQuery, cursor: str | None = None) -> ThreadQuery:
    """``query`` with its metadata as a plain ``dict``, or :class:`ValidationError` naming what
    is wrong: a title filter that is not text, metadata that is not a JSON object, an unknown
    order or direction, an offset that is not an integer from 0, an offset with a cursor."""
    if not isinstance(query, ThreadQuery):
        raise ValidationError(f"query must be a ThreadQuery, got {type(query).__name__}")
    if query.title_contains is not None:
        if not isinstance(query.title_contains, str):
            raise ValidationError(
                f"title_contains must be a string or None, got {shown(query.title_contains)}")
        try:
            check_text(query.title_contains)
        except ValueError as exc:
            raise ValidationError(f"title_contains: {exc}") from None
    metadata = query.metadata
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise ValidationError(f"metadata must be a JSON object (a dict), got {type(metadata).__name__}")
        try:
            metadata = check_json(dict(metadata))
        except ValueError as exc:
            raise ValidationError(f"metadata: {exc}") from None
    if query.order_by not in ORDERS:
        raise ValidationError(f"order_by must be 'updated_at' or 'created_at', got {shown(query.order_by)}")
    if query.direction not in DIRECTIONS:
        raise ValidationError(f"direction must be 'desc' or 'asc', got {shown(query.direction)}")
    if query.offset is not None:
        if not isinstance(query.offset, int) or isinstance(query.offset, bool) or not (
                0 <= query.offset <= MAX_COUNT):
            raise ValidationError(
                f"offset must be an integer from 0 to {MAX_COUNT}, got {shown(query.offset)}")
        if cursor is not None:
            raise ValidationError("give offset or cursor, not both")
    return ThreadQuery(title_contains=query.title_contains or None, metadata=metadata or None,
                       order_by=query.order_by, direction=query.direction, offset=query.offset)


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON: booleans only equal booleans, numbers compare
    by value (``1 == 1.0``), arrays item by item, objects key by key (any order)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and bool(a == b)


_ABSENT = object()


def metadata_matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether every key of ``wanted`` is in ``metadata`` with a :func:`json_equal` value."""
    return not wanted or all(
        (value := metadata.get(key, _ABSENT)) is not _ABSENT and json_equal(value, expected)
        for key, expected in wanted.items())


def sqlite_metadata_matches(metadata: str | None, wanted: str) -> int:
    """:func:`metadata_matches` as the SQLite function ``memvault_metadata_matches(metadata,
    wanted)``, both JSON text (registered on every connection of the SQLite store)."""
    try:
        found = json.loads(metadata) if metadata else {}
    except ValueError:  # a damaged row matches nothing
        return 0
    return int(isinstance(found, dict) and metadata_matches(found, _parsed(wanted)))


@functools.lru_cache(maxsize=64)
def _parsed(wanted: str) -> dict[str, Any]:
    """A metadata filter's JSON text, parsed once per query rather than once per row (callers
    never change the dict)."""
    value: dict[str, Any] = json.loads(wanted)
    return value


def selects(thread: Thread, query: ThreadQuery) -> bool:
    """Whether ``query``'s filters select ``thread`` (the in-memory store's filter)."""
    needle = fold(query.title_contains)
    return needle in fold(thread.title) and metadata_matches(thread.metadata, query.metadata)


def sort_key(thread: Thread, query: ThreadQuery) -> tuple[int, str]:
    """The key ``query`` orders threads by: the order's time in microseconds, then the id."""
    at = thread.updated_at if query.order_by == "updated_at" else thread.created_at
    return to_micros(at), thread.id


def encode_page_cursor(query: ThreadQuery, key: tuple[int, str]) -> str:
    """The cursor continuing after a thread of sort ``key`` in ``query``'s order."""
    tag = _TAGS.get((query.order_by, query.direction))
    if tag is None:
        return encode_cursor(*key)
    raw = f"{tag}:{key[0]}:{key[1]}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_cursor(cursor: str, query: ThreadQuery) -> tuple[int, str]:
    """The sort key a cursor holds, checked against ``query``'s order (a cursor of another order,
    or one no store made, is a :class:`ValidationError`)."""
    tag = _TAGS.get((query.order_by, query.direction))
    if tag is None:
        return decode_cursor(cursor)
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        found, rest = base64.urlsafe_b64decode(padded).decode().split(":", 1)
    except (ValueError, UnicodeDecodeError):
        found, rest = "", ""
    if found != tag:
        raise ValidationError(f"invalid page cursor for order_by={query.order_by!r} direction="
                              f"{query.direction!r}: pass the next_cursor of a previous page of the same "
                              "order unchanged")
    return decode_cursor(base64.urlsafe_b64encode(rest.encode()).decode())


def page(threads: Sequence[Thread], limit: int, query: ThreadQuery) -> ThreadPage:
    """The page of up to ``limit`` + 1 threads found in order: the first ``limit``, and a cursor
    when there were more."""
    kept = list(threads[:limit])
    cursor = encode_page_cursor(query, sort_key(kept[-1], query)) if len(threads) > limit else None
    return ThreadPage(threads=kept, next_cursor=cursor)


@dataclass(frozen=True)
class Dialect:
    """How a SQL store writes the filters: ``p``, its placeholder; ``contains``, a test that the
    folded title holds the parameter; ``metadata``, a test that the row's metadata matches the
    parameter (the filter as JSON text, :func:`metadata_matches`); ``string_key``, when given, a
    cheap test run first for each key the filter wants a string under (parameters: the key's
    JSON path, the string), which must hold for every row ``metadata`` selects."""

    p: str
    contains: str
    metadata: str
    string_key: str | None = None


def _plain_key(key: str) -> bool:
    """Whether SQLite's JSON path ``$."key"`` names this key (no quote, backslash or control
    character in it)."""
    return not any(c in '"\\' or ord(c) < 0x20 for c in key)


def _filters(query: ThreadQuery, dialect: Dialect) -> tuple[str, list[Any]]:
    """The ``AND ...`` clauses of ``query``'s filters, with their parameters."""
    sql, args = "", []
    if query.title_contains:
        sql += f" AND {dialect.contains}"
        args.append(fold(query.title_contains))
    if query.metadata:
        for key, value in query.metadata.items() if dialect.string_key else ():
            if isinstance(value, str) and _plain_key(key):
                sql += f" AND {dialect.string_key}"
                args += [f'$."{key}"', value]
        sql += f" AND {dialect.metadata}"
        args.append(json.dumps(query.metadata, ensure_ascii=False))
    return sql, args


def thread_page_sql(query: ThreadQuery, after: tuple[int, str] | None, limit: int, dialect: Dialect,
                    columns: str) -> tuple[str, list[Any]]:
    """A page (``limit`` + 1 rows of ``columns``) of a resource's threads that ``query`` selects,
    after the sort key ``after``: the statement, and its parameters after the resource id."""
    p = dialect.p
    filters, args = _filters(query, dialect)
    column, direction = _COLUMNS[query.order_by], query.direction.upper()
    keyset = ""
    if after is not None:
        keyset = f" AND ({column}, id) {'<' if query.direction == 'desc' else '>'} ({p}, {p})"
        args += list(after)
    sql = (f"SELECT {columns} FROM threads WHERE resource_id = {p}{filters}{keyset}"
           f" ORDER BY {column} {direction}, id {direction} LIMIT {p}")
    args.append(limit + 1)
    if query.offset:
        sql += f" OFFSET {p}"
        args.append(query.offset)
    return sql, args


def count_sql(query: ThreadQuery, dialect: Dialect) -> tuple[str, list[Any]]:
    """How many of a resource's threads ``query``'s filters select: the statement, and its
    parameters after the resource id (read through the primary key, led by ``resource_id``)."""
    filters, args = _filters(query, dialect)
    return f"SELECT count(*) FROM threads WHERE resource_id = {dialect.p}{filters}", args
