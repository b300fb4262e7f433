"""Decoding a stored message row (:func:`memvault.stores.rows.message`), the one function every
SQL store reads rows through (and the in-memory store's raw-row hook): a good row gives back what
was saved; any garbage in any column gives a placeholder, never an exception."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.model import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UnknownPart,
    UnreadablePart,
)
from memvault.stores import rows
from memvault.stores.common import to_micros


def _row(message: Message, **columns: Any) -> tuple[Any, ...]:
    values = {"role": message.role, "parts": message.parts_json(), "metadata": rows.dumps(message.metadata),
              "created_us": to_micros(message.created_at), **columns}
    return (message.id, "t", "r", 7, *(values[k] for k in ("role", "parts", "metadata", "created_us")))


EVERY_PART = Message(role="assistant", metadata={"k": [1, {"z": None}]}, parts=[
    TextPart(text="t"), ReasoningPart(text="r", signature="s"),
    ToolCallPart(tool_call_id="c", name="f", args={"a": 1}),
    ToolCallPart(tool_call_id="d", name="g", args="raw"),
    ToolResultPart(tool_call_id="c", output=[1, "x"], is_error=True, name="f"),
    FilePart(url="data:,x", media_type="text/plain", name="n"),
    ImagePart(url="https://x/y.png", detail="low"),
    DataPart(data={"q": None}, name="d"), DataPart(),
])


def test_a_good_row_reads_back_equal() -> None:
    read = rows.message(_row(EVERY_PART))
    assert read == EVERY_PART.model_copy(update={"thread_id": "t", "resource_id": "r", "seq": 7})
    assert read.parts_json() == EVERY_PART.parts_json()


def test_part_version_one_and_newer() -> None:
    v1 = rows.message(_row(EVERY_PART, parts='[{"type":"text","v":1,"text":"x"}]'))
    assert v1.parts == [TextPart(text="x")]
    v2 = rows.message(_row(EVERY_PART, parts='[{"type":"text","v":2,"text":"x"}]'))
    assert v2.parts == [UnknownPart(raw={"type": "text", "v": 2, "text": "x"})]
    format1 = rows.message(_row(EVERY_PART, parts='{"format":1,"parts":[{"type":"text","text":"x"}]}'))
    assert format1.parts == [TextPart(text="x")]
    format2 = rows.message(_row(EVERY_PART, parts='{"format":2,"parts":[]}'))
    assert format2.unreadable is not None and "format 2" in format2.unreadable.reason


@pytest.mark.parametrize(("columns", "reason"), [
    ({"parts": "[1"}, "parts is not JSON"),
    ({"parts": "1" * 5000}, "parts cannot be decoded"),
    ({"parts": "[" * 100_000 + "]" * 100_000}, "parts cannot be decoded"),
    ({"parts": None}, "parts is a NoneType"),
    ({"metadata": b"{}"}, "metadata is a bytes"),
    ({"created_us": "5"}, "created_us is a str"),
    ({"created_us": 2**63 - 1}, "beyond the datetime range"),
    ({"role": None}, "role 'None'"),
])
def test_a_bad_row_gives_a_placeholder_and_a_warning(
    columns: dict[str, Any], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memvault.stores"):
        read = rows.message(_row(EVERY_PART, **columns))
    assert read.unreadable is not None and reason in read.unreadable.reason
    assert (read.id, read.seq, read.thread_id, read.resource_id) == (EVERY_PART.id, 7, "t", "r")
    assert read.parts == [read.unreadable] and isinstance(read.parts[0], UnreadablePart)
    assert [r.levelname for r in caplog.records] == ["WARNING"]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "text", "v", "format", "parts", "url", "tool_call_id", "name", "args",
                         "output", "is_error", "detail", "data", "signature", "media_type"])
        | st.text(max_size=3),
        inner, max_size=5),
    max_leaves=15,
)
TYPED = st.lists(st.dictionaries(
    st.sampled_from(["text", "v", "url", "tool_call_id", "name", "args", "output", "is_error", "detail"]),
    JSONISH, max_size=4).flatmap(lambda d: st.sampled_from(
        ["text", "reasoning", "tool-call", "tool-result", "file", "image", "data", "unreadable", "new"]
    ).map(lambda kind: {"type": kind, **d})), max_size=3)
COLUMN = st.one_of(st.text(max_size=40), st.integers(), st.none(), st.binary(max_size=8),
                   JSONISH.map(json.dumps), TYPED.map(json.dumps))


@settings(max_examples=1500, deadline=None)
@given(role=COLUMN | st.sampled_from(["user", "tool"]), parts=COLUMN, metadata=COLUMN, created_us=COLUMN)
def test_property_any_columns_decode_without_an_exception(role: Any, parts: Any, metadata: Any,
                                                         created_us: Any) -> None:
    logging.getLogger("memvault.stores").disabled = True
    try:
        read = rows.message(("m", "t", "r", 3, role, parts, metadata, created_us))
    finally:
        logging.getLogger("memvault.stores").disabled = False
    assert (read.id, read.seq) == ("m", 3)
    # what a reader then does with it never raises either
    assert isinstance(read.text, str)
    read.parts_json()
    read.model_dump(mode="json")
    if read.unreadable is None:
        for part in read.parts:  # every readable part is valid: it validates as it is
            if not isinstance(part, UnknownPart):
                type(part).parse(part.model_dump())


QUOTED = st.one_of(
    st.text().map(json.dumps),                                   # any text, as stored
    st.text().map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.text(alphabet=st.sampled_from('"\\ux0dD8\n\t a'), max_size=12).map(lambda t: '"' + t),  # malformed
    st.text().map(lambda t: json.dumps(t) + " "),                 # trailing space, trailing data
    st.text().map(lambda t: json.dumps(t) + '"x"'),
)


@settings(max_examples=1500, deadline=None)
@given(parts=QUOTED)
def test_property_a_stored_string_reads_as_json_loads_reads_it(parts: str) -> None:
    """The compact ``parts`` of one text part (a JSON string) is read by the string scanner
    alone; what it gives, or refuses, is what ``json.loads`` gives or refuses."""
    try:
        expected: Any = json.loads(parts)
    except ValueError:
        expected = None
    logging.getLogger("memvault.stores").disabled = True
    try:
        read = rows.message(("m", "t", "r", 3, "user", parts, "{}", 0))
    finally:
        logging.getLogger("memvault.stores").disabled = False
    if isinstance(expected, str):
        assert read.unreadable is None and len(read.parts) == 1
        assert isinstance(read.parts[0], TextPart) and read.parts[0].text == expected
    else:
        assert read.unreadable is not None


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
STORED_METADATA = st.one_of(
    st.dictionaries(st.text(max_size=10), _JSON_VALUES, max_size=5).map(
        lambda d: json.dumps(d, ensure_ascii=False, separators=(",", ":"))),   # as stored
    st.dictionaries(st.text(max_size=10), _JSON_VALUES, max_size=5).map(json.dumps),  # spaced
    _JSON_VALUES.map(json.dumps),                                            # not an object
    st.text(alphabet=st.sampled_from('{}[]":,\\ 0a1en\n'), max_size=16),   # malformed
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2).map(
        lambda d: " " + json.dumps(d) + " "),                                # spaces around
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2).map(
        lambda d: json.dumps(d) + "{}"),                                     # trailing data
)


@settings(max_examples=1500, deadline=None)
@given(metadata=STORED_METADATA)
def test_property_stored_metadata_reads_as_json_loads_reads_it(metadata: str) -> None:
    """Metadata is read by the C scanner alone when the text is one JSON value; what it
    gives, or refuses, is what ``json.loads`` gives or refuses."""
    try:
        expected: Any = json.loads(metadata)
    except (ValueError, RecursionError):
        expected = None
    logging.getLogger("memvault.stores").disabled = True
    try:
        read = rows.message(("m", "t", "r", 3, "user", '"hi"', metadata, 0))
    finally:
        logging.getLogger("memvault.stores").disabled = False
    if isinstance(expected, dict):
        assert read.unreadable is None and read.metadata == expected
    else:
        assert read.unreadable is not None
