"""``memvault bench turn`` on the tiny synthetic LoCoMo-schema conversation of the locomo bench
tests (never the real data set): the replay goes through memory.turn and stores the whole
conversation; the fed context is a fraction of it and holds the evidence; assembly is timed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memvault.bench import turn as bench_turn
from memvault.cli.app import app

from .test_bench_locomo import SAMPLE


def test_replay_feeds_the_evidence_and_less_than_everything(tmp_path: Path) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps([SAMPLE]))
    result = bench_turn.replay(path, conversation=0, max_tokens=16_000)
    assert result["conversation"] == "conv-test" and result["sessions"] == 3
    assert result["user_turns"] == 6  # Ana's turns (session 2 opens with Ben: saved, not a turn)
    assert 0 < result["fed_over_full"]["median"] <= 1.5
    assert result["evidence_fed"]["questions"] == 6  # those with valid evidence
    # a tiny conversation fits the context whole: every evidence turn is fed
    assert result["evidence_fed"]["when_answerable_in_current_thread"] == 100.0
    assert result["history_tokens_at_end"] > result["fed_tokens"]["last"] / 2


def test_assembly_is_timed_in_both_layouts() -> None:
    result = bench_turn.assembly(messages=2_000, queries=5)
    assert [layout["resources"] for layout in result["layouts"]] == [1, 2]
    assert [layout["resource_messages"] for layout in result["layouts"]] == [2_000, 1_000]
    for layout in result["layouts"]:
        assert layout["p50_ms"] > 0 and layout["p95_ms"] >= layout["p50_ms"]
    assert set(result["target_met"]) == {"one"} and result["target_p50_ms"] == 15.0
    dense = bench_turn.assembly(messages=2_000, queries=2, text="dense")
    assert dense["text"] == "dense" and len(dense["layouts"]) == 2


def test_the_cli_prints_json(tmp_path: Path) -> None:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps([SAMPLE]))
    run = CliRunner().invoke(app, ["bench", "turn", "--data", str(path), "--conversation", "0",
                                   "--messages", "0", "--json"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["replay"]["benchmark"] == "turn-replay"
