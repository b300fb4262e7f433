"""``memvault bench api`` at a tiny size, with real server processes on 127.0.0.1 and the test
PostgreSQL server: the result's shape, nothing lost or duplicated, the schemas dropped, the CLI.
No timing assertions: the figures depend on the machine."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="the API benchmark needs the server extra")

from memvault.bench import api
from memvault.cli.app import app
from postgres_server import postgres_url, schemas_named

LEVELS = (1, 3)
REQUESTS, PROCESSES = 12, 2
FIGURES = {"requests", "requests_per_s", "p50_ms", "p99_ms", "mean_ms", "client_cpu", "servers_cpu",
           "machine_cpu"}


@pytest.fixture(scope="module")
def postgres() -> str:
    return postgres_url("the API benchmark over PostgreSQL")


@pytest.fixture(scope="module")
def result(postgres: str) -> dict[str, Any]:
    before = schemas_named(postgres, "bench_api")
    measured = api.run(postgres=postgres, concurrency=LEVELS, requests=REQUESTS, warmup=1,
                       processes=PROCESSES, seed_messages=10)
    assert schemas_named(postgres, "bench_api") == before, "the benchmark's schemas were not dropped"
    return measured


def test_result_is_json_with_its_config(result: dict[str, Any]) -> None:
    assert json.loads(json.dumps(result)) == result
    assert result["benchmark"] == "api"
    config = result["config"]
    assert config["concurrency"] == list(LEVELS)
    assert (config["requests_per_cell"], config["processes"]) == (REQUESTS, PROCESSES)
    assert set(result["layouts"]) == {"sqlite", "postgres_1", f"postgres_{PROCESSES}"}


def test_every_route_has_its_figures_at_every_level(result: dict[str, Any]) -> None:
    for name, layout in result["layouts"].items():
        assert set(layout["routes"]) == set(api.ROUTES), name
        for route, levels in layout["routes"].items():
            assert set(levels) == {str(level) for level in LEVELS}, (name, route)
            for level, cell in levels.items():
                assert set(cell) == FIGURES, (name, route, level)
                assert cell["requests"] >= REQUESTS
                assert cell["requests_per_s"] > 0
                assert 0 < cell["p50_ms"] <= cell["p99_ms"]
        assert set(layout["p50_over_floor"]) == set(api.ROUTES) - {"floor"}
        assert all(ratio > 0 for ratio in layout["p50_over_floor"].values())


def test_nothing_posted_was_lost_or_duplicated(result: dict[str, Any]) -> None:
    for name, layout in result["layouts"].items():
        counts = layout["counts"]
        posted = sum(cell["requests"] for cell in layout["routes"]["post_messages"].values())
        warmup = sum(LEVELS)  # one untimed post per connection
        assert counts["acknowledged"] == posted + warmup, name
        assert counts["stored_rows"] == counts["stored_distinct_ids"] == counts["acknowledged"], name
        assert (counts["lost"], counts["duplicated"], counts["unacknowledged"]) == (0, 0, 0), name
        assert result["targets_met"][f"{name}.nothing_lost_or_duplicated"] is True


def test_scale_out_and_targets_are_reported(result: dict[str, Any]) -> None:
    scale = result["scale_out"]
    assert scale["route"] == "post_messages"
    assert scale["processes"] == PROCESSES
    assert set(scale["ratio_per_concurrency"]) == {str(level) for level in LEVELS}
    assert scale["ratio"] == scale["ratio_per_concurrency"][str(max(LEVELS))] > 0
    met = result["targets_met"]
    assert f"postgres_{PROCESSES}_over_postgres_1.post_messages" in met
    for name in result["layouts"]:
        for route in set(api.ROUTES) - {"floor"}:
            assert isinstance(met[f"{name}.{route}.p50_within_3x_floor"], bool)
            assert isinstance(met[f"{name}.{route}.p50_under_10ms"], bool)


def test_cli_prints_json() -> None:
    outcome = CliRunner().invoke(app, ["bench", "api", "--concurrency", "1", "--requests", "3",
                                       "--warmup", "0", "--seed-messages", "2"])
    assert outcome.exit_code == 0, outcome.output
    result = json.loads(outcome.stdout)
    assert set(result["layouts"]) == {"sqlite"}
    assert result["scale_out"] is None
    assert result["layouts"]["sqlite"]["counts"]["acknowledged"] == 3


def test_cli_refuses_bad_levels() -> None:
    outcome = CliRunner().invoke(app, ["bench", "api", "--concurrency", "0"])
    assert outcome.exit_code != 0
    assert "positive" in outcome.output
