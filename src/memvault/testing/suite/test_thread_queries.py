"""Thread queries: filters (title contains, metadata equals), orders, offset and cursor paging,
counts; and a property test against a plain Python model of the same query."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, Thread, ValidationError
from memvault.stores.capabilities import require_export
from memvault.testing import has
from memvault.testing.support import tick

R = "alice"
T0 = datetime(2024, 5, 1, tzinfo=UTC)


async def _titled(memory: Memory, titles: dict[str, str | None], **metadata: dict[str, Any]) -> None:
    for thread_id, title in titles.items():
        await memory.create_thread(resource_id=R, thread_id=thread_id, title=title,
                                   metadata=metadata.get(thread_id, {}))


async def _ids(memory: Memory, **query: Any) -> list[str]:
    return [t.id for t in (await memory.list_threads(resource_id=R, limit=100, **query)).threads]


async def test_title_contains_is_case_insensitive_and_literal(memory: Memory) -> None:
    await _titled(memory, {"a": "Trip to PARIS", "b": "paris notes", "c": "100% sure_thing",
                           "d": "100x sureXthing", "e": "back\\slash", "f": "Straße", "g": "東京 🎉 旅行",
                           "h": None})
    assert sorted(await _ids(memory, title_contains="Paris")) == ["a", "b"]
    assert await _ids(memory, title_contains="0%") == ["c"]
    assert await _ids(memory, title_contains="e_t") == ["c"]
    assert await _ids(memory, title_contains="\\s") == ["e"]
    assert await _ids(memory, title_contains="STRASSE") == ["f"]
    assert await _ids(memory, title_contains="🎉 旅") == ["g"]
    assert await _ids(memory, title_contains="%") == ["c"]
    assert await _ids(memory, title_contains="nowhere") == []
    assert len(await _ids(memory, title_contains="")) == 8  # no filter: untitled threads too
    assert await memory.count_threads(resource_id=R, title_contains="PARIS") == 2
    assert await memory.count_threads(resource_id=R) == 8


async def test_title_filter_follows_renames(memory: Memory) -> None:
    await _titled(memory, {"a": "Old name"})
    await memory.update_thread(thread_id="a", resource_id=R, title="New NAME")
    assert await _ids(memory, title_contains="old") == []
    assert await _ids(memory, title_contains="new name") == ["a"]
    await memory.update_thread(thread_id="a", resource_id=R, title=None)
    assert await _ids(memory, title_contains="new") == []


async def test_metadata_equals_every_key_as_json(memory: Memory) -> None:
    await _titled(memory, dict.fromkeys("abcdef"), a={"project": "x", "n": 1}, b={"project": "x", "n": 1.0},
                  c={"project": "x", "n": True}, d={"project": "y", "n": 1},
                  e={"project": "x", "nested": {"k": [1, "two"], "z": None}}, f={"n": None})
    assert sorted(await _ids(memory, metadata={"project": "x"})) == ["a", "b", "c", "e"]
    assert sorted(await _ids(memory, metadata={"project": "x", "n": 1})) == ["a", "b"]  # 1 == 1.0
    assert await _ids(memory, metadata={"n": True}) == ["c"]  # true is not 1
    assert await _ids(memory, metadata={"n": None}) == ["f"]  # a missing key is not null
    assert await _ids(memory, metadata={"nested": {"z": None, "k": [1, "two"]}}) == ["e"]  # any key order
    assert await _ids(memory, metadata={"nested": {"k": [1]}}) == []  # equal, not contained
    assert await _ids(memory, metadata={"missing": "x"}) == []
    assert len(await _ids(memory, metadata={})) == 6
    assert await memory.count_threads(resource_id=R, metadata={"project": "x", "n": 1}) == 2
    assert await memory.count_threads(resource_id=R, metadata={"project": "x"}, title_contains="z") == 0


async def test_metadata_strings_under_any_key(memory: Memory) -> None:
    odd = {'quo"te': "a", "back\\slash": "b", "new\nline": "c", "$.x[0]": "d", "": "e", "ключ": "é"}
    await _titled(memory, {"a": None, "b": None, "c": None}, a=odd, b={"n": 1, "s": "1"},
                  c={"n": "1", "s": 1})
    for key, value in odd.items():
        assert await _ids(memory, metadata={key: value}) == ["a"], key
        assert await _ids(memory, metadata={key: value.upper() + "?"}) == [], key
    assert await _ids(memory, metadata=odd) == ["a"]
    assert await _ids(memory, metadata={"n": "1"}) == ["c"]  # a string is not a number
    assert await _ids(memory, metadata={"s": "1"}) == ["b"]
    assert await memory.count_threads(resource_id=R, metadata={"n": 1}) == 1


async def test_orders_directions_and_offset(memory: Memory) -> None:
    for thread_id in ("a", "b", "c", "d"):
        await memory.create_thread(resource_id=R, thread_id=thread_id)
        await tick()
    await memory.update_thread(thread_id="b", resource_id=R, title="touched")
    assert await _ids(memory) == ["b", "d", "c", "a"]
    assert await _ids(memory, direction="asc") == ["a", "c", "d", "b"]
    assert await _ids(memory, order_by="created_at") == ["d", "c", "b", "a"]
    assert await _ids(memory, order_by="created_at", direction="asc") == ["a", "b", "c", "d"]
    assert await _ids(memory, order_by="created_at", offset=1) == ["c", "b", "a"]
    page = await memory.list_threads(resource_id=R, order_by="created_at", direction="asc", offset=1, limit=2)
    assert ([t.id for t in page.threads], page.next_cursor is not None) == (["b", "c"], True)
    rest = await memory.list_threads(resource_id=R, order_by="created_at", direction="asc", limit=2,
                                     cursor=page.next_cursor)
    assert ([t.id for t in rest.threads], rest.next_cursor) == (["d"], None)
    assert await _ids(memory, offset=4) == []
    assert await _ids(memory, offset=10**12) == []


async def test_default_call_keeps_its_cursor_format(memory: Memory) -> None:
    """A cursor of the default order (most recent activity first) works with or without the
    explicit defaults: cursors made before thread queries existed still work."""
    for thread_id in ("a", "b", "c"):
        await memory.create_thread(resource_id=R, thread_id=thread_id)
        await tick()
    page = await memory.list_threads(resource_id=R, limit=1)
    explicit = await memory.list_threads(resource_id=R, limit=1, order_by="updated_at", direction="desc")
    assert page == explicit
    assert page.next_cursor is not None
    rest = await memory.list_threads(resource_id=R, cursor=page.next_cursor, order_by="updated_at")
    assert [t.id for t in rest.threads] == ["b", "a"]


@pytest.mark.parametrize(("made", "used"), [
    ({}, {"order_by": "created_at"}), ({}, {"direction": "asc"}),
    ({"order_by": "created_at"}, {}), ({"order_by": "created_at", "direction": "asc"}, {"direction": "asc"}),
])
async def test_a_cursor_of_another_order_is_refused(memory: Memory, made: dict[str, Any],
                                                    used: dict[str, Any]) -> None:
    for thread_id in ("a", "b", "c"):
        await memory.create_thread(resource_id=R, thread_id=thread_id)
    page = await memory.list_threads(resource_id=R, limit=1, **made)
    with pytest.raises(ValidationError, match="cursor"):
        await memory.list_threads(resource_id=R, limit=1, cursor=page.next_cursor, **used)


@pytest.mark.parametrize("query", [
    {"offset": 1, "cursor": "MTow"}, {"offset": -1}, {"offset": True}, {"offset": "1"}, {"offset": 2**63},
    {"order_by": "title"}, {"order_by": None}, {"direction": "up"}, {"title_contains": 3},
    {"title_contains": "a\x00"}, {"title_contains": "\ud800"}, {"metadata": "x"}, {"metadata": ["a"]},
    {"metadata": {"k": {1, 2}}}, {"metadata": {"k": float("nan")}}, {"metadata": {1: "int key"}},
])
async def test_bad_query_is_a_validation_error(memory: Memory, query: dict[str, Any]) -> None:
    await memory.create_thread(resource_id=R, thread_id="a")
    with pytest.raises(ValidationError):
        await memory.list_threads(resource_id=R, **query)
    counted = {k: v for k, v in query.items() if k in ("title_contains", "metadata")}
    if counted:
        with pytest.raises(ValidationError):
            await memory.count_threads(resource_id=R, **counted)


async def test_another_resource_threads_never_appear_or_count(memory: Memory) -> None:
    await memory.create_thread(resource_id="bob", thread_id="a", title="shared words", metadata={"k": 1})
    await memory.create_thread(resource_id=R, thread_id="b", title="shared words", metadata={"k": 1})
    for query in ({}, {"title_contains": "shared"}, {"metadata": {"k": 1}}):
        assert await _ids(memory, **query) == ["b"]
        assert await memory.count_threads(resource_id=R, **query) == 1
    assert await memory.count_threads(resource_id="nobody") == 0
    assert await _ids(memory, order_by="created_at", direction="asc", offset=0) == ["b"]


# The property test: random threads (titles with letters in both cases, CJK, emoji, % _ \,
# metadata from a small pool so filters match, times from a small pool so that ties happen),
# restored with exact times, then random queries compared with a plain Python model.

TITLE_CHARS = st.sampled_from([*"aAbBßSs%_\\ 東京🎉ΣςİiÉé", "\N{GREEK SMALL LETTER SIGMA}"])
TITLES = st.one_of(st.none(), st.text(TITLE_CHARS, max_size=6))
VALUES = st.sampled_from([0, 1, 1.0, 2, True, False, None, "x", "X", "", [1, "a"], {"k": 1, "j": [True]},
                          {"j": [True], "k": 1.0}])
METADATA = st.dictionaries(st.sampled_from(["p", "q", "%", "ключ"]), VALUES, max_size=3)
TIMES = st.integers(0, 5).map(lambda n: T0 + timedelta(seconds=n))
THREADS = st.lists(st.tuples(TITLES, METADATA, TIMES, TIMES), max_size=14)
QUERIES = st.fixed_dictionaries({
    "title_contains": st.one_of(st.none(), st.text(TITLE_CHARS, max_size=2)),
    "metadata": st.one_of(st.none(),
                          st.dictionaries(st.sampled_from(["p", "q", "ключ"]), VALUES, max_size=2)),
    "order_by": st.sampled_from(["updated_at", "created_at"]),
    "direction": st.sampled_from(["desc", "asc"]),
    "limit": st.integers(1, 5),
    "offset": st.one_of(st.none(), st.integers(0, 6)),
})


def _canonical(value: Any) -> Any:
    """A form where JSON-equal values are equal in Python (and ``True != 1``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, list):
        return ("array", tuple(_canonical(v) for v in value))
    return ("object", tuple(sorted((k, _canonical(v)) for k, v in value.items())))


def _expected(threads: list[Thread], query: dict[str, Any]) -> list[str]:
    needle = (query["title_contains"] or "").casefold()
    wanted = query["metadata"] or {}
    found = [t for t in threads if needle in (t.title or "").casefold() and all(
        k in t.metadata and _canonical(t.metadata[k]) == _canonical(v) for k, v in wanted.items())]
    found.sort(key=lambda t: (getattr(t, query["order_by"]), t.id), reverse=query["direction"] == "desc")
    return [t.id for t in found]


async def _check_queries(factory: Any, rows: list[tuple[Any, ...]], queries: list[dict[str, Any]]) -> None:
    threads = [Thread(resource_id=R, id=f"t{i:02d}", title=title, metadata=metadata, created_at=created,
                      updated_at=max(created, updated))
               for i, (title, metadata, created, updated) in enumerate(rows)]
    with tempfile.TemporaryDirectory() as folder:
        async with factory.memory(Path(folder)) as memory:
            if not has(memory, "export"):  # (the threads are restored with their exact times)
                pytest.skip(f"{type(memory.store).__name__} ({factory.id}) has no export capability")
            store = require_export(memory.store)
            for thread in threads:
                await store.restore_thread(thread)
                # the same ids and titles under another resource never show
                await store.restore_thread(thread.model_copy(update={"resource_id": "bob"}))
            for query in queries:
                expected = _expected(threads, query)
                filters = {k: query[k] for k in ("title_contains", "metadata")}
                assert await memory.count_threads(resource_id=R, **filters) == len(expected)
                options = {k: query[k] for k in ("order_by", "direction", "limit", *filters)}
                start = query["offset"] or 0
                first = await memory.list_threads(resource_id=R, offset=query["offset"], **options)
                assert [t.id for t in first.threads] == expected[start:start + query["limit"]]
                assert (first.next_cursor is not None) == (len(expected) > start + query["limit"])
                seen, page = [t.id for t in first.threads], first
                while page.next_cursor is not None:  # cursor paging from there covers the rest exactly
                    page = await memory.list_threads(resource_id=R, cursor=page.next_cursor, **options)
                    assert page.threads
                    seen += [t.id for t in page.threads]
                assert seen == expected[start:]
                listed = {t.id: t for t in first.threads}
                assert all(listed[i] == threads[int(i[1:])] for i in listed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=THREADS, queries=st.lists(QUERIES, min_size=1, max_size=6))
def test_queries_match_a_python_model(
    store_factory: Any, rows: list[tuple[Any, ...]], queries: list[dict[str, Any]]
) -> None:
    asyncio.run(_check_queries(store_factory, rows, queries))
