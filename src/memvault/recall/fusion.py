"""Fusing several rankings of the same items into one.

Each source is a mapping from an item to its raw score (higher is better). Two methods:

- :func:`weighted_fusion`: normalise each source's scores, then add them with weights. An item
  a source did not find gets 0 from it. It keeps how *much* better one item is than another.
- :func:`reciprocal_rank_fusion`: ``sum(weight / (k + rank))``, rank 1 for a source's best item
  (Cormack et al., 2009). It only sees ranks, so it is robust to scores on odd scales.

Example::

    >>> weighted_fusion({"lexical": {"a": 8.0, "b": 4.0}, "vector": {"b": 0.9, "c": 0.45}})
    {'a': 1.0, 'b': 1.5, 'c': 0.5}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Literal, TypeVar

K = TypeVar("K", bound=Hashable)


def normalize(scores: Mapping[K, float], method: Literal["max", "minmax"] = "max") -> dict[K, float]:
    """Scores mapped to [0, 1]. ``"max"``: divided by the best score (a source whose best is not
    positive maps to 0); ``"minmax"``: best → 1, worst → 0 (all equal → all 1)."""
    if not scores:
        return {}
    best = max(scores.values())
    if method == "max":
        return {key: (value / best if best > 0 else 0.0) for key, value in scores.items()}
    worst = min(scores.values())
    spread = best - worst
    return {key: ((value - worst) / spread if spread > 0 else 1.0) for key, value in scores.items()}


def weighted_fusion(
    sources: Mapping[str, Mapping[K, float]],
    weights: Mapping[str, float] | None = None,
    normalization: Literal["max", "minmax"] = "max",
) -> dict[K, float]:
    """``sum(weight[source] * normalize(source)[item])`` over the sources (weight 1 by default)."""
    fused: dict[K, float] = {}
    for name, scores in sources.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for key, value in normalize(scores, normalization).items():
            fused[key] = fused.get(key, 0.0) + weight * value
    return fused


def ranks(scores: Mapping[K, float]) -> dict[K, int]:
    """1-based ranks, best first; ties keep the mapping's order."""
    ordered = sorted(enumerate(scores.items()), key=lambda entry: (-entry[1][1], entry[0]))
    return {key: rank for rank, (_, (key, _)) in enumerate(ordered, start=1)}


def reciprocal_rank_fusion(
    sources: Mapping[str, Mapping[K, float]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
) -> dict[K, float]:
    """``sum(weight[source] / (k + rank))`` over the sources where the item is ranked."""
    fused: dict[K, float] = {}
    for name, scores in sources.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for key, rank in ranks(scores).items():
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
    return fused
