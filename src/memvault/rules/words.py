"""Words for lexical search, shared by every store so that they all match the same way.

Text is split into Unicode word runs. CJK ideographs, kana and hangul syllables are indexed one
character at a time (a sentence in those scripts has no spaces), so a query of several such
characters matches them as a phrase. Matching is case-insensitive and stemmed (Porter), so
"running" finds "runs". A query matches a message that contains any of its words; more shared
words and rarer words rank higher (BM25). Rarity is counted within the searched resource's own
messages: what a resource finds, in which order and with which scores, never depends on another
resource's data.

Any user string is a safe query: operators, quotes and punctuation are plain characters here.
A query's cost is bounded, the same way on every store (:func:`query_groups`): only its first
:data:`MAX_QUERY_TERMS` distinct terms are searched, a CJK run is matched in phrases of at most
:data:`MAX_PHRASE_CHARS` characters, and a word longer than :data:`MAX_WORD_BYTES` is not
searchable.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import snowballstemmer

from memvault.model import Message, TextPart, ToolResultPart

_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff"
)
_CJK_CHAR = re.compile(f"[{_CJK}]")
_WORD = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
ASCII_WORD = re.compile(r"[a-z0-9]+")
"""What a word is in folded ASCII text (the tokenizer's word pattern there)."""
_STEMMER = snowballstemmer.stemmer("porter")
MAX_QUERY_TERMS = 32
"""A query is searched for its first this many distinct terms (stemmed words or CJK phrases,
stop words left out when it has others); the rest of it is ignored, on every store."""
MAX_PHRASE_CHARS = 16
"""A CJK run longer than this is matched as consecutive phrases of at most this many
characters (each a term), not as one phrase."""
MAX_WORD_BYTES = 2047
"""A longer word (UTF-8) is never a query term: PostgreSQL cannot index it, so no store
searches for it."""
_STEM_BYTES = (3, 64)
"""FTS5's porter tokenizer leaves tokens shorter or longer than these (in UTF-8) unstemmed."""


def index_text(message: Message) -> str:
    """The text a store indexes for a message: its text parts and its tool results' text,
    folded (lower case, compatibility forms, no diacritics), with CJK characters separated by
    spaces so that each one is a token."""
    chunks: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            chunks.append(part.text)
        elif isinstance(part, ToolResultPart) and isinstance(part.output, str):
            chunks.append(part.output)
    return fold_text("\n".join(chunks))


def fold_text(text: str) -> str:
    """One text as :func:`index_text` indexes it: folded, CJK characters spaced apart."""
    folded = fold(text)
    return folded if folded.isascii() else split_cjk(folded)  # no CJK run in ASCII


def split_cjk(text: str) -> str:
    if not _CJK_CHAR.search(text):
        return text
    return _CJK_CHAR.sub(lambda m: f" {m.group(0)} ", text)


STOP_WORDS = frozenset(
    "a about an and are as at be been but by can could did do does for from had has have he her"
    " him his how i if in into is it its me my no not of on or our she so than that the their them"
    " then there these they this those to us was we were what when where which who whom why will"
    " with would you your yours m s t d ll re ve".split()
)


def searchable_query(query: str) -> str:
    """``query`` as the stores search it: NUL bytes become spaces and lone surrogates U+FFFD,
    so any Python string is a safe query."""
    return query.replace("\x00", " ").encode("utf-8", "replace").decode()


def query_groups(query: str) -> list[list[str]]:
    """The query's terms, as every store searches them: its words, folded (:func:`fold`),
    each a group of one; a CJK run a group of its characters, matched as a phrase, cut into
    phrases of at most :data:`MAX_PHRASE_CHARS` characters.

    English stop words are dropped, unless the query has nothing else. A group is kept once
    (the first of those with the same stems: "run" and "running" are one term), words with an
    empty stem or over :data:`MAX_WORD_BYTES` are left out, and only the first
    :data:`MAX_QUERY_TERMS` groups are kept, so a query's cost is bounded whatever its length.
    An empty list (no words: empty, punctuation only) matches nothing.
    """
    content: dict[tuple[str, ...], list[str]] = {}
    stops: dict[tuple[str, ...], list[str]] = {}
    for match in _WORD.finditer(fold(query)):
        word = match.group(0)
        if _CJK_CHAR.match(word):
            pieces = [list(word[i:i + MAX_PHRASE_CHARS]) for i in range(0, len(word), MAX_PHRASE_CHARS)]
        elif len(word.encode()) > MAX_WORD_BYTES:
            continue
        else:
            pieces = [[word]]
        for group in pieces:
            key = tuple(stem(w) for w in group)
            if "" in key:
                continue
            kept = stops if len(group) == 1 and group[0] in STOP_WORDS else content
            if len(kept) < MAX_QUERY_TERMS:
                kept.setdefault(key, group)
        if len(content) >= MAX_QUERY_TERMS:
            break
    return list((content or stops).values())


def query_terms(query: str) -> list[tuple[str, ...]]:
    """The query's terms as the stores match them (:func:`query_groups`, each word stemmed):
    stemmed words, a CJK run as a phrase of characters, stop words dropped unless nothing else
    is left; each term once."""
    return list(dict.fromkeys(tuple(stem(w) for w in group) for group in query_groups(query)))


def fts5_query(query: str) -> str | None:
    """An FTS5 MATCH expression for any user string: quoted phrases joined by OR.

    Returns ``None`` when the query has no words (empty, punctuation only), which matches nothing.
    """
    return fts5_match(query_groups(query))


def fts5_match(groups: Sequence[Sequence[str]]) -> str | None:
    """The FTS5 MATCH expression of :func:`query_groups` output (``None`` for no groups)."""
    if not groups:
        return None
    phrases = dict.fromkeys('"' + " ".join(g) + '"' for g in groups)
    return " OR ".join(phrases)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of a lower-case word, as FTS5's ``porter`` tokenizer computes it: words of
    fewer than 3 or more than 64 bytes (UTF-8) are left as they are ("is", "s"), so a stem is
    never empty."""
    if _CJK_CHAR.match(word) or not _STEM_BYTES[0] <= len(word.encode()) <= _STEM_BYTES[1]:
        return word
    result: str = _STEMMER.stemWord(word)
    return result


def tokens(text: str) -> list[str]:
    """The stemmed tokens of an indexed text, in order (the in-memory store's tokenizer):
    lower-cased and without diacritics, like FTS5's ``unicode61 remove_diacritics 2``."""
    folded = fold(split_cjk(text))
    if folded.isascii():  # the common case: no CJK run to split
        return [stem(w) for w in ASCII_WORD.findall(folded)]
    return [stem(w) for run in _WORD.findall(folded) for w in _split_run(run)]


def fold(text: str) -> str:
    """Lower-case, fold compatibility forms and strip diacritics ("Ｃａｆé" → "cafe")."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _split_run(word: str) -> list[str]:
    return list(word) if _CJK_CHAR.match(word) else [word]
