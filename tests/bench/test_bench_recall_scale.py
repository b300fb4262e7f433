"""``memvault bench recall --scale`` at a tiny size: a real store written by the bench, measured
in subprocesses, lazy beside eager, with recall against brute force. No timing assertions: the
figures depend on the machine."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("numpy", reason="the recall benchmark comes with the bench extra")

from memvault.bench import stored

SIZE, QUERIES = 2_500, 6


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return stored.run(sizes=[SIZE], queries=QUERIES)


def test_every_layout_and_mode_is_measured(result: dict[str, Any]) -> None:
    assert json.loads(json.dumps(result)) == result
    one, spread = result["results"]
    assert (one["layout"], one["resources"], one["loaded_vectors"]) == ("one", 1, SIZE)
    assert (spread["layout"], spread["resources"], spread["searched_resources"]) == ("spread", 3, 3)
    assert spread["loaded_vectors"] == SIZE
    for row in (one, spread):
        for mode in ("lazy", "eager"):
            figures = row[mode]
            assert figures["open_s"] > 0 and figures["p95_ms"] >= figures["p50_ms"] > 0
            assert figures["rss_loaded_mb"] > 0 and figures["resident_over_raw"] > 0
            assert figures["recall_at_10"] >= 0.99  # against exact float32 brute force


def test_targets_at_1m_are_unknown_below_1m(result: dict[str, Any]) -> None:
    met = result["targets_met"]
    assert met["open_s_at_1m"] is None and met["p50_ms_at_1m"] is None
    assert met["recall_at_10"] is True


def test_the_command_prints_json_and_tables() -> None:
    from typer.testing import CliRunner

    from memvault.cli.app import app

    out = CliRunner().invoke(app, ["bench", "recall", "--scale", "--sizes", "1200", "--queries", "3",
                                   "--json"])
    assert out.exit_code == 0, out.output
    assert [r["size"] for r in json.loads(out.stdout)["results"]] == [1200, 1200]
    out = CliRunner().invoke(app, ["bench", "recall", "--scale", "--sizes", "1100", "--queries", "3"])
    assert out.exit_code == 0, out.output
    assert "vectors at scale" in out.stdout and "lazy" in out.stdout


def test_the_scan_mode_measures_the_lazy_index_without_its_lists() -> None:
    from typer.testing import CliRunner

    from memvault.cli.app import app

    out = CliRunner().invoke(app, ["bench", "recall", "--scale", "--sizes", "1000", "--queries", "3",
                                   "--modes", "lazy,scan", "--json"])
    assert out.exit_code == 0, out.output
    for row in json.loads(out.stdout)["results"]:
        assert set(row) >= {"lazy", "scan"} and "eager" not in row
        assert row["scan"]["recall_at_10"] >= 0.99
    bad = CliRunner().invoke(app, ["bench", "recall", "--scale", "--modes", "fast"])
    assert bad.exit_code != 0 and "lazy, scan, eager" in bad.output
