"""``memvault bench retention`` runs at a small size and reports every layout, and its sweep
erases exactly the expired half."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memvault.cli.app import app


def test_bench_retention_small() -> None:
    result = CliRunner().invoke(app, ["bench", "retention", "--messages", "200", "--queries", "5"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["messages"] == 200
    assert report["sweep"]["messages"] == 100 and report["sweep"]["resources"] == 1
    for layout in ("no_policy_ms", "policy_nothing_expired_ms", "policy_half_expired_ms", "after_sweep_ms"):
        assert set(report[layout]) == {"get_history", "read_turn", "search_messages"}
        assert all(value > 0 for value in report[layout].values())
