"""Lexical candidates scored with their conversational context.

A message in a conversation is often meaningless alone ("Yes, last Sunday!") and found by
the words of the message it answers. So recall scores each candidate message by BM25 over a
*context document*: its own words plus those of its neighbours in the thread, the neighbour at
distance d weighted ``decay ** d``, up to ``window`` each side. A query term counts once per
message that holds it (its term frequency in the context document is the sum of the weights of
the messages holding it), and a message's length is its indexed text's in characters: what the
full-text index knows of a message (:class:`~memvault.stores.passages.SearchPool`'s marks), so
a store with :class:`~memvault.stores.capabilities.PoolSearch` gives them without any text
being decoded; for another store they are read from the text, with the same figures. (Counting
every occurrence in tokens instead scored the same on LoCoMo: 71.2 / 81.1 against 71.5 / 81.5
for R@5 / R@10 on the development conversations; docs/benchmarks.md.)

The work stays bounded and scoped to the resource: the store's full-text search (which sees
every message) picks the ``candidates`` best messages; each is read back with its neighbours
(:meth:`~memvault.recall.reader.RecallReader.search_pool`, ``reach + window`` each side); the
candidates and their ``reach`` nearest neighbours form the pool that is scored. The inverse
document frequencies and the mean length are estimated on that pool, so nothing needs the
whole resource in memory, and there is no cache to go stale.

Then two priors, both off when their factor is 0: the author's name (``metadata[author_key]``)
named in the query, and a date the query names (:mod:`memvault.recall.dates`).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memvault.recall import feedback
from memvault.recall.dates import Span, query_dates
from memvault.recall.options import RecallOptions, entity_boost
from memvault.recall.types import Key
from memvault.rules.words import (
    ASCII_WORD,
    STOP_WORDS,
    fold,
    split_cjk,
    stem,
    tokens,
)
from memvault.stores.passages import Mark, Passage, SearchPool

_TOKEN_CACHE_SIZE = 20_000
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
"""The characters of :data:`~memvault.rules.words.ASCII_WORD`'s words."""


class _TokenCache:
    """Stemmed tokens of recently scored texts, keyed by the text itself (never stale)."""

    def __init__(self, size: int = _TOKEN_CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, list[str]] = OrderedDict()

    def get(self, text: str) -> list[str]:
        found = self._entries.get(text)
        if found is not None:
            self._entries.move_to_end(text)
            return found
        result = tokens(text)
        self._entries[text] = result
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return result


_TOKENS = _TokenCache()


def _count(term: tuple[str, ...], toks: Sequence[str], words: Counter[str]) -> int:
    """How often ``term`` occurs in ``toks`` (``words``: their counts, for one-word terms)."""
    if len(term) == 1:
        return words[term[0]]
    n = len(term)
    return sum(1 for i in range(len(toks) - n + 1) if tuple(toks[i : i + n]) == term)


class _TermMatcher:
    """Counts the query's terms in a text, and the text's length in tokens, as
    :func:`memvault.rules.words.tokens` would, but stems only the words that may be one of the
    terms: a word's Porter stem without its last letter is a prefix of the word (checked on
    97,000 English and code words), so only words starting with such a prefix are stemmed."""

    def __init__(self, terms: list[tuple[str, ...]]) -> None:
        self.terms = terms
        self._single = {term[0]: t for t, term in enumerate(terms) if len(term) == 1}
        prefixes = sorted({w[: max(1, len(w) - 1)] for w in self._single}, key=len, reverse=True)
        # a word starts after a space in a spaced text (:func:`_spaced`)
        self._candidates = re.compile(
            " ((?:" + "|".join(map(re.escape, prefixes)) + ")[a-z0-9]*)"
        ) if prefixes else None

    def counts(self, text: str) -> tuple[dict[int, int], int]:
        """The counts of the terms found in ``text`` (by term index; only those found) and its
        length in tokens."""
        folded = text if text.isascii() else fold(split_cjk(text))  # ASCII has no CJK run to split
        if not folded.isascii():  # CJK runs, other scripts: the full tokenizer
            toks = _TOKENS.get(text)
            words = Counter(toks)
            return {t: c for t, term in enumerate(self.terms) if (c := _count(term, toks, words))}, len(toks)
        spaced = _spaced(folded)
        found: dict[int, int] = {}
        if self._candidates is not None:
            for word in self._candidates.findall(spaced.decode("ascii")):
                t = self._single.get(stem(word))
                if t is not None:
                    found[t] = found.get(t, 0) + 1
        return found, _ascii_words(spaced)


_SPACED = bytes(i if chr(i) in _WORD_CHARS else i + 32 if 65 <= i <= 90 else 32 for i in range(256))
"""Lower-cases ASCII letters and makes every other character that is not in a word a space."""
_RUNS = bytes(ord("a") if chr(i) in _WORD_CHARS else ord(" ") for i in range(256))


def _spaced(text: str) -> bytes:
    """``text`` (ASCII) lower-cased, after a space, with a space for every character outside
    :data:`~memvault.rules.words.ASCII_WORD`'s words: each word starts at a space followed by
    a word character, and ends at a space or at the end."""
    return (" " + text).encode("ascii").translate(_SPACED)


def _ascii_words(spaced: bytes) -> int:
    """How many words a :func:`_spaced` text holds, counted without making them: each word
    character becomes ``a``, and each word starts at ``" a"``."""
    return spaced.translate(_RUNS).count(b" a")


@dataclass
class Candidate:
    """A message of the pool with its context-BM25 score (after the priors)."""

    passage: Passage
    score: float


@dataclass
class LexicalResult:
    candidates: dict[Key, Candidate]
    threads: dict[str, list[Passage]]
    """The messages read per thread (hits and neighbours, in thread order)."""


def lexical_span(options: RecallOptions) -> int:
    """How many neighbours each side of a full-text hit are read: far enough that each pool
    member has its context window and its vector-smoothing neighbours."""
    return max(options.context_window, options.vector_context_window) + options.context_reach


def hits_by_thread(found: Sequence[tuple[Passage, float]]) -> dict[str, list[str]]:
    """The full-text hits' message ids, per thread, best first."""
    by_thread: dict[str, list[str]] = {}
    for hit, _ in found:
        if hit.thread_id is not None:
            by_thread.setdefault(hit.thread_id, []).append(hit.id)
    return by_thread


def lexical_candidates(
    *, query: str, pool: SearchPool, options: RecallOptions, with_scorer: bool = False
) -> LexicalResult:
    """Score the pool around ``pool.hits``, the store's best full-text matches for ``query``
    with their neighbours (:meth:`RecallReader.search_pool`, read ``lexical_span(options)``
    each side). ``with_scorer``: a vector scorer's scores are fused with these (it chooses the
    defaults of :func:`~memvault.recall.options.entity_boost`)."""
    terms = pool.terms
    by_thread = hits_by_thread(pool.hits)
    if not terms or not by_thread:
        return LexicalResult({}, {})
    threads = {name: pool.threads.get(name, []) for name in by_thread}
    marking = _Marking(terms, pool.marks, options)
    scored = _pool(threads, by_thread, marking.mark, len(terms), options)
    scores = _bm25(scored, _term_weights(query, terms, entity_boost(options, with_scorer)), options)
    if options.feedback_weight and scored:
        scores = _with_feedback(scored, scores, threads, by_thread, terms, options)

    query_words = {term[0] for term in terms if len(term) == 1}
    spans = query_dates(query) if options.date_boost else []
    candidates: dict[Key, Candidate] = {}
    for (passage, _, _), score in zip(scored, scores, strict=True):
        if score <= 0 or passage.thread_id is None:
            continue
        score *= _priors(passage, query_words, spans, options)
        if options.min_lexical_score is not None and score < options.min_lexical_score:
            continue
        candidates[(passage.thread_id, passage.id)] = Candidate(passage, score)
    return LexicalResult(candidates, threads)


Counted = tuple[dict[int, int], float]
"""A message's term counts (by term index; only the terms it holds) and its length."""


class _Marking:
    """Each message's :data:`Counted` for the context documents: every term it holds counts
    once, and its length is its indexed text's in characters, from the store's
    :data:`~memvault.stores.passages.Mark` or, without one, from the text itself (the same
    figures: the terms its tokens hold, the text's length). With ``author_in_context``, the
    author's name belongs to the document (``"Ana: I started cello lessons"``): the terms it
    holds, and its length with the two characters after it."""

    def __init__(
        self, terms: list[tuple[str, ...]], marks: Mapping[Key, Mark], options: RecallOptions
    ) -> None:
        self.terms = terms
        self.marks = marks
        self.author_key = options.author_key if options.author_in_context else None
        self._matcher: _TermMatcher | None = None
        self._names: dict[str, int] = {}
        self._present: dict[int, dict[int, int]] = {}

    def mark(self, passage: Passage) -> Counted:
        found = self.marks.get((passage.thread_id or "", passage.id))
        mask, length = found if found is not None else self._from_text(passage.text)
        if self.author_key is not None:
            name = passage.metadata_value(self.author_key)
            if isinstance(name, str) and name:
                named = self._names.get(name)
                if named is None:
                    named = self._names[name] = self._from_text(name)[0]
                mask |= named
                length += len(name) + 2
        present = self._present.get(mask)
        if present is None:
            present = self._present[mask] = {t: 1 for t in range(len(self.terms)) if mask >> t & 1}
        return present, float(length)

    def _from_text(self, text: str) -> Mark:
        if self._matcher is None:
            self._matcher = _TermMatcher(self.terms)
        counts, _ = self._matcher.counts(text)
        mask = 0
        for t in counts:
            mask |= 1 << t
        return mask, len(text)


Pool = list[tuple[Passage, list[float], float]]
"""The scored messages: each with its smoothed term counts and its smoothed length."""


def _pool(
    threads: dict[str, list[Passage]],
    by_thread: dict[str, list[str]],
    count: Callable[[Passage], tuple[dict[int, int], float]],
    n_terms: int,
    options: RecallOptions,
) -> Pool:
    """The full-text hits and their ``context_reach`` nearest neighbours, each with its context
    document's term counts (``count``: a message's own term counts and length) and length."""
    window, reach = options.context_window, options.context_reach
    weights = [options.context_decay ** d for d in range(window + 1)]
    pool: Pool = []
    for name, passages in threads.items():
        counts: list[dict[int, int]] = []
        lengths: list[float] = []
        for passage in passages:
            term_counts, size = count(passage)
            counts.append(term_counts)
            lengths.append(size)
        wanted = set(by_thread[name])
        hit_positions = [i for i, p in enumerate(passages) if p.id in wanted]
        members = sorted({j for i in hit_positions for j in range(i - reach, i + reach + 1)
                          if 0 <= j < len(passages)})
        # Neighbours within reach + window of a hit were all read, so positions in `passages`
        # around a member are its true neighbours in the thread (see get_messages).
        last = len(passages)
        for j in members:
            tf = [0.0] * n_terms
            length = 0.0
            for k in range(max(0, j - window), min(last, j + window + 1)):  # in thread order
                w = weights[abs(k - j)]
                length += w * lengths[k]
                for t, c in counts[k].items():
                    tf[t] += w * c
            pool.append((passages[j], tf, length))
    return pool


def _bm25(pool: Pool, weights: Sequence[float], options: RecallOptions) -> list[float]:
    """Each pool member's BM25 score over its context document, term t counting
    ``weights[t]``; inverse document frequencies and the mean length estimated on the pool."""
    n = len(pool)
    if not n:
        return []
    average = sum(length for _, _, length in pool) / n or 1.0
    having = [0] * len(weights)
    for _, tf, _ in pool:
        for t, f in enumerate(tf):
            if f > 0:
                having[t] += 1
    idf = [w * math.log((n - h + 0.5) / (h + 0.5) + 1.0) for w, h in zip(weights, having, strict=True)]
    k1, b = options.bm25_k1, options.bm25_b
    scores = []
    for _, tf, length in pool:
        norm = k1 * (1.0 - b + b * length / average)
        scores.append(sum(idf[t] * f * (k1 + 1.0) / (f + norm) for t, f in enumerate(tf) if f > 0))
    return scores


def _with_feedback(
    pool: Pool,
    scores: list[float],
    threads: dict[str, list[Passage]],
    by_thread: dict[str, list[str]],
    terms: list[tuple[str, ...]],
    options: RecallOptions,
) -> list[float]:
    """``scores`` plus ``feedback_weight`` times the pool's BM25 scores for the expansion terms
    (:func:`memvault.recall.feedback.expansion`), scaled to the same best score."""
    own = [_TOKENS.get(passage.text) for passage, _, _ in pool]
    expansion = feedback.expansion(own, scores, terms, options.feedback_docs, options.feedback_terms)
    if not expansion:
        return scores
    wanted = [word for word, _ in expansion]

    def count(passage: Passage) -> tuple[dict[int, int], float]:
        toks = _TOKENS.get(passage.text)
        found = Counter(toks)
        return {t: c for t, word in enumerate(wanted) if (c := found[word])}, float(len(toks))

    extra = _bm25(_pool(threads, by_thread, count, len(wanted), options), [w for _, w in expansion], options)
    top, top_extra = max(scores), max(extra)
    if top <= 0 or top_extra <= 0:
        return scores
    scale = options.feedback_weight * top / top_extra
    return [score + scale * more for score, more in zip(scores, extra, strict=True)]


_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'-]*", re.UNICODE)
"""A capitalised word that does not start the text or a sentence: a name ("Caroline", "Sweden")."""


def _term_weights(query: str, terms: list[tuple[str, ...]], boost: float) -> list[float]:
    """Each query term's weight: ``1 + boost`` for a name (:data:`_NAME`), else 1."""
    if not boost:
        return [1.0] * len(terms)
    names = {stem(word) for match in _NAME.finditer(query.strip())
             for word in ASCII_WORD.findall(fold(match.group(0)))}
    return [1.0 + boost if len(term) == 1 and term[0] in names else 1.0 for term in terms]


def _author_words(passage: Passage, author_key: str) -> tuple[str, ...]:
    name = passage.metadata_value(author_key)
    if not isinstance(name, str):
        return ()
    return _name_words(name)


@functools.lru_cache(maxsize=1024)
def _name_words(name: str) -> tuple[str, ...]:
    """An author's name as query words (a resource's authors are few: each is tokenized once)."""
    return tuple(word for word in tokens(name) if word not in STOP_WORDS)


def _priors(
    passage: Passage, query_words: set[str], spans: list[Span], options: RecallOptions
) -> float:
    factor = 1.0
    if options.author_boost and query_words:
        author = _author_words(passage, options.author_key)
        if any(word in query_words for word in author):
            factor *= 1.0 + options.author_boost
    if spans and any(span.contains(passage.created_at) for span in spans):
        factor *= 1.0 + options.date_boost
    return factor
