"""Passages: stored messages as recall weighs them, decoded in full only when they are fed.

Recall reads a thousand messages to score a query by words (each candidate with its
neighbours: :mod:`memvault.recall.lexical`) and feeds a dozen. What it scores a message by is
small: its place in its thread, its time, its metadata (the author's name) and its indexed text
(:func:`memvault.rules.words.index_text`). A :class:`Passage` carries exactly that, and
:meth:`Passage.message` gives the whole :class:`~memvault.model.Message`, built on first use.
A store that can make passages from its rows without building messages
(:class:`~memvault.stores.capabilities.PassageReads`: the SQLite and PostgreSQL stores) saves
the cost of building every read message, and of decoding anything of a row before it is
looked at (a full-text hit is only looked up by its thread and id); any other store's
messages become passages with :meth:`Passage.of`, and nothing changes for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memvault.model import Message
from memvault.rules.words import index_text, tokens
from memvault.stores.common import from_micros, to_micros

Weighed = tuple[int, dict[str, Any], str]
"""What recall weighs a message by beyond its place: ``created_us``, ``metadata``, ``text``."""


class Passage:
    """A stored message as recall weighs it: ``thread_id``, ``id``, ``seq``, ``created_us``
    (its ``created_at`` in microseconds since the epoch), ``metadata`` and ``text`` (its
    indexed text, :func:`~memvault.rules.words.index_text`), each read on first use.
    :meth:`message` is the message."""

    __slots__ = ("_message", "_weighed", "id", "seq", "thread_id")

    def __init__(self, thread_id: str | None, message_id: str, seq: int | None,
                 message: Message | None = None) -> None:
        self.thread_id = thread_id
        self.id = message_id
        self.seq = seq
        self._message = message
        self._weighed: Weighed | None = None

    @classmethod
    def of(cls, message: Message) -> Passage:
        """The passage of a message already built."""
        return cls(message.thread_id, message.id, message.seq, message)

    @property
    def created_us(self) -> int:
        return self._fields()[0]

    @property
    def metadata(self) -> dict[str, Any]:
        return self._fields()[1]

    @property
    def text(self) -> str:
        return self._fields()[2]

    def metadata_value(self, key: str) -> Any:
        """``metadata.get(key)`` (a subclass may answer without decoding the rest)."""
        return self.metadata.get(key)

    @property
    def created_at(self) -> datetime:
        return self._message.created_at if self._message is not None else from_micros(self.created_us)

    def message(self) -> Message:
        """The whole message (built once, on the first call)."""
        if self._message is None:
            self._message = self._build()
        return self._message

    def _fields(self) -> Weighed:
        weighed = self._weighed
        if weighed is None:
            weighed = self._weighed = self._weigh()
        return weighed

    def _weigh(self) -> Weighed:
        """What recall weighs, read from the message (a subclass may read it without one)."""
        message = self.message()
        return to_micros(message.created_at), message.metadata, index_text(message)

    def _build(self) -> Message:
        raise NotImplementedError("a passage made without its message builds it in a subclass")

    def __repr__(self) -> str:
        return f"Passage(thread_id={self.thread_id!r}, id={self.id!r}, seq={self.seq!r})"


Mark = tuple[int, int]
"""What the full-text index knows of a read message for one query: which of the query's terms
its indexed text holds (bit ``i`` for ``terms[i]``) and that text's length in characters."""


@dataclass
class SearchPool:
    """A full-text search with what recall scores its hits by, read in one store call
    (:class:`~memvault.stores.capabilities.PoolSearch`).

    - ``hits``: the search's best matches, best first, as passages with their scores (what
      ``search_passages`` gives);
    - ``terms``: the query terms :attr:`marks` refer to, bit ``i`` for ``terms[i]``
      (:func:`memvault.rules.words.query_terms`, less any word the store leaves out of the
      search as too common in the resource);
    - ``threads``: for each thread with a hit, the hits with ``message_range`` neighbours on
      each side, in thread order (what ``read_passages`` gives);
    - ``marks``: for passages of :attr:`threads`, by ``(thread_id, id)``, which of
      :attr:`terms` the message's indexed text holds and its length in characters
      (:data:`Mark`). A passage without one is marked from its text by whoever scores it.
    """

    hits: list[tuple[Passage, float]]
    terms: list[tuple[str, ...]]
    threads: dict[str, list[Passage]] = field(default_factory=dict)
    marks: dict[tuple[str, str], Mark] = field(default_factory=dict)
    message_range: int = 0


def mark_of(text: str, terms: list[tuple[str, ...]]) -> Mark:
    """The :data:`Mark` of an indexed text (:func:`~memvault.rules.words.index_text`) for
    ``terms``: bit ``i`` set when its tokens (:func:`~memvault.rules.words.tokens`) hold
    ``terms[i]`` (a word, or a phrase of CJK characters in a row), and its length in characters.
    What a :class:`~memvault.stores.capabilities.PoolSearch` store's marks must equal."""
    found = tokens(text)
    words = set(found)
    mask = 0
    for i, term in enumerate(terms):
        n = len(term)
        if (term[0] in words) if n == 1 else any(
                tuple(found[j:j + n]) == term for j in range(len(found) - n + 1)):
            mask |= 1 << i
    return mask, len(text)
