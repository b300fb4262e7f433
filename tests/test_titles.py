"""Titles: one short model call, cleaned to at most 80 characters."""

from __future__ import annotations

import pytest

from memvault.llm import ScriptedModel
from memvault.runtime.titles import MAX_TITLE_CHARS, clean_title, make_title


@pytest.mark.parametrize(("answer", "title"), [
    ("Planning a trip to Kyoto", "Planning a trip to Kyoto"),
    ('"Planning a trip to Kyoto."', "Planning a trip to Kyoto"),
    ("Title: **Kyoto trip**\nSome explanation", "Kyoto trip"),
    ("\n\n  \u201cTea   preferences\u201d  \n", "Tea preferences"),
    ("旅行の計画", "旅行の計画"),
    ("", None),
    ('""', None),
])
def test_clean_title(answer: str, title: str | None) -> None:
    assert clean_title(answer) == title


def test_a_long_answer_is_cut_at_a_word_boundary() -> None:
    title = clean_title("word " * 40)
    assert title is not None and len(title) <= MAX_TITLE_CHARS and title.endswith("word…")


async def test_make_title_sends_the_first_message_only_once_and_short() -> None:
    model = ScriptedModel(["Kyoto trip"])
    assert await make_title(model, "Help me plan a trip to Kyoto " + "x" * 5000) == "Kyoto trip"
    (messages, tools), = model.calls
    assert tools is None and messages[0]["role"] == "system"
    assert len(messages[1]["content"]) == 2000
