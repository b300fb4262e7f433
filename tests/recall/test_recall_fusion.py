"""Fusion math: normalisation, weighted score fusion, reciprocal rank fusion."""

from __future__ import annotations

import pytest

from memvault.recall.fusion import normalize, ranks, reciprocal_rank_fusion, weighted_fusion


def test_max_normalisation_divides_by_the_best() -> None:
    assert normalize({"a": 8.0, "b": 4.0, "c": 2.0}) == {"a": 1.0, "b": 0.5, "c": 0.25}


def test_minmax_normalisation_maps_best_to_one_and_worst_to_zero() -> None:
    assert normalize({"a": 8.0, "b": 5.0, "c": 2.0}, "minmax") == {"a": 1.0, "b": 0.5, "c": 0.0}


def test_normalising_degenerate_sources() -> None:
    assert normalize({}) == {}
    assert normalize({"a": 3.0, "b": 3.0}, "minmax") == {"a": 1.0, "b": 1.0}
    assert normalize({"a": 0.0, "b": -1.0}, "max") == {"a": 0.0, "b": 0.0}


def test_weighted_fusion_adds_normalised_scores_with_weights() -> None:
    fused = weighted_fusion(
        {"lexical": {"a": 8.0, "b": 4.0}, "vector": {"b": 0.9, "c": 0.45}},
        {"lexical": 1.0, "vector": 2.0},
    )
    assert fused == pytest.approx({"a": 1.0, "b": 0.5 + 2.0, "c": 2.0 * 0.5})


def test_weighted_fusion_missing_from_a_source_counts_zero() -> None:
    fused = weighted_fusion({"lexical": {"a": 2.0}, "vector": {}})
    assert fused == {"a": 1.0}


def test_ranks_are_one_based_best_first_with_stable_ties() -> None:
    assert ranks({"a": 1.0, "b": 3.0, "c": 3.0}) == {"b": 1, "c": 2, "a": 3}


def test_reciprocal_rank_fusion() -> None:
    fused = reciprocal_rank_fusion(
        {"lexical": {"a": 10.0, "b": 5.0}, "vector": {"b": 0.9, "c": 0.1}}, k=60
    )
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})
    assert max(fused, key=fused.__getitem__) == "b"


def test_reciprocal_rank_fusion_weights_and_k() -> None:
    fused = reciprocal_rank_fusion({"x": {"a": 1.0}, "y": {"a": 5.0}}, {"x": 0.5, "y": 2.0}, k=1)
    assert fused == pytest.approx({"a": 0.5 / 2 + 2.0 / 2})


def test_rrf_ignores_score_scales_but_weighted_fusion_does_not() -> None:
    lexical = {"a": 100.0, "b": 1.0}
    vector = {"b": 0.9, "a": 0.89}
    assert reciprocal_rank_fusion({"l": lexical, "v": vector})["a"] == pytest.approx(
        reciprocal_rank_fusion({"l": lexical, "v": vector})["b"])
    weighted = weighted_fusion({"l": lexical, "v": vector})
    assert weighted["a"] > weighted["b"]
