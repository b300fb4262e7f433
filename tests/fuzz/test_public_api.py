"""The error contract, fuzzed: any sequence of calls of the public ``Memory`` API, with arguments
drawn from plausible values and from garbage (None, huge integers, NaN, NUL bytes, lone
surrogates, SQL and FTS operators, wrong types, datetimes at their limits, malformed messages),
raises nothing but :mod:`memvault.errors` types, never hangs, and a call that raises writes
nothing (the store's :func:`~memvault.transfer.copier.digest` is unchanged).

Runs on ``memory://``, SQLite and PostgreSQL. Sized for CI; ``MEMVAULT_FUZZ_EXAMPLES=N`` runs N
sequences per store instead (``MEMVAULT_FUZZ_EXAMPLES=2000 pytest tests/fuzz``). Every untyped
error is reported with the call that raised it."""

from __future__ import annotations

import asyncio
import inspect
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Memory, MemoryOptions, Message
from memvault.errors import MemvaultError
from memvault.transfer.copier import digest
from postgres_server import drop_schema, postgres_url, with_schema

EXAMPLES = int(os.environ.get("MEMVAULT_FUZZ_EXAMPLES", "40"))
CALLS_PER_EXAMPLE = 12
CALL_TIMEOUT = 60.0
SKIPPED = {"close", "open", "flush", "stop_sweeping", "purge", "reindex", "clear_embeddings"}
"""Calls without arguments to get wrong (``purge`` would VACUUM FULL PostgreSQL at each step),
or that end the memory (``close``: its own conformance case)."""
METHODS = sorted(name for name, fn in inspect.getmembers(Memory, inspect.iscoroutinefunction)
                 if not name.startswith("_") and name not in SKIPPED)

IDS = st.sampled_from(["ada", "bob", "t1", "t2", "m1", "m2", "k1"])
NASTY_TEXT = st.sampled_from([
    "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "What's it?", "it's", "s", "' OR 1=1 --",
    'NEAR("a" "b")', "a AND b OR NOT c", "*", "-", "^", '"', "北京欢迎你", "😀👍", "ﬁ", "İ", "x" * 300,
    "a/b/../c", "%2F", "\n\t\r",
])
TEXT = st.one_of(NASTY_TEXT, st.text(max_size=20))
HUGE_INTS = st.one_of(st.sampled_from([2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, -1, 0]),
                      st.builds(pow, st.just(10), st.just(5000)))  # beyond int-to-str's 4,300 digits
INTS = st.one_of(st.integers(-3, 30), HUGE_INTS)
EXTREME_DATES = st.sampled_from([
    datetime.min, datetime.max, datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
    datetime.now(UTC) - timedelta(days=400), datetime(2024, 1, 1),
    datetime(1, 1, 1, 2, tzinfo=timezone(timedelta(hours=5))),
    datetime(9999, 12, 31, 22, tzinfo=timezone(timedelta(hours=-5))),
    "0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "2024-13-45", "not a date",
])
JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), INTS, st.floats(), TEXT),
                       lambda inner: st.one_of(st.lists(inner, max_size=3),
                                               st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)
JUNK = st.one_of(st.none(), st.booleans(), INTS, st.floats(), st.binary(max_size=8), TEXT, EXTREME_DATES,
                 st.timedeltas(), st.lists(st.one_of(INTS, TEXT), max_size=3),
                 st.dictionaries(TEXT, st.one_of(INTS, TEXT), max_size=3), st.just(object()))
PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "reasoning", "tool-call", "tool-result", "file", "nope"])},
    optional={"text": TEXT, "tool_call_id": TEXT, "name": TEXT, "args": JSONISH, "output": JSONISH})
MESSAGE_DICT = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "robot"]),
     "parts": st.one_of(st.lists(PART, max_size=3), JUNK)},
    optional={"id": st.one_of(IDS, TEXT), "created_at": st.one_of(EXTREME_DATES, TEXT, INTS),
              "metadata": st.one_of(JSONISH, JUNK)})
VALID_MESSAGE = st.builds(Message.user, st.text(min_size=1, max_size=10).filter(str.strip), id=IDS)
MESSAGES = st.one_of(st.lists(st.one_of(MESSAGE_DICT, VALID_MESSAGE), max_size=4), JUNK)


def _sometimes(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes garbage."""
    return st.one_of(good, good, good, JUNK)


ARGUMENTS: dict[str, st.SearchStrategy[Any]] = {
    "resource_id": _sometimes(IDS), "thread_id": _sometimes(IDS), "key": _sometimes(IDS),
    "ids": _sometimes(st.lists(IDS, max_size=3)), "messages": MESSAGES,
    "query": _sometimes(TEXT), "text": _sometimes(TEXT), "title": _sometimes(TEXT),
    "memory": _sometimes(st.one_of(TEXT, JSONISH)), "value": _sometimes(JSONISH),
    "metadata": _sometimes(st.dictionaries(TEXT, JSONISH, max_size=2)),
    "status": _sometimes(st.sampled_from(["running", "suspended", "done"])),
    "last_n": _sometimes(INTS), "first_n": _sometimes(INTS), "limit": _sometimes(INTS),
    "message_range": _sometimes(INTS), "max_tokens": _sometimes(INTS),
    "expected_version": _sometimes(st.one_of(st.none(), INTS)),
    "before": _sometimes(IDS), "after": _sometimes(IDS), "through_message_id": _sometimes(IDS),
    "cursor": _sometimes(TEXT), "mode": _sometimes(st.sampled_from(["append", "replace", "merge"])),
    "scope": _sometimes(st.sampled_from(["thread", "resource", None])),
    "max_age": _sometimes(st.one_of(st.none(), st.timedeltas())),
    "records": _sometimes(st.lists(st.dictionaries(TEXT, JSONISH, max_size=3), max_size=2)),
}
"""Per parameter name, what to pass; any other parameter gets garbage or its default."""


Call = tuple[str, tuple[Any, ...], dict[str, Any]]
"""A method name, its positional and its keyword arguments."""


@st.composite
def calls(draw: st.DrawFn) -> Call:
    name = draw(st.sampled_from(METHODS))
    args, kwargs = [], {}
    for parameter in list(inspect.signature(getattr(Memory, name)).parameters.values())[1:]:
        optional = parameter.default is not inspect.Parameter.empty
        if optional and draw(st.booleans()):
            continue
        value = draw(ARGUMENTS.get(parameter.name, JUNK))
        if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            args.append(value)
        else:
            kwargs[parameter.name] = value
    return name, tuple(args), kwargs


SEQUENCES = st.lists(calls(), min_size=1, max_size=CALLS_PER_EXAMPLE)


@asynccontextmanager
async def _sqlite(folder: Path) -> AsyncIterator[Memory]:
    async with await Memory.open(f"sqlite:///{folder}/f.db", options=MemoryOptions(sweep_interval=None)) as m:
        yield m


@asynccontextmanager
async def _memory(folder: Path) -> AsyncIterator[Memory]:
    async with await Memory.open("memory://", options=MemoryOptions(sweep_interval=None)) as m:
        yield m


@asynccontextmanager
async def _postgres(folder: Path) -> AsyncIterator[Memory]:
    url = postgres_url("the PostgreSQL fuzz run")
    schema = f"fuzz_{uuid.uuid4().hex[:12]}"
    try:
        async with await Memory.open(with_schema(url, schema),
                                     options=MemoryOptions(sweep_interval=None)) as m:
            yield m
    finally:
        await drop_schema(url, schema)


STORES: dict[str, Callable[[Path], Any]] = {"memory": _memory, "sqlite": _sqlite, "postgres": _postgres}


def _show(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an integer beyond int-to-str's limit
        return "<a value with a huge integer>"


SEED = [Message.user("ada likes tea", id="m1"), Message.user("more tea", id="m2")]


async def _replay(store: str, sequence: list[Call]) -> tuple[list[str], list[str]]:
    """Run the calls on a fresh store: returns each call's outcome (``ok`` or the error's type)
    and the contract breaches found (untyped errors, partial writes, hangs)."""
    outcomes, breaches = [], []
    with tempfile.TemporaryDirectory() as folder:
        async with STORES[store](Path(folder)) as memory:
            await memory.save_messages(SEED, thread_id="t1", resource_id="ada")
            for name, args, kwargs in sequence:
                before = await digest(memory.store)
                call = f"{name}(*{_show(args):.200}, **{_show(kwargs):.300})"
                try:
                    await asyncio.wait_for(getattr(memory, name)(*args, **kwargs), CALL_TIMEOUT)
                    outcomes.append("ok")
                except MemvaultError as exc:
                    outcomes.append(type(exc).__name__)
                    after = await digest(memory.store)
                    if after.mismatches(before):
                        breaches.append(f"partial write: {call} changed {after.mismatches(before)}")
                except TimeoutError:
                    outcomes.append("hang")
                    breaches.append(f"hang: {call}")
                except Exception as exc:
                    outcomes.append(type(exc).__name__)
                    breaches.append(f"untyped {type(exc).__name__}: {str(exc)[:200]} from {call}")
    return outcomes, breaches


def _check(store: str, sequence: list[Call], found: list[str]) -> None:
    outcomes, breaches = asyncio.run(_replay(store, sequence))
    found.extend(breaches)
    if store != "memory" and not breaches:  # the same calls answer alike on every store
        reference, _ = asyncio.run(_replay("memory", sequence))
        for (name, args, kwargs), got, expected in zip(sequence, outcomes, reference, strict=True):
            if got != expected:
                found.append(f"differs from memory://: {got} where the reference gives {expected}, "
                             f"from {name}(*{_show(args):.200}, **{_show(kwargs):.300})")
                break


@pytest.mark.parametrize("store", list(STORES))
def test_only_memvault_errors_escape_and_failures_write_nothing(store: str) -> None:
    """On SQLite and PostgreSQL, also: each call succeeds or fails (with the same error type) as
    on the reference store, so an input error is an input error everywhere."""
    found: list[str] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(sequence=SEQUENCES)
    def run(sequence: list[Call]) -> None:
        _check(store, sequence, found)

    run()
    assert not found, f"{len(found)} breaches of the error contract:\n" + "\n".join(sorted(set(found))[:60])


@pytest.mark.parametrize("store", list(STORES))
def test_cases_the_fuzzers_found(store: str) -> None:
    """Calls that raised untyped errors, or answered differently by store, before (issue 13)."""
    bad_message = {"role": "user", "parts": [{"type": "text", "text": "a\x00"}]}
    sequence: list[Call] = [
        ("compare_and_set_state", ({"a": 1},), {"resource_id": "ada", "key": "k", "expected_version": True}),
        ("compare_and_set_state", ({"a": 1},), {"resource_id": "ada", "key": "k", "expected_version": 1.0}),
        ("save_messages", ([Message.user("fine"), bad_message],), {"thread_id": "t1", "resource_id": "ada"}),
        ("save_messages", (None,), {"thread_id": "t1", "resource_id": "ada"}),
        ("delete_messages", (None,), {"thread_id": "t1", "resource_id": "ada"}),
        ("get_messages", (), {"thread_id": "t1", "resource_id": "ada", "ids": 5}),
        ("get_messages", (), {"thread_id": "t1", "resource_id": "ada", "message_range": None}),
        ("get_messages", (), {"thread_id": "t1", "resource_id": "ada", "last_n": 2**63}),
        ("list_threads", (), {"resource_id": "ada", "cursor": 5}),
        ("set_state", ({"n": 10**5000},), {"resource_id": "ada", "key": "k"}),
        ("read_turn", (), {"thread_id": "t1", "resource_id": "ada", "last_n": None}),
    ]
    outcomes, breaches = asyncio.run(_replay(store, sequence))
    assert not breaches
    expected = ["ValidationError"] * len(sequence)
    expected[6] = "ok"  # message_range=None reads as its default, 0
    assert outcomes == expected
    with pytest.raises(MemvaultError, match=r"^messages\[1\]: "):  # says which message was bad
        asyncio.run(_first_error(store, sequence[2]))


async def _first_error(store: str, call: Call) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with STORES[store](Path(folder)) as memory:
            name, args, kwargs = call
            await getattr(memory, name)(*args, **kwargs)


def test_a_bad_message_is_described_once() -> None:
    """Each problem is named by where it is, once: no "invalid Message: Message: Value error,
    invalid Message: ..." chains."""
    with pytest.raises(MemvaultError) as caught:
        Message.parse({"role": "user", "parts": [{"type": "text", "text": "a\x00"}]})
    text = str(caught.value)
    assert text.startswith("invalid Message: parts.0.") and "NUL" in text
    assert text.count("invalid") == 1 and "Value error" not in text


def test_assigning_a_bad_value_to_a_field_is_a_memvault_error() -> None:
    message = Message.user("hi")
    with pytest.raises(MemvaultError, match="role"):
        message.role = "robot"  # type: ignore[assignment]
    assert message.role == "user"
    message.metadata = {"tag": 1}  # a good value is taken
    assert message.metadata == {"tag": 1}
