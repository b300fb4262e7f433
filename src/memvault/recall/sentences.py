"""A message's sentences, embedded beside the message: scores by meaning that a long turn does not blur.

One vector for a turn that says several things ("Hey Tim! Good to see you again. So much has
happened - on and off the court. Last week I scored 40 points, my highest ever ...") sits
between them, and a question about one of them finds it late. So with an embedder, each
message of two sentences or more also has its sentences' vectors (derived data the store keeps
beside the message's vector: :class:`~memvault.stores.capabilities.SentenceVectors`), and
recall scores a candidate by meaning as::

    (1 - sentence_weight) * cos(query, message) + sentence_weight * max cos(query, sentence)

(:attr:`memvault.recall.RecallOptions.sentence_weight`, default 0.5: the value every fold of
LoCoMo's cross-validation chose; docs/benchmarks.md). A message without sentences' vectors
(one sentence, or embedded before they existed: ``memvault reindex`` adds them) keeps its own
similarity. The vector search itself still finds whole messages.

Sentences end at ``.``, ``!`` or ``?`` followed by white space, at the ideographic full
stop and the full-width exclamation and question marks (U+3002, U+FF01, U+FF1F), and at line
breaks; a piece without a letter or digit ("!!", "...") is no sentence. A message of
more than :data:`MAX_SENTENCES` is embedded as that many runs of consecutive sentences, so
that a huge message costs a bounded number of vectors. Each is embedded with the author's
name, as the message is ("Ana: I started cello lessons.").

Example::

    >>> split_sentences("Hey Tim! Last week I scored 40 points. [image: a court]")
    ['Hey Tim!', 'Last week I scored 40 points.', '[image: a court]']
    >>> sentence_texts("Hey Tim! Last week I scored 40 points.", "John")
    ['John: Hey Tim!', 'John: Last week I scored 40 points.']
    >>> sentence_texts("Just one sentence.", "John")
    []
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy comes with the embedder extras; recall by words alone imports this module
    import numpy as np
    from numpy.typing import NDArray

MAX_SENTENCES = 16
"""At most this many vectors per message: more sentences are embedded as that many runs."""

_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])\s*|\s*\n\s*")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, in order, stripped (see the module doc)."""
    return [piece for raw in _BOUNDARY.split(text) if (piece := raw.strip())
            and any(ch.isalnum() for ch in piece)]


def sentence_texts(text: str, name: str | None = None) -> list[str]:
    """What is embedded for a message's sentences: ``[]`` for fewer than two, else each (or
    each run of them, past :data:`MAX_SENTENCES`), prefixed by ``"name: "`` when a name is given."""
    found = split_sentences(text)
    if len(found) < 2:
        return []
    if len(found) > MAX_SENTENCES:
        edges = [round(i * len(found) / MAX_SENTENCES) for i in range(MAX_SENTENCES + 1)]
        found = [" ".join(found[a:b]) for a, b in pairwise(edges)]
    prefix = f"{name}: " if name else ""
    return [prefix + sentence for sentence in found]


def pack(vectors: NDArray[np.float32]) -> bytes:
    """Sentence vectors (one a row) as stored: unit length, float16, one after another."""
    import numpy as np

    rows = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return bytes(rows.astype("<f2").tobytes())


def best_similarities(blobs: Sequence[bytes], query: NDArray[np.float32],
                      dimensions: int) -> list[float | None]:
    """The best cosine similarity of the unit-length ``query`` to the sentences packed in each
    of ``blobs`` (:func:`pack`), in order; ``None`` for a blob that holds no whole vectors of
    ``dimensions``. One matrix product for all of them (a recall scores hundreds of candidates)."""
    import numpy as np

    width = 2 * dimensions
    whole = [bool(blob) and dimensions > 0 and not len(blob) % width for blob in blobs]
    kept = [blob for blob, ok in zip(blobs, whole, strict=True) if ok]
    if not kept:
        return [None] * len(blobs)
    rows = np.frombuffer(b"".join(kept), dtype="<f2").reshape(-1, dimensions)
    scores = rows.astype(np.float32) @ np.asarray(query, dtype=np.float32)
    starts = np.cumsum([0] + [len(blob) // width for blob in kept[:-1]])
    best = iter(np.maximum.reduceat(scores, starts).tolist())
    return [next(best) if ok else None for ok in whole]


def blend(whole: dict[tuple[str, str], float], best: dict[tuple[str, str], float],
          weight: float) -> dict[tuple[str, str], float]:
    """Each message's similarity ``(1 - weight) * whole + weight * best`` where it has
    sentences' vectors (``best``), its own (``whole``) elsewhere."""
    if weight <= 0 or not best:
        return dict(whole)
    return {key: (1.0 - weight) * value + weight * best[key] if key in best else value
            for key, value in whole.items()}

