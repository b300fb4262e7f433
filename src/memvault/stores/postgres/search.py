"""Full-text search in PostgreSQL, matching like every other store (:mod:`memvault.rules.words`).

Words are made in Python, by the same code the reference store uses, so that folding, CJK
splitting and Porter stemming agree everywhere: a message's ``search`` column is
``to_tsvector('simple', document(message))``, where :func:`document` is the message's indexed
text (:func:`memvault.rules.words.index_text`) as space-separated stemmed tokens, each written
as its :func:`lexeme`, and a query is :func:`tsquery`: one phrase per query group
(``'中' <-> '文'``), joined by ``|``. A lexeme is plain ASCII letters and digits, which the
``simple`` configuration keeps whole and as it is (it has no stop words), whatever the server's
locale: PostgreSQL's parser never sees a character it could take for a space.

Any user string is safe: the query text reaches PostgreSQL only as stemmed word tokens, each
quoted as a tsquery lexeme, in a bound parameter. Ranking is ``ts_rank_cd`` (cover density,
divided by 1 + log of the message's length): it depends on the message and the query only, so
one resource's scores never depend on another resource's messages.

A search runs in a transaction (sent in one round trip) whose ``statement_timeout`` is
:data:`SEARCH_TIMEOUT`: a search that takes longer is cancelled by the server and raises
:class:`~memvault.errors.StoreError` saying so (the query's terms are capped, see
:func:`memvault.rules.words.query_groups`, so this takes a server in trouble, not a long query).

Limit: a ``tsvector`` holds at most 1 MiB, so only about the first 900 kB of a message's
distinct words are indexed (:data:`MAX_VECTOR_BYTES`; a 10 MB message still saves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from psycopg import errors

from memvault.errors import StoreError
from memvault.model import Message
from memvault.rules.words import index_text, query_terms, tokens
from memvault.stores import rows
from memvault.stores.postgres.db import Conn, pipelined_transaction
from memvault.stores.postgres.retention import VISIBLE, visible_args

T = TypeVar("T")

COLUMNS = rows.qualified(rows.MESSAGE_COLUMNS, "m")
"""The message columns :func:`memvault.stores.rows.message` reads, from ``messages AS m``."""
REBUILD_BATCH = 500
SEARCH_TIMEOUT = 10.0
"""Seconds a search statement may run before the server cancels it (``statement_timeout``)."""
MAX_LEXEME_BYTES = 2047
"""PostgreSQL does not index longer words (a :func:`lexeme`: a word that is not plain ASCII
letters and digits is searchable up to 1,023 bytes of UTF-8)."""
_PLAIN = re.compile(r"[a-wyz0-9][a-z0-9]*")
"""A token stored as it is: ASCII letters and digits, not starting with ``x``."""
RANK = "ts_rank_cd(m.search, to_tsquery('simple', %(query)s), 1)"
"""A hit's score: cover density, divided by 1 + log of the message's length (``%(query)s``:
the :func:`tsquery`)."""
MAX_VECTOR_BYTES = 900_000
"""A ``tsvector`` holds at most 1 MiB: a message's document stops at about this size (counted
generously), so that saving a huge message never fails; only its words past it go unsearchable."""


def lexeme(token: str) -> str:
    """How a token is written for PostgreSQL: as it is when it is plain (:data:`_PLAIN`), else
    ``x`` and its UTF-8 bytes in hexadecimal. The parser then reads every written token as one
    ASCII word, which ``simple`` keeps as it is, so a token matches exactly the tokens equal to
    it, as in the reference store. A character the server's locale counts as a space (U+108FB
    under C.UTF-8, say) no longer splits a token in two (the query "\U000108fb42" matched "42"),
    nor does the locale's lower-casing change one. The mapping is one to one: a plain token
    never starts with ``x``."""
    return token if _PLAIN.fullmatch(token) else "x" + token.encode().hex()


def document(message: Message) -> str:
    """The text ``to_tsvector('simple', ...)`` indexes for a message: its stemmed tokens, up to
    :data:`MAX_VECTOR_BYTES` of ``tsvector`` (words past that are not searchable)."""
    kept: list[str] = []
    seen: set[str] = set()
    size = 0
    for chunk in _chunks(index_text(message)):
        for token in map(lexeme, tokens(chunk)):
            length = len(token)  # ASCII
            if length > MAX_LEXEME_BYTES:
                continue  # PostgreSQL skips it, as we do
            size += 2 if token in seen else length + 10  # a position; or an entry, count and position
            if size > MAX_VECTOR_BYTES:
                return " ".join(kept)
            seen.add(token)
            kept.append(token)
    return " ".join(kept)


def _chunks(text: str, size: int = 65_536) -> Iterator[str]:
    """``text`` in pieces cut between words (indexed text has its CJK characters spaced out),
    so that a huge message is only tokenized as far as it is indexed."""
    start = 0
    while start < len(text):
        stop = start + size
        if stop < len(text):
            cut = max(text.rfind(c, start, stop) for c in " \n\t")
            while cut <= start and stop < len(text) and text[stop].isalnum():
                stop += 1  # no white space: go on to the end of the word
            stop = cut if cut > start else stop
        yield text[start:stop]
        start = stop


def tsquery(query: str) -> str | None:
    """A ``to_tsquery('simple', ...)`` expression for any user string: one quoted phrase per
    query term (:func:`~memvault.rules.words.query_terms`), joined by ``|``; ``None`` when the
    query has no words (it matches nothing)."""
    return tsquery_of(query_terms(query))


def tsquery_of(terms: list[tuple[str, ...]]) -> str | None:
    """:func:`tsquery` of a query's terms (stemmed words and CJK phrases, each once)."""
    return " | ".join(map(phrase, terms)) or None


def phrase(term: tuple[str, ...]) -> str:
    """A query term (stemmed words) as a tsquery operand: its quoted lexemes joined by ``<->``."""
    return " <-> ".join(_quoted(lexeme(word)) for word in term)


def _quoted(word: str) -> str:
    """A lexeme as a quoted tsquery operand."""
    # Lexemes are letters and digits; escaping anyway keeps any string a plain lexeme.
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


async def search(
    conn: Conn, resource_id: str, query: str, thread_id: str | None, limit: int, make: Callable[[Any], T]
) -> list[tuple[T, float]]:
    """The resource's (or the thread's) messages matching ``query`` (a :func:`tsquery`), best
    first, each row made into what ``make`` makes of it (:func:`~memvault.stores.rows.message`,
    :func:`~memvault.stores.rows.passage`) with its score; ties go to the older message. Raises
    StoreError after :data:`SEARCH_TIMEOUT`."""
    found = await timed_fetch(
        conn,
        f"SELECT {COLUMNS}, {RANK} AS score"
        f" FROM messages AS m WHERE {hits_where(thread_id is not None)} ORDER BY {HIT_ORDER} LIMIT %(limit)s",
        {**visible_args(resource_id), "query": query, "thread": thread_id, "limit": limit},
    )
    return [(make(r[:-1]), float(r[-1])) for r in found]


def hits_where(thread: bool) -> str:
    """The condition on ``messages AS m`` a search's hits meet: the resource's unexpired
    messages matching ``%(query)s`` (a :func:`tsquery`), and with ``thread`` in ``%(thread)s``."""
    where = f"m.resource_id = %(resource)s AND m.search @@ to_tsquery('simple', %(query)s) AND {VISIBLE}"
    return where + " AND m.thread_id = %(thread)s" if thread else where


HIT_ORDER = "score DESC, m.created_us, m.pk"
"""The hits' order: best :data:`RANK` first, ties to the older message, then the earlier saved."""


async def timed_fetch(conn: Conn, statement: str, args: dict[str, Any]) -> list[Any]:
    """The rows of a search ``statement``, run in a transaction whose ``statement_timeout`` is
    :data:`SEARCH_TIMEOUT`, in one round trip; raises StoreError when the server cancels it."""
    try:
        async with pipelined_transaction(conn):  # one round trip
            await conn.execute("SELECT set_config('statement_timeout', %s, true)",
                               (f"{max(1, round(SEARCH_TIMEOUT * 1000))}ms",))
            cursor = await conn.execute(statement, args)
        return await cursor.fetchall()
    except errors.QueryCanceled as exc:
        raise StoreError(
            f"full-text search was cancelled by PostgreSQL ({' '.join(str(exc).split())}; a"
            f" search may run {SEARCH_TIMEOUT:g} s): the server may be overloaded; try again,"
            " or search with fewer words"
        ) from exc


async def rebuild(conn: Conn, where: str = "true") -> int:
    """Recompute the ``search`` column of every message (of those ``where``, a condition on
    ``messages AS m``, selects) from its parts, a batch per transaction (``conn`` in autocommit
    mode; in a transaction, a savepoint per batch); returns how many it covered."""
    done, after = 0, 0
    while True:
        async with conn.transaction():
            cursor = await conn.execute(
                f"SELECT m.pk, {COLUMNS} FROM messages AS m WHERE m.pk > %s AND ({where})"
                " ORDER BY m.pk LIMIT %s FOR NO KEY UPDATE",
                (after, REBUILD_BATCH),
            )
            found: list[Any] = await cursor.fetchall()
            if not found:
                return done
            await conn.execute(
                "UPDATE messages AS m SET search = to_tsvector('simple', u.document)"
                " FROM unnest(%s::bigint[], %s::text[]) AS u(pk, document) WHERE m.pk = u.pk",
                ([r[0] for r in found], [document(rows.message(r[1:])) for r in found]),
            )
        done += len(found)
        after = found[-1][0]


NOT_PLAIN = ("m.parts ~ '[^\\x01-\\x7f]' OR strpos(m.parts, '\\u') > 0"
             " OR strpos(m.search::text, '''x') > 0")
"""The messages whose :func:`document` may hold a token that is not plain (:func:`lexeme`):
a character beyond ASCII in their parts (as it is or escaped in the JSON), or a lexeme
starting with ``x``: what schema migration 11 indexes again (:mod:`.schema`)."""
