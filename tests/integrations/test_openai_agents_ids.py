"""Session ids to thread ids: any string the SDK takes names one valid thread, two different
session ids never share one (Hypothesis, with strings built to collide: the prefix, escapes,
NUL, lone surrogates, blanks, lengths around the limit), and sessions are isolated end to end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault import Memory
from memvault.integrations.openai_agents import MemvaultSession, session_id_for, thread_id_for
from memvault.integrations.openai_agents.ids import PREFIX
from memvault.model import MAX_ID_LENGTH, check_id

pytest.importorskip("agents")

PIECES = ["\x00", "\ud800", "\udfff", "%", "%25", "%00", "%ud800", " ", "=", "#", PREFIX, f"{PREFIX}=",
          f"{PREFIX}#", "a", "é"]
SESSION_ID = st.one_of(
    st.lists(st.one_of(st.characters(), st.sampled_from(PIECES)), max_size=12).map("".join),
    st.builds(lambda a, n, b: a + "x" * n + b, st.sampled_from(PIECES), st.integers(200, 300),
              st.sampled_from(PIECES)),
    st.text(max_size=300),
)


@settings(max_examples=2000, deadline=None)
@given(session_id=SESSION_ID)
def test_every_session_id_names_a_valid_thread_and_decodes_back(session_id: str) -> None:
    thread_id = thread_id_for(session_id)
    assert check_id(thread_id) == thread_id and len(thread_id) <= MAX_ID_LENGTH
    decoded = session_id_for(thread_id)
    if thread_id.startswith(f"{PREFIX}#"):
        escapes = sum(2 if c in "%\x00" else 5 if "\ud800" <= c <= "\udfff" else 0 for c in session_id)
        assert decoded is None and len(PREFIX) + 1 + len(session_id) + escapes > MAX_ID_LENGTH
    else:
        assert decoded == session_id
    if not session_id.startswith(PREFIX):
        try:
            check_id(session_id)
        except ValueError:
            assert thread_id.startswith(PREFIX)
        else:
            assert thread_id == session_id  # valid ids stay as they are


@settings(max_examples=2000, deadline=None)
@given(first=SESSION_ID, second=SESSION_ID)
def test_different_session_ids_never_share_a_thread(first: str, second: str) -> None:
    if first != second:
        assert thread_id_for(first) != thread_id_for(second)


def test_ids_made_to_collide_do_not() -> None:
    tricky = ["", " ", "  ", "\x00", "%00", "%", "%25", "\ud800", "%ud800", PREFIX, f"{PREFIX}=",
              f"{PREFIX}=\x00", f"{PREFIX}=%00", thread_id_for("\x00"), thread_id_for(""),
              thread_id_for("x" * 300), f"{PREFIX}#", "x" * 256, "x" * 257, "x" * 300]
    thread_ids = [thread_id_for(s) for s in tricky]
    assert len(set(thread_ids)) == len(set(tricky))
    assert thread_id_for("chat-1") == "chat-1"
    assert thread_id_for("") == f"{PREFIX}="
    assert thread_id_for("a\x00%b") == f"{PREFIX}=a%00%25b"


@pytest.mark.parametrize("session_id", ["", " ", "a\x00b", "a\ud800b", "x" * 257, "x" * 400, PREFIX])
async def test_any_session_id_is_a_session_of_its_own(any_memory: Memory, session_id: str) -> None:
    session = MemvaultSession(session_id, any_memory, resource_id="ada")
    neighbour = MemvaultSession("x" * 300 if session_id != "x" * 300 else "y", any_memory, resource_id="ada")
    assert session.session_id == session_id
    await session.add_items([{"role": "user", "content": "mine"}])
    await neighbour.add_items([{"role": "user", "content": "theirs"}])
    assert await session.get_items() == [{"role": "user", "content": "mine"}]
    again = MemvaultSession(session_id, any_memory, resource_id="ada")
    assert await again.get_items() == [{"role": "user", "content": "mine"}]
    assert await any_memory.get_messages(thread_id=session.thread_id, resource_id="ada") != []
    await session.clear_session()
    assert await neighbour.get_items() == [{"role": "user", "content": "theirs"}]
