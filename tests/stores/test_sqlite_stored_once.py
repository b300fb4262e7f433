"""A plain text message's text is stored once (schema migration 8): its ``body`` is a marker
when its folded index text differs from the text by ASCII case alone. That is safe only if
FTS5 makes the very same tokens, at the same positions, of the text as of the folded text, and
the lengths agree: checked here on any text, against a real FTS5 table with the index's
tokenizer."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault import Message
from memvault.rules.words import index_text
from memvault.stores.sqlite.messages import prepare, stored_body
from memvault.stores.sqlite.schema import TOKENIZE, same_as_text

ALPHABET = st.sampled_from(
    [*"abcXYZ019 .,-'\n", "\u00e9", "\u00c9", "\u00df", "\u0130", "\uff21", "\uff41", "\u4e2d",
     "\u6587", "\u2014", "\u2019", "\U0001f600", "\u0301", "\ufb01"])
"""ASCII, accented and upper-case accented letters, sharp s, dotted capital I, full-width
letters, CJK, dashes and quotes, an emoji, a lone combining accent, a ligature."""


def tokens(conn: sqlite3.Connection, rowid: int) -> list[tuple[str, int]]:
    return conn.execute("SELECT term, offset FROM vocab WHERE doc = ? ORDER BY offset, term",
                        (rowid,)).fetchall()


@settings(max_examples=300, deadline=None)
@given(st.text(ALPHABET, max_size=40))
def test_the_marker_is_used_only_where_fts5_sees_the_same_tokens(text: str) -> None:
    message = Message.user(text)
    index = index_text(message)
    body = stored_body(text, index)
    assert prepare(message)[3] == body
    if isinstance(body, str):
        assert body == index
        return
    assert body == same_as_text(text) == str(len(index)).encode()
    with sqlite3.connect(":memory:") as conn:
        conn.execute(f"CREATE VIRTUAL TABLE fts USING fts5(body, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(fts, instance)")
        conn.execute("INSERT INTO fts (rowid, body) VALUES (1, ?), (2, ?)", (text, index))
        assert tokens(conn, 1) == tokens(conn, 2)
        assert conn.execute("SELECT length(?), length(?)", (text, index)).fetchone() == (
            len(index), len(index))
    conn.close()


def test_only_a_single_text_part_is_stored_once() -> None:
    two = Message(role="user", parts=[*Message.user("Tea").parts, *Message.user("time").parts])
    assert prepare(two)[3] == index_text(two) == "tea\ntime"
    assert prepare(Message.user("Green Tea"))[3] == b"9"
    assert prepare(Message.user("Crème"))[3] == "creme"
