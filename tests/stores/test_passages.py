"""A stored row as a passage (:func:`memvault.stores.rows.passage`) is what building its message
says, without building it: the same thread, id, seq, time, metadata and indexed text as the
passage of the message :func:`memvault.stores.rows.message` builds, and the same message when
asked for it, whatever the columns hold (placeholders included)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.model import Message
from memvault.stores import rows
from memvault.stores.common import to_micros
from memvault.stores.decode import _FIRST_US, _LAST_US
from memvault.stores.passages import Passage

TEXT = st.text(max_size=60) | st.sampled_from(
    ["Café NOIR", "我喜欢中文和茶", "\uff26\uff35\uff2c\uff2c width", "a\nb"])
PARTS = st.one_of(
    TEXT.map(json.dumps),                                         # the compact form
    TEXT.map(lambda t: json.dumps(t, ensure_ascii=False)),
    TEXT.map(lambda t: json.dumps([{"type": "text", "text": t}])),  # the list form
    st.builds(lambda t, extra, ascii_: json.dumps(  # the list form as PostgreSQL stores it, and near misses
        [{"type": "text", "text": t, **extra}], ensure_ascii=ascii_, separators=(",", ":")),
        TEXT, st.sampled_from([{}, {}, {"v": 1}, {"signature": None}, {"type": "reasoning"}]), st.booleans()),
    TEXT.map(lambda t: json.dumps([{"type": "text", "text": t}] * 2, separators=(",", ":"))),
    st.sampled_from(['[{"type":"text","text":3}]', '[{"type":"text","text":"x"}',
                     '[{"type":"text","text":"x"}] ', '[{"type":"text","text":"x"},1]',
                     '[{"type":"text","text":"\\ud800"}]']),
    TEXT.map(lambda t: json.dumps([{"type": "text", "text": t}, {"type": "tool-result",
                                                                  "tool_call_id": "c", "output": t}])),
    st.sampled_from(['"unterminated', '"x" ', '"x"y', "[", "{}", "", "null", '"\\ud800"']),
    st.integers() | st.none() | st.binary(max_size=4),
)
METADATA = st.one_of(
    st.just("{}"),
    st.dictionaries(st.sampled_from(["name", "k"]), TEXT | st.integers(), max_size=2).map(json.dumps),
    st.sampled_from(["[]", "{", "null", "", '{"na\\u006de": "Ada"}', '{"k": "name"}', '{"k": "\\"name\\""}',
                     '{"name": "Ada"', '{"name": 1} ', '{ "name" : "Ada" }']),
    st.integers() | st.none(),
)
CREATED = st.one_of(
    st.integers(0, 2**53), st.sampled_from([_FIRST_US, _LAST_US, _FIRST_US - 1, _LAST_US + 1, True]),
    st.text(max_size=3) | st.none(),
)
ROLE = st.sampled_from(["user", "assistant", "system", "tool", "robot", 3])


def _fields(passage: Passage) -> tuple[Any, ...]:
    return (passage.thread_id, passage.id, passage.seq, passage.created_us, passage.metadata, passage.text,
            passage.created_at)


@settings(max_examples=1500, deadline=None)
@given(role=ROLE, parts=PARTS, metadata=METADATA, created_us=CREATED)
def test_property_a_rows_passage_is_its_messages_passage(role: Any, parts: Any, metadata: Any,
                                                         created_us: Any) -> None:
    row = ("m", "t", "r", 3, role, parts, metadata, created_us)
    logging.getLogger("memvault.stores").disabled = True  # placeholders warn
    try:
        message = rows.message(row)
        passage = rows.passage(row)
        built = passage.message()
    finally:
        logging.getLogger("memvault.stores").disabled = False
    assert _fields(passage) == _fields(Passage.of(message))
    assert built == message
    assert passage.message() is built  # built once


def test_a_compact_row_builds_its_message_only_when_asked() -> None:
    saved = Message.user("Green TEA, please", metadata={"name": "Ada"})
    row = ("m", "t", "r", 3, "user", json.dumps(saved.text), json.dumps(saved.metadata),
           to_micros(saved.created_at))
    passage = rows.passage(row)
    assert (passage.text, passage.metadata, passage.created_at) == ("green tea, please", {"name": "Ada"},
                                                                    saved.created_at)
    assert passage._message is None  # read from the columns
    assert passage.message().text == "Green TEA, please"


def test_a_list_form_row_of_one_text_part_builds_its_message_only_when_asked() -> None:
    saved = Message.user("Green TEA, please", metadata={"name": "Ada"})
    # as PostgreSQL stores it
    parts = json.dumps([{"type": "text", "text": saved.text}], separators=(",", ":"))
    row = ("m", "t", "r", 3, "user", parts, json.dumps(saved.metadata), to_micros(saved.created_at))
    passage = rows.passage(row)
    assert (passage.text, passage.metadata) == ("green tea, please", {"name": "Ada"})
    assert passage._message is None  # read from the columns
    assert passage.message() == rows.message(row)


@settings(max_examples=1500, deadline=None)
@given(role=ROLE, parts=PARTS, metadata=METADATA, created_us=CREATED,
       key=st.sampled_from(["name", "k", "x", 'n"a', "n\\a", ""]))
def test_property_a_fresh_passages_time_and_metadata_values_are_its_messages(
    role: Any, parts: Any, metadata: Any, created_us: Any, key: str
) -> None:
    """What recall reads of every pool member (its time, its author's name) without decoding
    the row is what the built message (or its placeholder) holds."""
    row = ("m", "t", "r", 3, role, parts, metadata, created_us)
    logging.getLogger("memvault.stores").disabled = True  # placeholders warn
    try:
        message = rows.message(row)
        first, second = rows.passage(row), rows.passage(row)
        assert first.metadata_value(key) == message.metadata.get(key)
        assert first.created_us == to_micros(message.created_at) == second.created_us
        assert second.metadata_value(key) == message.metadata.get(key)
    finally:
        logging.getLogger("memvault.stores").disabled = False


@pytest.mark.parametrize("metadata", ['{"na\\u006de": "Ada"}', '{"name": "Ada"}', '{ "name" : "Ada" }'])
def test_a_name_written_any_way_json_allows_is_read(metadata: str) -> None:
    row = ("m", "t", "r", 3, "user", '"hello"', metadata, 0)
    assert rows.passage(row).metadata_value("name") == "Ada" == rows.message(row).metadata["name"]
    assert rows.passage(row).metadata_value("nam") is None
