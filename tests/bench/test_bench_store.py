"""``memvault bench store`` at tiny sizes: the result's shape and that every system stored
every message. No timing assertions: the figures depend on the machine."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents.memory", reason="the peer comes with the bench extra")

from memvault.bench import store, syscalls

MESSAGES, THREADS, READS = 200, 20, 20
WRITERS = ("memvault", "memvault_full", "peer", "peer_full", "floor", "floor_full", "floor_bulk")
READERS = ("memvault", "memvault_full", "peer", "peer_full", "floor", "floor_full")


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return store.run(messages=MESSAGES, threads=THREADS, reads=READS,
                     db_dir=tmp_path_factory.mktemp("bench"))


def test_result_is_json_with_its_config(result: dict[str, Any]) -> None:
    assert json.loads(json.dumps(result)) == result
    assert result["benchmark"] == "store"
    config = result["config"]
    assert (config["messages"], config["threads"], config["turns"], config["reads"]) == (
        MESSAGES, THREADS, MESSAGES // 2, READS)
    assert "one transaction per turn" in config["write_unit"]
    assert config["concurrency"] == 1
    assert set(config["durability"]) == set(READERS)


def test_every_system_has_its_figures(result: dict[str, Any]) -> None:
    systems = result["systems"]
    assert set(systems) == set(WRITERS)
    for name in WRITERS:
        assert systems[name]["messages_per_s"] > 0, name
    for name in READERS:
        row = systems[name]
        assert 0 < row["read_p50_ms"] <= row["read_p99_ms"], name
        assert 0 < row["turn_p50_ms"] <= row["turn_p99_ms"], name
        assert row["bad_reads"] == 0, name
    for name in WRITERS:
        row = systems[name]
        assert row["file_bytes_per_message"] == round(row["file_bytes"] / MESSAGES, 1) > 0, name
    assert systems["floor_bulk"]["read_p50_ms"] is None
    assert 0 < systems["memvault"]["history_p50_ms"] <= systems["memvault"]["history_p99_ms"]


def test_every_system_stored_every_message(result: dict[str, Any]) -> None:
    for name in WRITERS:
        assert result["systems"][name]["stored"] == {"messages": MESSAGES, "threads": THREADS}, name
    assert result["counts_ok"] is True
    assert result["reads_ok"] is True
    assert result["same_rows_memvault_floor"] is True


def test_ratios_compare_equal_durability(result: dict[str, Any]) -> None:
    """Each ratio sets memvault beside the peer and the floor at the same ``synchronous``."""
    systems = result["systems"]
    for key, suffix in (("ratios", ""), ("ratios_durability_full", "_full")):
        ratios = result[key]
        mv, peer, floor = (systems[name + suffix] for name in ("memvault", "peer", "floor"))
        assert math.isclose(ratios["write_memvault_over_peer"],
                            mv["messages_per_s"] / peer["messages_per_s"], rel_tol=0.01)
        assert math.isclose(ratios["write_floor_over_memvault"],
                            floor["messages_per_s"] / mv["messages_per_s"], rel_tol=0.01)
        assert math.isclose(ratios["read_p50_memvault_over_peer"],
                            mv["read_p50_ms"] / peer["read_p50_ms"], rel_tol=0.01)
        assert math.isclose(ratios["file_bytes_memvault_over_peer"],
                            mv["file_bytes"] / peer["file_bytes"], rel_tol=0.01)
    assert set(result["targets"]) == set(result["ratios"]) == set(result["ratios_durability_full"])
    for key, met in (("ratios", "targets_met"), ("ratios_durability_full", "targets_met_durability_full")):
        ratios, flags = result[key], result[met]
        assert flags["write_memvault_over_peer"] == (ratios["write_memvault_over_peer"] >= 2)
        assert flags["write_floor_over_memvault"] == (ratios["write_floor_over_memvault"] <= 1.5)
        assert flags["read_p50_memvault_over_peer"] == (ratios["read_p50_memvault_over_peer"] <= 1)
        assert flags["file_bytes_memvault_over_peer"] == (
            ratios["file_bytes_memvault_over_peer"] <= 1.6)


def test_the_peer_ran_at_the_durability_it_is_compared_at(result: dict[str, Any]) -> None:
    """The synchronous setting each peer connection read back after the bench set it."""
    assert result["peer_synchronous_applied"] == {"peer": ["NORMAL"], "peer_full": ["FULL"]}


def test_concurrency_raises_the_write_target() -> None:
    assert store.targets(1)["write_memvault_over_peer"] == (">=", 2.0)
    assert store.targets(16)["write_memvault_over_peer"] == (">=", 3.0)


@pytest.mark.skipif(syscalls.available() is not None, reason="needs strace on Linux")
def test_fsyncs_per_turn_follow_the_durability(tmp_path: Path) -> None:
    """Counted under strace: at synchronous=FULL every turn's commit syncs the WAL (at least one
    fsync per turn at concurrency 1), at NORMAL commits sync nothing (only checkpoints do)."""
    counted = store.count_syscalls(threads=10, turns=60, db_dir=tmp_path)
    assert counted.get("unavailable") is None, counted
    systems = counted["systems"]
    assert set(systems) == set(READERS)
    for name in ("memvault", "peer", "floor"):
        full, normal = systems[name + "_full"], systems[name]
        assert full["fsyncs_per_turn"] >= 1, name
        assert normal["fsyncs_per_turn"] < 0.5, name
        assert full["bytes_written_per_turn"] > 4096 and normal["bytes_written_per_turn"] > 4096, name


def test_the_database_files_are_removed(result: dict[str, Any]) -> None:
    assert not Path(result["config"]["db_dir"]).exists()


def test_the_workload_is_deterministic() -> None:
    one, two = store.make_workload(40, 4, 10, seed=7), store.make_workload(40, 4, 10, seed=7)
    assert one == two
    assert one != store.make_workload(40, 4, 10, seed=8)
    assert sorted(t.thread for t in one.turns) == [k for k in range(4) for _ in range(5)]
    assert [t.thread for t in one.turns] != sorted(t.thread for t in one.turns)  # interleaved
    for turn in one.turns:
        assert store.USER_CHARS[0] <= len(turn.user) <= store.USER_CHARS[1]
        assert store.ASSISTANT_CHARS[0] <= len(turn.assistant) <= store.ASSISTANT_CHARS[1]


@pytest.mark.parametrize(("messages", "threads"), [(201, 20), (0, 1), (200, 101), (200, 0)])
def test_impossible_workloads_are_refused(messages: int, threads: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        store.make_workload(messages, threads, 10)


def test_the_command_prints_json(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memvault.cli.app import app

    out = CliRunner().invoke(app, ["bench", "store", "--messages", "40", "--threads", "4",
                                   "--reads", "5", "--db-dir", str(tmp_path), "--json"])
    assert out.exit_code == 0, out.output
    printed = json.loads(out.stdout)
    assert printed["counts_ok"] is True
    assert set(printed["targets_met"]) == set(store.TARGETS)
    assert "syscalls" not in printed  # only with --syscalls


def test_the_command_refuses_an_odd_count() -> None:
    from typer.testing import CliRunner

    from memvault.cli.app import app

    out = CliRunner().invoke(app, ["bench", "store", "--messages", "41", "--json"])
    assert out.exit_code != 0


def test_another_store_runs_beside_sqlite() -> None:
    """``--db``: memvault on another store (here the in-memory one; PostgreSQL in the docs)."""
    result = store.run(messages=MESSAGES, threads=THREADS, reads=READS, db="memory://")
    other = result["systems"]["memvault_db"]
    assert other["url"] == "memory://" and other["bad_reads"] == 0
    assert other["stored"] == {"messages": MESSAGES, "threads": THREADS}
    assert other["messages_per_s"] > 0 and other["read_p50_ms"] > 0
    assert set(result["db_over_sqlite"]) == {"write", "read_p50"}
