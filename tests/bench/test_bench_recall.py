"""``memvault bench recall`` at tiny sizes: the result's shape, that every system answered and
that the targets follow the measurements. No timing assertions: the figures depend on the
machine."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="the recall benchmark comes with the bench extra")
pytest.importorskip("usearch", reason="the recall benchmark comes with the bench extra")
pytest.importorskip("langgraph.store.memory", reason="the peer comes with the bench extra")

import numpy as np

from memvault.bench import recall

SIZES, QUERIES = (300, 1200), 12
SYSTEMS = ("floor", "floor_einsum", "exact", "ann", "peer")


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return recall.run(sizes=SIZES, queries=QUERIES, peer_budget_s=60.0)


def test_result_is_json_with_its_config(result: dict[str, Any]) -> None:
    assert json.loads(json.dumps(result)) == result
    assert result["benchmark"] == "recall"
    config = result["config"]
    assert (config["sizes"], config["queries"], config["top_k"], config["dimensions"]) == (
        list(SIZES), QUERIES, 10, 384)
    assert config["ann"]["engine"] == "usearch HNSW"
    assert config["peer"]["system"].startswith("langgraph")
    assert {"cpus", "numpy", "usearch", "langgraph"} <= set(config["machine"])
    assert result["elapsed_s"] >= 0


def test_every_size_has_every_systems_figures(result: dict[str, Any]) -> None:
    assert [row["size"] for row in result["results"]] == list(SIZES)
    for row in result["results"]:
        systems = row["systems"]
        assert set(systems) == set(SYSTEMS)
        for name in SYSTEMS:
            figures = systems[name]
            assert 0 < figures["p50_ms"] <= figures["p99_ms"], (row["size"], name)
            assert figures["queries"] == QUERIES, (row["size"], name)
        assert "recall_at_10" not in systems["floor"]
        assert systems["exact"]["recall_at_10"] == 1.0  # the exact index finds the floor's 10
        assert systems["floor_einsum"]["recall_at_10"] == 1.0
        assert systems["peer"]["recall_at_10"] == 1.0  # and so does the peer
        assert 0.0 <= systems["ann"]["recall_at_10"] <= 1.0
        assert systems["peer"]["bytes_per_vector_measured"] > 384 * 8
        assert "skipped" not in systems["peer"]
        assert set(row["build"]) == {"exact_s", "ann_s", "peer_s"}
        assert all(seconds >= 0 for seconds in row["build"].values())
        assert row["ann_graph"] is None  # below graph_min_rows: the ANN searches exactly


def test_filtered_searches_are_reported(result: dict[str, Any]) -> None:
    for row in result["results"]:
        assert set(row["filtered"]) == {"thread_10pct", "thread_conversation"}
        for figures in row["filtered"].values():
            assert 0 < figures["thread_rows"] < row["size"]
            for name in ("exact", "ann"):
                assert 0 < figures[name]["p50_ms"] <= figures[name]["p99_ms"]
            assert figures["ann"]["recall_at_10"] == 1.0


def test_targets_follow_the_measurements(result: dict[str, Any]) -> None:
    assert set(result["targets"]) == set(recall.TARGETS) == set(result["targets_met"])
    met = result["targets_met"]
    assert met["exact_p50_ms_at_100k"] is None  # not a size of this run
    assert met["ann_p50_ms_at_1m"] is None
    assert "did not include 100,000" in result["targets_notes"]["exact_p50_ms_at_100k"]
    rows = [row["systems"] for row in result["results"]]
    assert met["ann_recall_at_10_every_size"] == all(r["ann"]["recall_at_10"] >= 0.95 for r in rows)
    for system in ("exact", "ann"):
        assert met[f"{system}_p50_over_peer_every_size"] == all(
            r[system]["p50_ms"] < r["peer"]["p50_ms"] for r in rows)


def test_a_peer_over_the_memory_limit_is_skipped_with_the_reason() -> None:
    result = recall.run(sizes=(200,), queries=4, peer_memory_limit=1)
    peer = result["results"][0]["systems"]["peer"]
    assert peer["p50_ms"] is None and peer["queries"] == 0
    assert "GiB" in peer["skipped"] and peer["estimated_bytes"] > 1
    assert "peer_s" not in result["results"][0]["build"]
    assert result["targets_met"]["exact_p50_over_peer_every_size"] is None
    assert "not at 200" in result["targets_notes"]["exact_p50_over_peer_every_size"]


def test_the_data_is_deterministic_normalised_and_threaded() -> None:
    corpus, queries, threads = recall.make_data(2000, 5, seed=3)
    again = recall.make_data(2000, 5, seed=3)
    assert np.array_equal(corpus, again[0]) and np.array_equal(queries, again[1])
    assert threads == again[2]
    assert not np.array_equal(corpus, recall.make_data(2000, 5, seed=4)[0])
    assert corpus.shape == (2000, 384) and corpus.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(corpus, axis=1), 1.0, atol=1e-5)
    big = threads.count(recall.BIG_THREAD) / len(threads)
    assert math.isclose(big, recall.BIG_THREAD_SHARE, abs_tol=0.03)
    assert len(set(threads)) == 1 + 2000 // recall.SMALL_THREAD_ROWS
    similarity = corpus[:500] @ corpus[:500].T
    assert 0.1 < float(similarity[np.triu_indices(500, 1)].mean()) < 0.3  # calibrated: ~0.2


def test_the_floor_is_brute_force() -> None:
    corpus, queries, _ = recall.make_data(500, 3, seed=5)
    for query in queries:
        scores = corpus @ query
        assert recall.floor_search(corpus, query) == np.argsort(-scores)[:10].tolist()
        assert recall.floor_search(corpus, query, einsum=True) == np.argsort(-scores)[:10].tolist()


def test_impossible_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="sizes"):
        recall.run(sizes=(0,))
    with pytest.raises(ValueError, match="queries"):
        recall.run(sizes=(10,), queries=0)


def test_the_command_prints_json_and_draws_the_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from typer.testing import CliRunner

    from memvault.cli.app import app

    png = tmp_path / "recall.png"
    out = CliRunner().invoke(app, ["bench", "recall", "--sizes", "100,250", "--queries", "3",
                                   "--plot", str(png), "--json"])
    assert out.exit_code == 0, out.output
    printed = json.loads(out.stdout)
    assert [row["size"] for row in printed["results"]] == [100, 250]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_prints_tables() -> None:
    from typer.testing import CliRunner

    from memvault.cli.app import app

    out = CliRunner().invoke(app, ["bench", "recall", "--sizes", "150", "--queries", "3"])
    assert out.exit_code == 0, out.output
    assert "search(top_k=10) latency" in out.stdout and "exact" in out.stdout


def test_the_command_refuses_bad_sizes() -> None:
    from typer.testing import CliRunner

    from memvault.cli.app import app

    out = CliRunner().invoke(app, ["bench", "recall", "--sizes", "10,x", "--json"])
    assert out.exit_code != 0
