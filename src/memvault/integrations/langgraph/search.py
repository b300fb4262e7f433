"""How :class:`~.store.MemvaultStore` ranks items for ``search(query=...)``: memvault's recall
scoring applied to items. By words: Okapi BM25 over each item's indexed text, with the folding
and stemming of every memvault search (:mod:`memvault.rules.words`), word rarity counted among
the searched items alone; and by meaning, when an embedder is set: the cosine of the query's
vector and the item's. The two are fused as recall fuses them
(:func:`memvault.recall.fusion.weighted_fusion`, each source scaled by its best).

Every searched item is returned, ranked: LangGraph's stores answer a query with every item the
namespace and filter select, best first (an item that shares no word and has no vector scores 0).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from memvault.embeddings.base import Embedder
from memvault.errors import MemvaultError
from memvault.recall.fusion import weighted_fusion
from memvault.rules.words import query_groups, stem, tokens
from memvault.stores.items import ItemRecord

log = logging.getLogger("memvault.langgraph")
K1, B = 1.2, 0.75
"""BM25's parameters (recall's defaults)."""


def indexed_text(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts of ``value`` at each path of ``fields`` (LangGraph's path syntax: ``"$"`` for
    the whole value as JSON, ``"a.b"``, ``"items[*].text"``, ``"{x,y}"``...)."""
    from langgraph.store.base.embed import get_text_at_path

    return [text for field in fields for text in get_text_at_path(dict(value), field)]


def words(texts: Sequence[str]) -> str:
    """The folded, stemmed words of ``texts``, space-separated (what an item stores)."""
    return " ".join(word for text in texts for word in tokens(text))


def word_scores(query: str, items: Sequence[ItemRecord]) -> dict[int, float]:
    """BM25 of each item (by position) sharing a term with ``query``."""
    terms = [tuple(stem(w) for w in group) for group in query_groups(query)]
    if not terms or not items:
        return {}
    docs = [item.words.split() for item in items]
    counts = [_counts(terms, doc) for doc in docs]
    average = sum(len(doc) for doc in docs) / len(docs) or 1.0
    df = Counter(term for count in counts for term, n in count.items() if n)
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    scores: dict[int, float] = {}
    for position, (doc, count) in enumerate(zip(docs, counts, strict=True)):
        norm = K1 * (1 - B + B * len(doc) / average)
        score = sum(idf[t] * n * (K1 + 1) / (n + norm) for t, n in count.items() if n)
        if score > 0:
            scores[position] = score
    return scores


def _counts(terms: Sequence[tuple[str, ...]], doc: Sequence[str]) -> dict[tuple[str, ...], int]:
    """How often each term (a phrase of one or more stems) occurs in ``doc``."""
    found: dict[tuple[str, ...], int] = {}
    for term in terms:
        size = len(term)
        if size == 1:  # a word: counted in C
            found[term] = doc.count(term[0])
        else:  # a phrase (a CJK run)
            found[term] = sum(1 for i in range(len(doc) - size + 1) if tuple(doc[i : i + size]) == term)
    return found


def vector_scores(query_vector: bytes, items: Sequence[ItemRecord]) -> dict[int, float]:
    """The cosine of the query's unit vector and each item's (items without one, or of another
    width, are left out)."""
    import numpy

    query = numpy.frombuffer(query_vector, dtype=numpy.float32)
    scores: dict[int, float] = {}
    for position, item in enumerate(items):
        if item.vector and len(item.vector) == len(query_vector):
            scores[position] = float(numpy.frombuffer(item.vector, dtype=numpy.float32) @ query)
    return scores


def rank(
    query: str, items: Sequence[ItemRecord], query_vector: bytes = b""
) -> list[tuple[ItemRecord, float]]:
    """Every item with its fused score, best first (ties keep the items' order)."""
    sources = {"words": word_scores(query, items)}
    if query_vector:
        sources["meaning"] = vector_scores(query_vector, items)
    fused = weighted_fusion(sources)
    scored = sorted(fused, key=lambda i: (-fused[i], i))
    rest = [i for i in range(len(items)) if i not in fused]
    return [(items[i], fused[i]) for i in scored] + [(items[i], 0.0) for i in rest]


async def embed(embedder: Embedder | None, texts: Sequence[str]) -> list[bytes]:
    """Each text's float32 unit vector (``b""`` for an empty text); all ``b""`` without an
    embedder or when it fails (logged: words still work, invariant 5)."""
    if embedder is None or not texts:
        return [b""] * len(texts)
    wanted = [i for i, text in enumerate(texts) if text.strip()]
    vectors = [b""] * len(texts)
    if not wanted:
        return vectors
    try:
        matrix = await embedder.embed([texts[i] for i in wanted])
    except MemvaultError as exc:
        log.warning("embedding store items failed (%s): they are searched by words only", exc)
        return vectors
    for row, i in enumerate(wanted):
        vectors[i] = matrix[row].astype("float32").tobytes()
    return vectors
