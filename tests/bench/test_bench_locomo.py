"""``memvault bench locomo`` on a tiny synthetic conversation in LoCoMo's schema (never the
real data set): the result's shape, the metric, the skipping of bad evidence, the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memvault import Memory
from memvault.bench import locomo
from memvault.cli.app import app
from memvault.errors import ValidationError
from memvault.recall import RecallOptions
from memvault.recall.options import SCORED_VECTOR_WEIGHT


def _session(n: int, turns: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(turns, start=1)]


SAMPLE: dict[str, Any] = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _session(1, [
            ("Ana", "Hey Ben! How was your week?"),
            ("Ben", "Busy, lots of work. And you?"),
            ("Ana", "I finally started cello lessons, I practise every evening."),
            ("Ben", "That's wonderful, keep it up!"),
        ]),
        "session_2_date_time": "10:04 am on 19 June, 2023",
        "session_2": [
            *_session(2, [
                ("Ben", "I just got back from a trip to Lisbon with my brother."),
                ("Ana", "Lovely! What did you eat there?"),
                ("Ben", "Grilled sardines, every single day."),
            ]),
            {"speaker": "Ana", "dia_id": "D2:4", "text": "Look at what I baked!",
             "img_url": ["https://example.invalid/cake.jpg"], "blip_caption": "a photo of a lemon cake"},
        ],
        "session_3_date_time": "7:30 pm on 2 July, 2023",
        "session_3": _session(3, [
            ("Ana", "My dog Pixel learned to fetch."),
            ("Ben", "Ha, clever dog."),
            ("Ana", "I am thinking of adopting a second dog."),
            ("Ben", "Pixel would love a friend."),
        ]),
    },
    "qa": [
        {"question": "What instrument does Ana play?", "answer": "cello", "evidence": ["D1:3"],
         "category": 4},
        {"question": "When did Ben go to Lisbon?", "answer": "June 2023", "evidence": ["D2:1"],
         "category": 2},
        {"question": "What did Ben eat in Lisbon?", "answer": "sardines",
         "evidence": ["D2:1", "D2:3"], "category": 1},
        {"question": "What did Ana bake?", "answer": "a lemon cake", "evidence": ["D2:4"],
         "category": 4},
        {"question": "What is the name of Ana's dog?", "answer": "Pixel",
         "evidence": ["D3:1; D3:2", "D9:99", "D3:1"], "category": 4},
        {"question": "Would Ana adopt?", "answer": "yes", "evidence": [], "category": 3},
        {"question": "What did Ana say?", "answer": 3, "evidence": ["D", "D:1:2"], "category": 3},
        {"question": "What did Ben learn to play?", "adversarial_answer": "cello",
         "evidence": ["D1:3"], "category": 5},
    ],
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-mini.json"
    path.write_text(json.dumps([SAMPLE, {**SAMPLE, "sample_id": "conv-copy"}]), encoding="utf-8")
    return path


def test_parse_session_date() -> None:
    assert locomo.parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert locomo.parse_session_date("12:09 am on 13 October, 2023") == datetime(
        2023, 10, 13, 0, 9, tzinfo=UTC)
    with pytest.raises(ValueError, match="session date"):
        locomo.parse_session_date("yesterday")


def test_parse_conversation_skips_bad_evidence() -> None:
    conversation = locomo.parse_conversation(SAMPLE)
    assert conversation.turns == 12
    assert [s.number for s in conversation.sessions] == [1, 2, 3]
    assert len(conversation.questions) == 6
    assert conversation.questions_without_evidence == 2
    assert conversation.skipped_evidence_ids == 4  # "D3:1; D3:2", "D9:99", "D", "D:1:2"
    dog = next(q for q in conversation.questions if "dog" in q.text)
    assert dog.evidence == ("D3:1",)
    cake = conversation.sessions[1].turns[3]
    assert cake.text == "Look at what I baked! [image: a photo of a lemon cake]"


@pytest.mark.parametrize(("spec", "expected"), [(None, [0, 1, 2]), ("0-1", [0, 1]), ("2,0", [2, 0]),
                                                ("1", [1]), ("all", [0, 1, 2])])
def test_select(spec: str | None, expected: list[int]) -> None:
    assert locomo.select(spec, 3) == expected


@pytest.mark.parametrize("spec", ["3", "1-0", "x", "-1"])
def test_select_refuses(spec: str) -> None:
    with pytest.raises(ValidationError):
        locomo.select(spec, 3)


async def test_ingest_through_the_public_api() -> None:
    memory = await Memory.open("memory://")
    try:
        await locomo.ingest(memory, locomo.parse_conversation(SAMPLE))
        page = await memory.list_threads(resource_id="conv-test")
        assert sorted(t.id for t in page.threads) == ["session-1", "session-2", "session-3"]
        messages = await memory.get_messages(thread_id="session-1", resource_id="conv-test")
        assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
        third = messages[2]
        assert third.metadata == {"name": "Ana", "dia_id": "D1:3"}
        assert third.created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert "cello" in third.text
    finally:
        await memory.close()


@pytest.mark.parametrize("store", ["sqlite", "memory"])
def test_run_result(data: Path, tmp_path: Path, store: str) -> None:
    result = locomo.run(data, conversations="0", ks=(1, 5, 10), store=store, db_dir=tmp_path)
    assert json.loads(json.dumps(result)) == result
    for key in ("recall@1", "recall@5", "recall@10", "fed_recall@5", "questions", "by_category",
                "by_conversation", "tokens", "ms_per_query", "targets", "targets_met", "config"):
        assert key in result, key
    assert result["questions"] == 6
    assert 0 <= result["recall@1"] <= result["recall@5"] <= result["recall@10"] <= 100
    assert result["by_category"]["2"]["recall@1"] == 100.0  # "Lisbon" is in its evidence turn
    assert set(result["by_category"]) == {"1", "2", "4", "5"}
    assert result["by_category"]["4"]["questions"] == 3
    assert result["by_category"]["4"]["name"] == "single-hop"
    assert list(result["by_conversation"]) == ["conv-test"]
    row = result["by_conversation"]["conv-test"]
    assert (row["turns"], row["sessions"], row["questions"]) == (12, 3, 6)
    assert result["tokens"]["mean_fed"] >= result["tokens"]["mean_hits"] > 0
    assert result["ms_per_query"]["mean"] > 0
    assert result["config"]["questions_without_evidence"] == 2
    assert result["config"]["skipped_evidence_ids"] == 4
    assert result["targets_apply"] is True
    assert list(tmp_path.glob("memvault-bench-locomo-*")) == []  # the temporary stores are gone


def test_the_obvious_question_is_found_first(data: Path) -> None:
    result = locomo.run(data, conversations="0", ks=(1,), store="memory",
                        options=RecallOptions(top_k=1))
    # the Lisbon question shares a rare word with its evidence turn
    assert result["by_category"]["2"]["recall@1"] == 100.0
    assert result["recall@1"] > 0


def test_over_postgresql_the_figures_are_sqlite_s_and_its_schemas_are_dropped(data: Path) -> None:
    """Each conversation in a fresh schema of the database, dropped afterwards. On data this
    small every match is a candidate on both stores (their own search scores differ), so
    recall's scoring from their pools ranks as on SQLite."""
    from postgres_server import postgres_url, schemas_named

    url = postgres_url("the LoCoMo benchmark over PostgreSQL")

    before = schemas_named(url, "bench_locomo")
    over = locomo.run(data, conversations="0-1", ks=(1, 5), store=url)
    assert schemas_named(url, "bench_locomo") == before
    sqlite = locomo.run(data, conversations="0-1", ks=(1, 5))
    assert over["config"]["store"] == "postgresql"  # never the URL, which may hold a password
    for k in ("recall@1", "recall@5", "recall@10", "questions"):
        assert over[k] == sqlite[k], k


def test_a_store_that_is_no_store_is_refused(data: Path) -> None:
    with pytest.raises(ValidationError, match="PostgreSQL URL"):
        locomo.run(data, conversations="0", store="mysql://localhost/db")


def test_with_an_embedder(data: Path) -> None:
    pytest.importorskip("numpy", reason="embedders need numpy")
    result = locomo.run(data, conversations="0-1", ks=(5,), embedder="hash:64", store="memory")
    assert result["config"]["embedder"] == "hash:64"
    assert result["targets_apply"] is False
    assert set(result["by_conversation"]) == {"conv-test", "conv-copy"}
    row = result["by_conversation"]["conv-test"]
    assert row["embed_s"] >= 0 and row["recall_warnings"] == 0
    assert result["questions"] == 12


def test_the_timed_call_embeds_the_question(data: Path) -> None:
    """The time per query includes embedding the question: an embedder that takes 60 ms for
    one text (a question; turns are embedded in batches) puts every timed call above 60 ms."""
    pytest.importorskip("numpy", reason="embedders need numpy")
    import time

    from memvault.embeddings.function import FunctionEmbedder

    def slow_for_one(texts: list[str]) -> list[list[float]]:
        if len(texts) == 1:
            time.sleep(0.06)
        return locomo.hash_vectors(texts, 16)

    embedder = FunctionEmbedder(slow_for_one, model="slow-for-one", dimensions=16)
    result = locomo.run(data, conversations="0", ks=(5,), embedder=embedder, store="memory")
    assert result["questions"] > 0
    assert result["ms_per_query"]["p50"] >= 60  # the sleep is inside the timed call


async def test_the_vector_path_is_the_library_s() -> None:
    pytest.importorskip("numpy", reason="embedders need numpy")
    from memvault.recall import RecallOptions

    memory = await Memory.open("memory://", embedder=locomo.embedder_spec("hash:64"))
    try:
        await locomo.ingest(memory, locomo.parse_conversation(SAMPLE))
        await memory.flush()
        result = await memory.recall(resource_id="conv-test", query="cello lessons every evening",
                                     options=RecallOptions(top_k=3))
        assert result.hits[0].message.metadata["dia_id"] == "D1:3"
        assert result.hits[0].source == "both"
    finally:
        await memory.close()


def test_unknown_embedder(data: Path) -> None:
    with pytest.raises(ValidationError, match="embedder 'nonsense/x'"):
        locomo.run(data, embedder="nonsense/x")
    with pytest.raises(ValidationError, match="hash:<dimensions>"):
        locomo.run(data, embedder="hash:x")


def test_an_embedder_s_options_come_as_a_json_object(data: Path) -> None:
    """``--embedder '{"model": ..., option: value}'`` is the dict spec ``Memory.open`` takes;
    broken JSON, or an option the embedder lacks, is refused."""
    spec = locomo.embedder_spec('{"model": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 8}')
    assert spec == {"model": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 8}
    with pytest.raises(ValidationError, match="not valid JSON"):
        locomo.run(data, embedder='{"model": ')
    with pytest.raises(ValidationError, match="unknown option 'nope'"):
        locomo.run(data, embedder='{"model": "sentence-transformers/all-MiniLM-L6-v2", "nope": 1}')


def test_parse_option() -> None:
    assert locomo.parse_option("top_k=10") == ("top_k", 10)
    assert locomo.parse_option("fusion=rrf") == ("fusion", "rrf")
    assert locomo.parse_option("min_vector_score=null") == ("min_vector_score", None)
    with pytest.raises(ValidationError, match="NAME=VALUE"):
        locomo.parse_option("nope=1")


def test_cli_json(data: Path) -> None:
    runner = CliRunner()
    outcome = runner.invoke(app, ["bench", "locomo", "--data", str(data), "--conversations", "0",
                                  "--k", "5,10", "--store", "memory", "--set", "top_k=3", "--json"])
    assert outcome.exit_code == 0, outcome.output
    result = json.loads(outcome.stdout)
    assert {"recall@5", "recall@10", "questions"} <= set(result)
    assert result["questions"] == 6
    assert result["config"]["options"]["top_k"] == 3


def test_cli_table(data: Path) -> None:
    outcome = CliRunner().invoke(app, ["bench", "locomo", "--data", str(data), "--store", "memory"])
    assert outcome.exit_code == 0, outcome.output
    assert "Evidence recall" in outcome.stdout and "conv-copy" in outcome.stdout


def test_cli_refuses_bad_options(data: Path) -> None:
    outcome = CliRunner().invoke(app, ["bench", "locomo", "--data", str(data), "--set", "top_k=0"])
    assert outcome.exit_code != 0
    outcome = CliRunner().invoke(app, ["bench", "locomo", "--data", str(data), "--conversations", "7"])
    assert outcome.exit_code != 0


# cross-validation (--cv)


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """Three conversations that differ: the second and third lose a different question each."""
    second = {**SAMPLE, "sample_id": "conv-b", "qa": SAMPLE["qa"][1:]}
    third = {**SAMPLE, "sample_id": "conv-c", "qa": SAMPLE["qa"][:3]}
    path = tmp_path / "locomo-three.json"
    path.write_text(json.dumps([SAMPLE, second, third]), encoding="utf-8")
    return path


def test_cv_folds_hold_each_conversation_out(three: Path) -> None:
    from memvault.bench import locomo_cv

    result = locomo_cv.run_cv(three, conversations="0-2", store="memory", passes=1,
                              grid={"context_window": (0, 3), "author_boost": (0.0, 0.2)})
    assert json.loads(json.dumps(result)) == result
    folds = result["folds"]
    assert [f["held_out"] for f in folds] == ["conv-test", "conv-b", "conv-c"]
    assert [f["held_out_figures"]["questions"] for f in folds] == [6, 5, 3]
    for fold in folds:
        assert fold["chosen"]["context_window"] in (0, 3) and fold["chosen"]["author_boost"] in (0.0, 0.2)
        assert fold["train"]["questions"] == 14 - fold["held_out_figures"]["questions"]
    for k in (5, 10):
        expected = sum(f["held_out_figures"][f"recall@{k}"] for f in folds) / 3
        assert result["fold_means"][f"recall@{k}"] == pytest.approx(expected, abs=0.01)
    assert result["held_out_pooled"]["questions"] == result["defaults_all"]["questions"] == 14
    assert set(result["most_often"]) == {"context_window", "author_boost"}


def test_cv_scores_as_the_benchmark_does(three: Path) -> None:
    from memvault.bench import locomo_cv

    result = locomo_cv.run_cv(three, conversations="0-2", store="memory", passes=1,
                              grid={"author_boost": (0.2,)})
    plain = locomo.run(three, conversations="0-2", ks=(5, 10), store="memory")
    for fold in result["folds"]:
        row = plain["by_conversation"][fold["held_out"]]
        assert fold["defaults_figures"]["recall@5"] == row["recall@5"]
        assert fold["defaults_figures"]["recall@10"] == row["recall@10"]
    assert result["defaults_all"]["recall@10"] == plain["recall@10"]


def test_cv_search_moves_away_from_a_bad_start(three: Path) -> None:
    from memvault.bench import locomo_cv

    # one candidate from the full-text search finds one thread's turns only: 100 does better
    result = locomo_cv.run_cv(three, conversations="0-2", store="memory", passes=1,
                              options=RecallOptions(candidates=1), grid={"candidates": (1, 100)})
    assert all(f["chosen"]["candidates"] == 100 for f in result["folds"])
    assert result["fold_means"]["recall@10"] > result["defaults_fold_means"]["recall@10"]
    assert result["most_often"]["candidates"] == {"value": 100, "folds": 3, "default": 1}


def test_cv_refuses_bad_input(three: Path) -> None:
    from memvault.bench import locomo_cv

    with pytest.raises(ValidationError, match="at least two"):
        locomo_cv.run_cv(three, conversations="1", store="memory")
    with pytest.raises(ValidationError, match="bm25_b"):
        locomo_cv.run_cv(three, conversations="0-2", store="memory", grid={"bm25_b": (2.0,)})
    with pytest.raises(ValidationError, match="passes"):
        locomo_cv.run_cv(three, store="memory", passes=0)


def test_cli_cv(three: Path) -> None:
    outcome = CliRunner().invoke(app, ["bench", "locomo", "--data", str(three), "--conversations", "0-2",
                                       "--store", "memory", "--cv", "--passes", "1", "--json"])
    assert outcome.exit_code == 0, outcome.output
    result = json.loads(outcome.stdout)
    assert result["benchmark"] == "locomo-cv" and len(result["folds"]) == 3
    outcome = CliRunner().invoke(app, ["bench", "locomo", "--data", str(three), "--conversations", "0-2",
                                       "--store", "memory", "--cv", "--passes", "1"])
    assert outcome.exit_code == 0, outcome.output
    assert "Chosen most often" in outcome.stdout and "conv-c" in outcome.stdout


def test_cv_with_an_embedder_searches_the_vector_constants_too(three: Path) -> None:
    pytest.importorskip("numpy", reason="embedders need numpy")
    from memvault.bench import locomo_cv

    result = locomo_cv.run_cv(three, conversations="0-2", store="memory", embedder="hash:32",
                              grid={"vector_weight": (0.3, 0.6)})
    assert result["config"]["embedder"] == "hash:32"
    # the start is what None means with an embedder
    assert result["config"]["start"] == {"vector_weight": SCORED_VECTOR_WEIGHT}
    assert all(f["chosen"]["vector_weight"] in (0.3, 0.6, SCORED_VECTOR_WEIGHT) for f in result["folds"])
    assert result["defaults_all"]["questions"] == 14


def test_cv_ingests_once_per_embed_context_and_scores_on_its_stores(three: Path) -> None:
    pytest.importorskip("numpy", reason="embedders need numpy")
    from memvault.bench import locomo_cv

    result = locomo_cv.run_cv(three, conversations="0-2", store="memory", embedder="hash:32",
                              grid={"embed_context": (0, 1), "vector_weight": (1.0,)})
    assert result["config"]["start"] == {"embed_context": 0, "vector_weight": SCORED_VECTOR_WEIGHT}
    assert result["config"]["conversations"] == ["conv-test", "conv-b", "conv-c"]
    assert all(f["chosen"]["embed_context"] in (0, 1) for f in result["folds"])
    one = locomo_cv.run_cv(three, conversations="0-2", store="memory", embedder="hash:32",
                           embed_context=1, grid={"embed_context": (1,)})
    assert one["config"]["start"] == {"embed_context": 1}
    plain = locomo.run(three, conversations="0-2", ks=(5, 10), store="memory", embedder="hash:32",
                       embed_context=1)
    assert plain["config"]["embed_context"] == 1
    for fold in one["folds"]:  # scored on the stores embedded with one earlier message
        row = plain["by_conversation"][fold["held_out"]]
        assert fold["defaults_figures"]["recall@5"] == row["recall@5"]
        assert fold["defaults_figures"]["recall@10"] == row["recall@10"]
    with pytest.raises(ValidationError, match="embed_context needs an embedder"):
        locomo_cv.run_cv(three, conversations="0-2", store="memory", grid={"embed_context": (0, 1)})
    with pytest.raises(ValidationError, match="embed_context"):
        locomo_cv.run_cv(three, conversations="0-2", store="memory", embedder="hash:32",
                         grid={"embed_context": (-1,)})
