"""AnnIndex beyond the shared suite: recall against the exact index, selective filters, and the
graph's life cycle (built at a size, kept in step with writes, rebuilt, dropped)."""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest.importorskip("numpy", reason="AnnIndex needs numpy and usearch (the ann extra)")
pytest.importorskip("usearch", reason="AnnIndex needs usearch (the ann extra)")

import numpy as np
from numpy.typing import NDArray

from memvault.errors import MissingExtraError, ValidationError
from memvault.vectors import AnnIndex, ExactIndex, VectorItem

DIMENSIONS = 384


def random_set(count: int, seed: int) -> NDArray[np.float32]:
    """Unstructured Gaussian vectors: the hardest case for a graph."""
    return np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)


def recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


@pytest.fixture(scope="module")
def pair() -> tuple[ExactIndex, AnnIndex, NDArray[np.float32]]:
    """The same random 5,000 x 384 set, thread ``big`` holding 30% of it, in both indexes
    (the indexes belong to no event loop: built once, used by every test's loop)."""
    vectors = random_set(5000, seed=11)
    batch = [VectorItem(f"v{i}", v, "r1", "big" if i % 10 < 3 else f"t{i % 50}")
             for i, v in enumerate(vectors)]
    exact, ann = ExactIndex(DIMENSIONS), AnnIndex(DIMENSIONS, graph_min_rows=1000)
    asyncio.run(exact.upsert(batch))
    asyncio.run(ann.upsert(batch))
    return exact, ann, vectors


async def test_recall_at_10_against_the_exact_index(
    pair: tuple[ExactIndex, AnnIndex, NDArray[np.float32]],
) -> None:
    exact, ann, _ = pair
    assert ann.graphs()["r1"]["entries"] == 5000  # the graph answers, not the exact fallback
    queries = random_set(100, seed=12)
    truth = [[h.id for h in await exact.search(q, resource_id="r1", top_k=10)] for q in queries]
    found = [[h.id for h in await ann.search(q, resource_id="r1", top_k=10)] for q in queries]
    assert all(len(f) == 10 for f in found)
    assert recall(found, truth) >= 0.95


@pytest.mark.parametrize("thread", ["big", "t7"], ids=["over-fetch", "exact-rows"])
async def test_a_selective_filter_still_returns_top_k(
    pair: tuple[ExactIndex, AnnIndex, NDArray[np.float32]], thread: str
) -> None:
    """``t7`` (2% of the resource) is scanned exactly; ``big`` (30%, above graph_min_rows)
    over-fetches from the graph and keeps its own candidates."""
    exact, ann, _ = pair
    queries = random_set(50, seed=13)
    truth, found = [], []
    for q in queries:
        truth.append([h.id for h in await exact.search(q, resource_id="r1", thread_id=thread)])
        hits = await ann.search(q, resource_id="r1", thread_id=thread)
        assert len(hits) == 10 and {h.thread_id for h in hits} == {thread}
        found.append([h.id for h in hits])
    assert recall(found, truth) >= (1.0 if thread == "t7" else 0.95)


async def test_the_scores_are_exact_cosines(
    pair: tuple[ExactIndex, AnnIndex, NDArray[np.float32]],
) -> None:
    _, ann, vectors = pair
    query = random_set(1, seed=14)[0]
    for hit in await ann.search(query, resource_id="r1", top_k=20):
        vector = vectors[int(hit.id[1:])]
        expected = float(vector @ query / (np.linalg.norm(vector) * np.linalg.norm(query)))
        assert hit.score == pytest.approx(expected, abs=1e-5)


async def test_a_small_resource_has_no_graph_and_exact_results() -> None:
    ann, exact = AnnIndex(DIMENSIONS), ExactIndex(DIMENSIONS)
    vectors = random_set(300, seed=15)
    batch = [VectorItem(f"v{i}", v, "r1", "t") for i, v in enumerate(vectors)]
    await ann.upsert(batch)
    await exact.upsert(batch)
    assert ann.graphs() == {}
    for q in random_set(10, seed=16):
        assert await ann.search(q, resource_id="r1") == await exact.search(q, resource_id="r1")


async def test_the_graph_follows_writes_rebuilds_and_drops() -> None:
    ann = AnnIndex(16, graph_min_rows=100)
    vectors = np.random.default_rng(17).standard_normal((400, 16)).astype(np.float32)
    await ann.upsert([VectorItem(f"v{i}", v, "r1", "t") for i, v in enumerate(vectors[:99])])
    assert ann.graphs() == {}
    await ann.upsert([VectorItem("v99", vectors[99], "r1", "t")])
    assert ann.graphs()["r1"] == {"entries": 100, "removed": 0,
                                  "memory_bytes": ann.graphs()["r1"]["memory_bytes"]}
    await ann.upsert([VectorItem(f"v{i}", v, "r1", "t") for i, v in enumerate(vectors[100:200], 100)])
    assert ann.graphs()["r1"]["entries"] == 200
    await ann.upsert([VectorItem(f"v{i}", vectors[i + 200], "r1", "t") for i in range(10)])  # updates
    assert (ann.graphs()["r1"]["entries"], ann.graphs()["r1"]["removed"]) == (200, 10)
    hits = await ann.search(vectors[205], resource_id="r1", top_k=1)
    assert hits[0].id == "v5" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    await ann.delete([f"v{i}" for i in range(10, 40)])
    assert (ann.graphs()["r1"]["entries"], ann.graphs()["r1"]["removed"]) == (170, 40)
    await ann.delete([f"v{i}" for i in range(40, 50)])  # 50 removed > 150 / 4: rebuilt
    assert (ann.graphs()["r1"]["entries"], ann.graphs()["r1"]["removed"]) == (160, 0)
    hits = await ann.search(vectors[205], resource_id="r1", top_k=1)
    assert hits[0].id == "v5"
    await ann.delete([f"v{i}" for i in range(50, 160)])  # 50 left: not below 100 / 2, kept
    assert ann.graphs()["r1"]["entries"] == 50
    await ann.delete(["v160"])  # 49 left < 100 / 2: dropped
    assert ann.graphs() == {}
    assert len(await ann.search(vectors[0], resource_id="r1", top_k=100)) == 49
    await ann.delete_resource("r1")
    assert await ann.count() == 0


async def test_delete_resource_drops_its_graph_only() -> None:
    ann = AnnIndex(16, graph_min_rows=20)
    vectors = np.random.default_rng(18).standard_normal((50, 16)).astype(np.float32)
    for resource in ("r1", "r2"):
        await ann.upsert([VectorItem(f"{resource}-{i}", v, resource, "t") for i, v in enumerate(vectors)])
    assert set(ann.graphs()) == {"r1", "r2"}
    await ann.delete_resource("r1")
    assert set(ann.graphs()) == {"r2"}
    hits = await ann.search(vectors[3], resource_id="r2", top_k=3)
    assert hits[0].id == "r2-3"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValidationError, match="quantization"):
        AnnIndex(8, quantization="f64")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="graph_min_rows"):
        AnnIndex(8, graph_min_rows=0)
    with pytest.raises(ValidationError, match="dimensions"):
        AnnIndex(0)


def test_a_missing_usearch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    with pytest.raises(MissingExtraError, match=r"memvault\[ann\]") as raised:
        AnnIndex(8)
    assert raised.value.extra == "ann"


def test_a_missing_numpy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import memvault.vectors

    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(MissingExtraError, match=r"memvault\[vectors\]"):
        memvault.vectors.ExactIndex  # noqa: B018
    with pytest.raises(MissingExtraError, match=r"memvault\[ann\]"):
        memvault.vectors.AnnIndex  # noqa: B018
    with pytest.raises(AttributeError):
        memvault.vectors.Nothing  # type: ignore[attr-defined]  # noqa: B018
