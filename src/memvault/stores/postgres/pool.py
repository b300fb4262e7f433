"""PostgreSQL's :class:`~memvault.stores.capabilities.PoolSearch`: a search, its hits'
neighbourhoods and each read message's query terms, in one statement and one round trip.

The statement finds the hits as :func:`~.search.search` does (the same condition, scores and
order), reads ``message_range`` unexpired neighbours on each side of each hit as
:func:`~.messages.rows_around` does (by position in the thread, not by seq), and tests each
row read against each query term in its ``search`` column (``search @@ term``), so recall
does not tokenize the texts it scores.

A ``tsvector`` answers exactly, as :func:`~memvault.stores.passages.mark_of` does on the text,
except near its limits, where the row is marked from its text instead (the same result, a few
microseconds more):

- a word: unless the document was cut short (:data:`~.search.MAX_VECTOR_BYTES`), which a text
  of at most :data:`EXACT_CHARS` characters never is (a token costs at most 19 bytes of it per
  character), and unless the term is longer than PostgreSQL indexes (:func:`_maskable`);
- a phrase (a CJK run): PostgreSQL keeps at most 256 positions of a word, and none past
  16,383, so only a text of at most :data:`EXACT_PHRASE_CHARS` characters (that many tokens at
  most) is marked from the index.

A message's length is its indexed text's, in characters (``len(passage.text)``): PostgreSQL
does not store it.
"""

from __future__ import annotations

from typing import Any

from memvault.stores import rows
from memvault.stores.passages import Mark, Passage, SearchPool, mark_of
from memvault.stores.postgres.db import Conn
from memvault.stores.postgres.retention import visible, visible_args
from memvault.stores.postgres.search import (
    COLUMNS,
    HIT_ORDER,
    MAX_LEXEME_BYTES,
    MAX_VECTOR_BYTES,
    RANK,
    hits_where,
    lexeme,
    phrase,
    timed_fetch,
    tsquery_of,
)

EXACT_CHARS = MAX_VECTOR_BYTES // 19
"""The longest indexed text (characters) whose ``tsvector`` holds every word of it."""
EXACT_PHRASE_CHARS = 255
"""The longest indexed text (characters) whose ``tsvector`` positions answer a phrase exactly."""


def _maskable(term: tuple[str, ...]) -> bool:
    """Whether the index holds every occurrence of the term's words (PostgreSQL skips a
    lexeme over :data:`~.search.MAX_LEXEME_BYTES`, which a query term of that many bytes of
    UTF-8 can become written as :func:`~.search.lexeme`)."""
    return all(len(lexeme(word)) <= MAX_LEXEME_BYTES for word in term)


def _statement(maskable: list[bool], thread: bool) -> str:
    """The pool's statement: the rows read, each with its score and rank when it is a hit, and
    the bit mask of the terms its ``search`` column holds (bit ``i`` from ``%(t<i>)s``, for
    each term PostgreSQL can answer for: ``maskable[i]``)."""
    near = ("SELECT n.pk FROM messages AS n WHERE n.resource_id = %(resource)s AND n.thread_id = h.thread_id"
            f" AND {visible('n')}")
    bits = " + ".join(
        f"CASE WHEN m.search @@ to_tsquery('simple', %(t{i})s) THEN {1 << i}::bigint ELSE 0 END"
        for i, exact in enumerate(maskable) if exact) or "0"
    return (
        "WITH hits AS MATERIALIZED (SELECT pk, thread_id, seq, score,"
        "  row_number() OVER (ORDER BY score DESC, created_us, pk) AS rank FROM"
        "  (SELECT m.pk, m.thread_id, m.seq, m.created_us,"
        f"    {RANK} AS score"
        f"   FROM messages AS m WHERE {hits_where(thread)} ORDER BY {HIT_ORDER} LIMIT %(limit)s) AS s),"
        " near AS (SELECT pk, score, rank FROM hits"
        f"  UNION ALL SELECT b.pk, NULL, NULL FROM hits AS h, LATERAL ({near}"
        "   AND n.seq < h.seq ORDER BY n.seq DESC LIMIT %(range)s) AS b"
        f"  UNION ALL SELECT a.pk, NULL, NULL FROM hits AS h, LATERAL ({near}"
        "   AND n.seq > h.seq ORDER BY n.seq LIMIT %(range)s) AS a),"
        " wanted AS (SELECT pk, max(score) AS score, min(rank) AS rank FROM near GROUP BY pk)"
        f" SELECT {COLUMNS}, w.score, w.rank, {bits} FROM wanted AS w JOIN messages AS m ON m.pk = w.pk"
        " ORDER BY m.thread_id, m.seq"
    )


async def search_pool(
    conn: Conn, resource_id: str, terms: list[tuple[str, ...]], thread_id: str | None, limit: int,
    message_range: int,
) -> SearchPool:
    """:class:`~memvault.stores.passages.SearchPool` of a query whose terms
    (:func:`~memvault.rules.words.query_terms`, at least one) are ``terms``, none left out,
    read in one statement."""
    args: dict[str, Any] = {**visible_args(resource_id), "query": tsquery_of(terms), "thread": thread_id,
                            "limit": limit, "range": message_range}
    maskable = [_maskable(term) for term in terms]
    for i, term in enumerate(terms):
        if maskable[i]:
            args[f"t{i}"] = phrase(term)
    found = await timed_fetch(conn, _statement(maskable, thread_id is not None), args)
    exact = EXACT_CHARS if all(maskable) else -1
    if any(len(term) > 1 for term in terms):
        exact = min(exact, EXACT_PHRASE_CHARS)
    threads: dict[str, list[Passage]] = {}
    marks: dict[tuple[str, str], Mark] = {}
    hits: list[tuple[int, Passage, float]] = []
    for row in found:
        read = rows.passage(row[:-3])
        score, rank, mask = row[-3:]
        name = read.thread_id or ""
        threads.setdefault(name, []).append(read)
        text = read.text
        marks[(name, read.id)] = (
            (int(mask), len(text)) if len(text) <= exact else mark_of(text, terms))
        if rank is not None:
            hits.append((int(rank), read, float(score)))
    hits.sort(key=lambda hit: hit[0])
    order = {read.thread_id or "": None for _, read, _ in hits}  # threads by their best hit, as read_passages
    return SearchPool([(read, score) for _, read, score in hits], terms,
                      {name: threads[name] for name in order}, marks, message_range)
