"""What recall can be told: :class:`RecallOptions`, with its defaults.

Example::

    from memvault.recall import RecallOptions, recall

    # the defaults: the 5 best older messages of the whole resource, each with one
    # neighbour on each side, placed before the thread's recent window
    result = await recall(memory, thread_id="t1", resource_id="ada",
                          query="which tea did I like?", options=RecallOptions())

    # only this thread, 3 hits without neighbours, merged in time order with the last 20
    RecallOptions(scope="thread", top_k=3, message_range=0, last_n=20, merge="interleave")

    # with a vector search from a strong embedder: give the vectors more weight
    RecallOptions(vector_weight=1.6)
    # or reciprocal rank fusion instead of the default weighted score fusion
    RecallOptions(fusion="rrf", rrf_k=60)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from memvault.errors import ValidationError, shown

Scope: TypeAlias = Literal["thread", "resource"]
MergeStrategy: TypeAlias = Literal["prepend", "append", "interleave"]
Fusion: TypeAlias = Literal["weighted", "rrf"]
Normalization: TypeAlias = Literal["max", "minmax"]

SCOPES: tuple[str, ...] = ("thread", "resource")
MERGE_STRATEGIES: tuple[str, ...] = ("prepend", "append", "interleave")
FUSIONS: tuple[str, ...] = ("weighted", "rrf")
NORMALIZATIONS: tuple[str, ...] = ("max", "minmax")


@dataclass(frozen=True)
class RecallOptions:
    """How :func:`memvault.recall.recall` finds older messages and feeds them with the recent window.

    **What to find**

    - ``top_k`` (default 5): at most this many hits, best first. ``RecallOptions(top_k=10)``.
    - ``scope`` (default ``"resource"``): ``"thread"`` searches only the current thread;
      ``"resource"`` searches every thread of the resource (a user's other conversations).
      Hits from another thread carry that thread's id and their date.
    - ``message_range`` (default 1): each hit is fed with this many neighbours before and after
      it in its thread, so that a reply comes with what it answers. ``0``: the hits alone.

    **How the recent window and the recalled messages are merged**

    - ``last_n`` (default ``None``): the recent window is the newest ``last_n`` messages of the
      current thread; ``None`` takes the memory's history options (``Memory.get_history``);
      ``0`` means no window. Recalled messages never repeat a message of the window, and the
      window's messages are never hits.
    - ``merge`` (default ``"prepend"``): ``"prepend"`` feeds the recalled messages (oldest first)
      before the window; ``"append"`` after it; ``"interleave"`` merges both by time.

    **Scoring** (no model is called: words, optionally a vector search you pass in)

    Lexical candidates are the ``candidates`` best messages of the store's full-text search,
    with their neighbours. Each is then scored by BM25 over a *context document*: its own words
    plus the words of up to ``context_window`` neighbours on each side in its thread, the
    neighbour at distance d counting ``context_decay ** d`` (3 each side, weighted 1, 0.7,
    0.49, 0.34 by default: the values leave-one-conversation-out cross-validation on LoCoMo
    chose, ``memvault bench locomo --cv``; docs/benchmarks.md). A reply
    such as "Yes, last Sunday!" is found by the question it answers. ``context_window=0``
    scores each message alone. ``bm25_k1`` (1.2) and ``bm25_b`` (0.3, the folds' choice once a
    document's length became its indexed characters) are BM25's usual parameters.

    - ``author_boost`` (default 0.2): a message whose author's name is named in the query
      scores ``* (1 + author_boost)``. The name is ``message.metadata[author_key]``
      (``author_key="name"``, where the OpenAI chat format's ``name`` lands). ``0`` turns it off.
      ``author_key`` is also the name embedded with each message when there is an embedder;
      messages are embedded when saved, with the key of ``MemoryOptions.recall``.
    - ``author_in_context`` (default ``True``): the author's name also counts as a word of the
      message's context document ("Ana: I started cello lessons").
    - ``date_boost`` (default 2.0): when the query names a date ("on 8 May 2023", "in June
      2023", "2023-05-08", "in 2022", or a month alone, "in June": that month of any year),
      messages written on that day / in that month / year score ``* (1 + date_boost)``.
    - ``entity_boost`` (default ``None``: 0 words only, 0.5 with a
      :class:`~memvault.recall.types.VectorScorer`, as ``Memory.recall`` has with an embedder):
      a query word written with a capital, not at the start of a sentence ("Caroline",
      "Sweden": a name), counts ``1 + entity_boost`` times in the BM25 score. ``0`` turns it
      off. Cross-validated on LoCoMo over 0 and 0.5 with all-MiniLM-L6-v2: every fold chose
      0.5 (held-out R@10 85.07 against 84.96, R@5 78.40 against 78.38: a small gain). Words
      only, four folds chose 0.5 but held out it lost (R@5 73.10 against 73.35, R@10 82.79
      both), so they keep 0 (docs/benchmarks.md).
    - ``thread_boost`` (default 0): a session-level prior (:mod:`memvault.recall.threads`): each
      hit's fused score ``* (1 + thread_boost * t)``, t its thread's share of the best thread's
      score (the sum of the thread's 3 best candidates). ``0`` turns it off.
    - ``thread_diversity`` and ``neighbour_diversity`` (default 0 both): spread the ``top_k``
      over threads and passages (:mod:`memvault.recall.diversity`): picked greedily by
      ``score * (1 - thread_diversity) ** n * (1 - neighbour_diversity) ** m``, n the hits
      already taken from the candidate's thread, m those right next to it; a hit's ``score`` is
      that penalised score. It only reorders: never fewer hits. ``0`` turns each off.

    - ``feedback_weight`` (default 0): pseudo-relevance feedback (:mod:`memvault.recall.feedback`):
      the ``feedback_terms`` (default 10) words that best characterise the ``feedback_docs``
      (default 3) best lexical candidates are added to the query, their context BM25 scaled to
      the query's best score and counted ``feedback_weight`` times. ``0`` turns it off.

    - ``question_penalty`` (default ``None``: 0.9 words only, 0.5 with a
      :class:`~memvault.recall.types.VectorScorer`, as ``Memory.recall`` has with an embedder):
      a candidate's fused score ``* (1 - question_penalty * q)``, q the share of its sentences
      that end with a question mark (:mod:`memvault.recall.questions`): a question asked
      before is rarely the answer to the one asked now. ``0`` turns it off.

    **Fusion** of the lexical and vector rankings (when a vector search is given)

    - ``fusion="weighted"`` (the default): each source's scores are normalised (``normalization``:
      ``"minmax"``, the default, maps a source's best..worst candidate to 1..0; ``"max"``
      divides by the best score) and added with ``lexical_weight`` (default 1) and
      ``vector_weight``.
    - ``vector_weight`` (default ``None``: 1.3 with a :class:`~memvault.recall.types.VectorScorer`,
      as ``Memory.recall`` has when an embedder is configured, else 0.3). With a scorer every
      candidate gets a vector score, smoothed over its neighbours like the words (below); with
      a plain vector search only its own matches do, which deserves less weight.
    - ``vector_context_window`` (default 2): with a scorer, a message's vector score is the
      mean similarity of itself and up to this many neighbours each side in its thread, the
      neighbour at distance d weighted ``vector_context_decay ** d`` (default 0.5: 1, 0.5,
      0.25). ``0``: its own similarity.
    - ``fusion="rrf"``: reciprocal rank fusion, ``sum(weight / (rrf_k + rank))`` with rank 1
      for a source's best message (``rrf_k`` default 60, the usual constant).
    - ``vector_candidates`` (default 50): how many messages the vector search is asked for.
    - ``sentence_weight`` (default 0.5): with a scorer that knows each message's sentences
      (``Memory.recall`` with an embedder, on a store that keeps them:
      :mod:`memvault.recall.sentences`), a message's similarity is
      ``(1 - sentence_weight) * its own + sentence_weight * its best sentence's`` before the
      smoothing, so that a long turn is found by the one sentence that answers. Messages of one
      sentence keep their own. Cross-validated on LoCoMo with all-MiniLM-L6-v2 over 0, 0.3,
      0.5, 0.7 and 1: every fold chose 0.5 (docs/benchmarks.md). ``0`` turns it off.

    Why these defaults: on LoCoMo (5 conversations, 996 questions) with all-MiniLM-L6-v2 the
    words with their context find far more (recall@5 70.6) than the vectors alone (36.7).
    Fusing the vector search's own 50 matches at 1 : 0.3 lifts recall@5/@10 to 71.4/81.0
    (equal weights drop them to 64.9/76.9; reciprocal rank fusion at k=60 to 56.8/64.8 at
    1 : 1, 64.0/78.4 at 1 : 0.3). Scoring every candidate with similarities smoothed over two
    neighbours each side and fusing at 1 : 0.6 lifts them to 72.5/82.1 (1 : 0.8 gives 72.4/81.9,
    1 : 1 72.9/81.9; docs/benchmarks.md has the figures). Cross-validated with the issue-15 word
    defaults (``memvault bench locomo --cv --embedder ...``), every fold chose 1 : 1 over 0.4,
    0.6 and 0.8 (held-out R@10 83.3 against 82.6 at 0.6; R@5 74.6 against 75.3), so 1.0 it was;
    once words were scored from the index (a term once per message, lengths in characters,
    ``bm25_b`` 0.3), every fold chose 1.3 over 0.6 to 1.0 and kept it against 1.6 and 2.0
    (held-out R@10 83.5 against 82.9 at 1.0; R@5 73.9 against 74.6), so 1.3 it is. A stronger
    embedder may deserve a larger ``vector_weight``: measure with
    ``memvault bench locomo --embedder ...``.

    **Thresholds**

    - ``min_lexical_score`` / ``min_vector_score`` (default ``None``): drop candidates whose raw
      score (context BM25, or the message's own similarity to the query, such as a cosine,
      before any smoothing) is below it.
      ``RecallOptions(min_vector_score=0.3)``.
    - ``relative_threshold`` (default 0): drop hits whose fused score is below this fraction of
      the best hit's. ``RecallOptions(relative_threshold=0.5)`` keeps hits at least half as good.

    **Also returned**: the working memory when ``working_memory`` (default ``True``).
    """

    top_k: int = 5
    scope: Scope = "resource"
    message_range: int = 1
    last_n: int | None = None
    merge: MergeStrategy = "prepend"

    candidates: int = 100
    context_window: int = 3
    context_decay: float = 0.7
    context_reach: int = 2
    bm25_k1: float = 1.2
    bm25_b: float = 0.3
    author_boost: float = 0.2
    author_key: str = "name"
    author_in_context: bool = True
    date_boost: float = 2.0
    thread_boost: float = 0.0
    entity_boost: float | None = None
    thread_diversity: float = 0.0
    neighbour_diversity: float = 0.0
    feedback_weight: float = 0.0
    question_penalty: float | None = None
    feedback_docs: int = 3
    feedback_terms: int = 10

    fusion: Fusion = "weighted"
    normalization: Normalization = "minmax"
    lexical_weight: float = 1.0
    vector_weight: float | None = None
    vector_context_window: int = 2
    vector_context_decay: float = 0.5
    rrf_k: int = 60
    vector_candidates: int = 50
    sentence_weight: float = 0.5

    min_lexical_score: float | None = None
    min_vector_score: float | None = None
    relative_threshold: float = 0.0

    working_memory: bool = True

    def __post_init__(self) -> None:
        _choice("scope", self.scope, SCOPES)
        _choice("merge", self.merge, MERGE_STRATEGIES)
        _choice("fusion", self.fusion, FUSIONS)
        _choice("normalization", self.normalization, NORMALIZATIONS)
        for name in ("top_k", "candidates", "vector_candidates", "rrf_k", "feedback_docs",
                     "feedback_terms"):
            _integer(name, getattr(self, name), minimum=1)
        for name in ("message_range", "context_window", "context_reach", "vector_context_window"):
            _integer(name, getattr(self, name), minimum=0)
        if self.last_n is not None:
            _integer("last_n", self.last_n, minimum=0)
        for name in ("author_boost", "date_boost", "thread_boost", "lexical_weight", "bm25_k1",
                     "feedback_weight"):
            _number(name, getattr(self, name), low=0.0)
        for name in ("vector_weight", "entity_boost"):
            if getattr(self, name) is not None:
                _number(name, getattr(self, name), low=0.0)
        _number("context_decay", self.context_decay, low=0.0, high=1.0)
        _number("vector_context_decay", self.vector_context_decay, low=0.0, high=1.0)
        _number("bm25_b", self.bm25_b, low=0.0, high=1.0)
        _number("thread_diversity", self.thread_diversity, low=0.0, high=1.0)
        _number("neighbour_diversity", self.neighbour_diversity, low=0.0, high=1.0)
        _number("relative_threshold", self.relative_threshold, low=0.0, high=1.0)
        _number("sentence_weight", self.sentence_weight, low=0.0, high=1.0)
        if self.question_penalty is not None:
            _number("question_penalty", self.question_penalty, low=0.0, high=1.0)
        for name in ("min_lexical_score", "min_vector_score"):
            value = getattr(self, name)
            if value is not None:
                _number(name, value)
        if not isinstance(self.author_key, str) or not self.author_key:
            raise ValidationError("author_key must be a non-empty string (a metadata key)")


SCORED_VECTOR_WEIGHT = 1.3
"""``vector_weight`` when ``None`` and every candidate gets a (smoothed) vector score."""
MATCHED_VECTOR_WEIGHT = 0.3
"""``vector_weight`` when ``None`` and only the vector search's own matches have one."""
WORDS_QUESTION_PENALTY = 0.9
"""``question_penalty`` when ``None`` and no vector scorer: the folds' choice, words only."""
SCORED_QUESTION_PENALTY = 0.5
"""``question_penalty`` when ``None`` with a :class:`~memvault.recall.types.VectorScorer`."""
WORDS_ENTITY_BOOST = 0.0
"""``entity_boost`` when ``None`` and no vector scorer: the folds' choice, words only."""
SCORED_ENTITY_BOOST = 0.5
"""``entity_boost`` when ``None`` with a :class:`~memvault.recall.types.VectorScorer`."""


def _given_or(value: float | None, scored: bool, with_scorer: float, without: float) -> float:
    if value is not None:
        return value
    return with_scorer if scored else without


def vector_weight(options: RecallOptions, scored: bool) -> float:
    """``options.vector_weight``, or its default for recall with (``scored``) or without a
    vector scorer."""
    return _given_or(options.vector_weight, scored, SCORED_VECTOR_WEIGHT, MATCHED_VECTOR_WEIGHT)


def question_penalty(options: RecallOptions, scored: bool) -> float:
    """``options.question_penalty``, or its default for recall with (``scored``) or without a
    vector scorer."""
    return _given_or(options.question_penalty, scored, SCORED_QUESTION_PENALTY, WORDS_QUESTION_PENALTY)


def entity_boost(options: RecallOptions, scored: bool) -> float:
    """``options.entity_boost``, or its default for recall with (``scored``) or without a
    vector scorer."""
    return _given_or(options.entity_boost, scored, SCORED_ENTITY_BOOST, WORDS_ENTITY_BOOST)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {shown(value)}")


def _integer(name: str, value: object, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}, got {shown(value)}")


def _number(name: str, value: object, *, low: float | None = None, high: float | None = None) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        raise ValidationError(f"{name} must be a number, got {shown(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValidationError(f"{name} must be {bounds}, got {shown(value)}")
