"""The context scorer's term counting gives exactly what the tokenizer gives, while stemming
only the words that may be a query term."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.recall.lexical import _ascii_words, _count, _spaced, _TermMatcher
from memvault.rules.words import ASCII_WORD, query_terms, tokens

WORDS = ["running", "runs", "ran", "happily", "happiness", "relational", "organization", "organ",
         "tea", "teas", "Caroline's", "LGBTQ", "2023", "x_y", "café", "naïve", "東京", "抹茶が好き",
         "connected", "connection", "generously", "sensibility", "agreed", "hopping", "", "!", "-",
         "RUNNING", "Tea.", "e-mail", "x1y", "(organ)", "Happily,", "TEAS!", "\t", "a\nb"]
TEXT = st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join)


def expected(query: str, text: str) -> tuple[dict[int, int], int]:
    """The terms found (by index, with their counts) and the length, from the tokenizer."""
    terms = query_terms(query)
    toks = tokens(text)
    words = Counter(toks)
    counts = {t: c for t, term in enumerate(terms) if (c := _count(term, toks, words))}
    return counts, len(toks)


@settings(max_examples=400)
@given(query=TEXT, text=TEXT)
def test_counts_are_the_tokenizers(query: str, text: str) -> None:
    assert _TermMatcher(query_terms(query)).counts(text) == expected(query, text)


def test_examples() -> None:
    matcher = _TermMatcher(query_terms("Who runs the organization?"))
    assert matcher.counts("I was running; the organizations run well") == ({0: 2, 1: 1}, 7)
    assert matcher.counts("nothing here") == ({}, 2)
    assert _TermMatcher(query_terms("抹茶")).counts("我喜欢抹茶 matcha") == ({0: 1}, 6)


@settings(max_examples=400)
@given(text=st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_word_count_is_the_patterns(text: str) -> None:
    """The length of an ASCII text, counted without making its words, is what the
    tokenizer's pattern finds in the lower-cased text (``_`` is a separator there), and its
    spaced form holds those words, each after a space."""
    spaced = _spaced(text)
    assert _ascii_words(spaced) == len(ASCII_WORD.findall(text.lower()))
    assert spaced.decode().split() == ASCII_WORD.findall(text.lower())
