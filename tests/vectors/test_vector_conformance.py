"""The behaviour every :class:`memvault.vectors.VectorIndex` must have (see ``conftest.py``)."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime

import pytest

pytest.importorskip("numpy", reason="the vector indexes need numpy (the vectors extra)")

import numpy as np
from numpy.typing import NDArray

from memvault.errors import ValidationError
from memvault.vectors import VectorHit, VectorIndex, VectorItem

from .support import DIMENSIONS, IndexFactory


def unit(*components: float) -> NDArray[np.float32]:
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    vector[: len(components)] = components
    return vector


def random_vectors(count: int, seed: int = 0) -> NDArray[np.float32]:
    return np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)


def cosine(a: NDArray[np.float32], b: NDArray[np.float32]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def items(vectors: NDArray[np.float32], resource: str = "r1", threads: int = 1,
          prefix: str = "v") -> list[VectorItem]:
    return [VectorItem(f"{prefix}{i}", vector, resource, f"t{i % threads}", f"m{i}")
            for i, vector in enumerate(vectors)]


def brute_force(vectors: NDArray[np.float32], ids: list[str], query: NDArray[np.float32],
                top_k: int) -> list[str]:
    scores = [cosine(vector, query) for vector in vectors]
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order[:top_k]]


async def test_is_a_vector_index(index: VectorIndex) -> None:
    assert isinstance(index, VectorIndex)
    assert index.dimensions == DIMENSIONS
    assert await index.count() == 0
    assert await index.search(unit(1), resource_id="r1") == []


async def test_upsert_then_get_returns_normalised_items_in_the_order_asked(
    index: VectorIndex,
) -> None:
    when = datetime(2025, 1, 2, tzinfo=UTC)
    await index.upsert([
        VectorItem("a", unit(3, 4), "r1", "t1", "m-a", when),
        VectorItem("b", [0.0, 2.0] + [0.0] * (DIMENSIONS - 2), "r1", "t2"),
    ])
    got = await index.get(["b", "missing", "a"])
    assert [item.id for item in got] == ["b", "a"]
    b, a = got
    assert (a.resource_id, a.thread_id, a.message_id, a.created_at) == ("r1", "t1", "m-a", when)
    assert (b.resource_id, b.thread_id, b.message_id, b.created_at) == ("r1", "t2", None, None)
    assert isinstance(a.vector, np.ndarray) and a.vector.dtype == np.float32
    np.testing.assert_allclose(a.vector, unit(0.6, 0.8), atol=1e-6)
    np.testing.assert_allclose(b.vector, unit(0, 1), atol=1e-6)
    assert await index.count() == 2 and await index.count("r1") == 2


async def test_upsert_replaces_an_existing_id(index: VectorIndex) -> None:
    await index.upsert(items(random_vectors(20), threads=2))
    await index.upsert([VectorItem("v3", unit(0, 0, 1), "r1", "t-new", "m-new")])
    assert await index.count() == 20
    (item,) = await index.get(["v3"])
    assert (item.thread_id, item.message_id) == ("t-new", "m-new")
    hits = await index.search(unit(0, 0, 1), resource_id="r1", top_k=1)
    assert hits[0].id == "v3" and hits[0].thread_id == "t-new"
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert [h.id for h in await index.search(unit(0, 0, 1), resource_id="r1",
                                              thread_id="t1", top_k=20)].count("v3") == 0


async def test_upsert_can_move_an_id_to_another_resource(index: VectorIndex) -> None:
    await index.upsert([VectorItem("x", unit(1), "r1", "t1")])
    await index.upsert([VectorItem("x", unit(1), "r2", "t1")])
    assert (await index.count("r1"), await index.count("r2"), await index.count()) == (0, 1, 1)
    assert await index.search(unit(1), resource_id="r1") == []
    assert [h.id for h in await index.search(unit(1), resource_id="r2")] == ["x"]


async def test_the_last_item_with_an_id_in_a_batch_wins(index: VectorIndex) -> None:
    await index.upsert([VectorItem("x", unit(1), "r1", "t1"), VectorItem("x", unit(0, 1), "r1", "t2")])
    (item,) = await index.get(["x"])
    assert item.thread_id == "t2"
    np.testing.assert_allclose(item.vector, unit(0, 1), atol=1e-6)
    assert await index.count() == 1


async def test_an_empty_upsert_is_a_no_op(index: VectorIndex) -> None:
    await index.upsert([])
    assert await index.count() == 0


async def test_search_returns_the_nearest_best_first(index: VectorIndex,
                                                     factory: IndexFactory) -> None:
    vectors = random_vectors(200, seed=1)
    await index.upsert(items(vectors))
    ids = [f"v{i}" for i in range(200)]
    for q in random_vectors(10, seed=2):
        hits = await index.search(q, resource_id="r1", top_k=10)
        assert len(hits) == 10
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        for hit in hits:
            assert hit.score == pytest.approx(cosine(vectors[int(hit.id[1:])], q), abs=1e-5)
            assert (hit.resource_id, hit.thread_id, hit.message_id) == ("r1", "t0",
                                                                         f"m{hit.id[1:]}")
        expected = brute_force(vectors, ids, q, 10)
        if factory.approximate:
            assert len(set(expected) & {h.id for h in hits}) >= 9
        else:
            assert [h.id for h in hits] == expected


async def test_search_returns_fewer_when_there_are_fewer(index: VectorIndex) -> None:
    await index.upsert(items(random_vectors(3)))
    assert len(await index.search(unit(1), resource_id="r1", top_k=10)) == 3
    assert await index.search(unit(1), resource_id="nobody", top_k=10) == []


async def test_a_thread_filter_keeps_only_that_thread(index: VectorIndex) -> None:
    vectors = random_vectors(120, seed=3)
    await index.upsert(items(vectors, threads=4))
    for thread in ("t0", "t3"):
        hits = await index.search(vectors[0], resource_id="r1", thread_id=thread, top_k=10)
        assert len(hits) == 10
        assert {h.thread_id for h in hits} == {thread}
        wanted = [i for i in range(120) if f"t{i % 4}" == thread]
        best = brute_force(vectors[wanted], [f"v{i}" for i in wanted], vectors[0], 10)
        assert len(set(best) & {h.id for h in hits}) >= 9
    assert await index.search(vectors[0], resource_id="r1", thread_id="t9") == []


async def test_a_thread_filter_with_a_dominant_thread(index: VectorIndex) -> None:
    """One thread holding most rows (the exact index scores all rows and masks the others)."""
    vectors = random_vectors(100, seed=4)
    await index.upsert([VectorItem(f"v{i}", v, "r1", "big" if i < 90 else "small")
                        for i, v in enumerate(vectors)])
    for thread, size in (("big", 90), ("small", 10)):
        hits = await index.search(vectors[95], resource_id="r1", thread_id=thread, top_k=20)
        assert len(hits) == min(20, size)
        assert {h.thread_id for h in hits} == {thread}


async def test_min_score_drops_weaker_hits(index: VectorIndex) -> None:
    await index.upsert([VectorItem("same", unit(1), "r1", "t"),
                        VectorItem("near", unit(1, 1), "r1", "t"),
                        VectorItem("orthogonal", unit(0, 1), "r1", "t"),
                        VectorItem("opposite", unit(-1), "r1", "t")])
    hits = await index.search(unit(1), resource_id="r1", min_score=0.5)
    assert [h.id for h in hits] == ["same", "near"]
    assert [h.id for h in await index.search(unit(1), resource_id="r1", min_score=-1.0)] == [
        "same", "near", "orthogonal", "opposite"]


async def test_scores_are_cosine_similarities_in_minus_one_to_one(index: VectorIndex) -> None:
    await index.upsert([VectorItem("same", unit(2, 0), "r1", "t"),
                        VectorItem("diagonal", unit(5, 5), "r1", "t"),
                        VectorItem("orthogonal", unit(0, 3), "r1", "t"),
                        VectorItem("opposite", unit(-0.5), "r1", "t")])
    hits = {h.id: h.score for h in await index.search(unit(10), resource_id="r1")}
    assert hits["same"] == pytest.approx(1.0, abs=1e-6)
    assert hits["diagonal"] == pytest.approx(math.sqrt(0.5), abs=1e-6)
    assert hits["orthogonal"] == pytest.approx(0.0, abs=1e-6)
    assert hits["opposite"] == pytest.approx(-1.0, abs=1e-6)
    assert all(-1.0 <= score <= 1.0 and isinstance(score, float) for score in hits.values())


async def test_a_resource_never_sees_another_resources_vectors(index: VectorIndex) -> None:
    vectors = random_vectors(50, seed=5)
    await index.upsert(items(vectors, resource="alice", threads=2, prefix="a"))
    await index.upsert(items(vectors, resource="bob", threads=2, prefix="b"))
    for q in vectors[:5]:
        for resource, prefix in (("alice", "a"), ("bob", "b")):
            for thread in (None, "t0", "t1"):
                hits = await index.search(q, resource_id=resource, thread_id=thread, top_k=50)
                assert hits and all(h.id.startswith(prefix) and h.resource_id == resource
                                    for h in hits)
    assert [i.id for i in await index.get(["a1", "b1"], resource_id="alice")] == ["a1"]
    assert [i.id for i in await index.get(["a1", "b1"])] == ["a1", "b1"]
    assert await index.delete(["b1", "b2"], resource_id="alice") == 0
    assert await index.count("bob") == 50
    assert await index.delete_thread("alice", "t0") == 25
    assert await index.count("bob") == 50
    assert await index.delete_resource("alice") == 25
    assert (await index.count("alice"), await index.count("bob"), await index.count()) == (0, 50, 50)
    assert await index.search(vectors[0], resource_id="alice") == []


async def test_delete_removes_and_counts_only_existing_ids(index: VectorIndex) -> None:
    vectors = random_vectors(30, seed=6)
    await index.upsert(items(vectors))
    assert await index.delete(["v1", "v2", "v2", "missing"]) == 2
    assert await index.count("r1") == 28
    assert await index.get(["v1", "v2"]) == []
    hits = await index.search(vectors[1], resource_id="r1", top_k=30)
    assert len(hits) == 28 and not {"v1", "v2"} & {h.id for h in hits}
    assert await index.delete([]) == 0


async def test_delete_thread_and_delete_resource(index: VectorIndex) -> None:
    vectors = random_vectors(60, seed=7)
    await index.upsert(items(vectors, threads=3))
    await index.upsert(items(vectors[:10], resource="r2", prefix="w"))
    assert await index.delete_thread("r1", "t1") == 20
    assert await index.delete_thread("r1", "t1") == 0
    assert await index.delete_thread("r1", "nope") == 0
    assert await index.delete_thread("nobody", "t1") == 0
    assert await index.count("r1") == 40
    assert await index.search(vectors[1], resource_id="r1", thread_id="t1") == []
    hits = await index.search(vectors[1], resource_id="r1", top_k=60)
    assert len(hits) == 40 and {h.thread_id for h in hits} == {"t0", "t2"}
    assert await index.delete_resource("r1") == 40
    assert await index.delete_resource("r1") == 0
    assert (await index.count("r1"), await index.count()) == (0, 10)
    await index.upsert(items(vectors[:5]))  # the resource can come back
    assert await index.count("r1") == 5
    assert len(await index.search(vectors[0], resource_id="r1")) == 5


async def test_clear_empties_every_resource_and_the_index_stays_usable(index: VectorIndex) -> None:
    vectors = random_vectors(30, seed=11)
    await index.upsert(items(vectors, threads=2))
    await index.upsert(items(vectors[:10], resource="r2", prefix="w"))
    assert await index.clear() == 40
    assert (await index.count(), await index.count("r1"), await index.count("r2")) == (0, 0, 0)
    assert await index.search(vectors[0], resource_id="r1") == []
    assert await index.clear() == 0
    await index.upsert(items(vectors[:3]))  # usable afterwards, same dimensions
    hits = await index.search(vectors[0], resource_id="r1", top_k=5)
    assert len(hits) == 3 and math.isclose(hits[0].score, 1.0, abs_tol=1e-5)
    assert await index.count() == 3


@pytest.mark.parametrize("size", [5, 12])
async def test_wrong_dimensions_name_both_sizes_and_write_nothing(index: VectorIndex,
                                                                  size: int) -> None:
    good = VectorItem("good", unit(1), "r1", "t")
    bad = VectorItem("bad", np.ones(size, dtype=np.float32), "r1", "t")
    with pytest.raises(ValidationError, match=rf"{size} dimensions.*has {DIMENSIONS}"):
        await index.upsert([good, bad])
    assert await index.count() == 0
    await index.upsert([good])
    with pytest.raises(ValidationError, match=rf"{size} dimensions.*has {DIMENSIONS}"):
        await index.search(np.ones(size), resource_id="r1")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
async def test_nan_and_infinite_vectors_are_refused(index: VectorIndex, value: float) -> None:
    bad = unit(1, value)
    with pytest.raises(ValidationError, match="NaN or infinite"):
        await index.upsert([VectorItem("ok", unit(1), "r1", "t"), VectorItem("x", bad, "r1", "t")])
    assert await index.count() == 0
    with pytest.raises(ValidationError, match="NaN or infinite"):
        await index.search(bad, resource_id="r1")


async def test_zero_and_malformed_vectors_are_refused(index: VectorIndex) -> None:
    with pytest.raises(ValidationError, match="all zeros"):
        await index.upsert([VectorItem("z", unit(), "r1", "t")])
    with pytest.raises(ValidationError, match="one-dimensional"):
        await index.upsert([VectorItem("m", np.ones((2, DIMENSIONS)), "r1", "t")])
    with pytest.raises(ValidationError, match="not a vector of numbers"):
        await index.upsert([VectorItem("s", ["a"] * DIMENSIONS, "r1", "t")])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="all zeros"):
        await index.search(unit(), resource_id="r1")
    assert await index.count() == 0


async def test_tiny_and_huge_components_normalise_without_overflow(index: VectorIndex) -> None:
    await index.upsert([VectorItem("tiny", unit(1e-30, 1e-30), "r1", "t"),
                        VectorItem("huge", unit(3e38, -3e38), "r1", "t")])
    hits = {h.id: h.score for h in await index.search(unit(1, 1), resource_id="r1")}
    assert hits["tiny"] == pytest.approx(1.0, abs=1e-6)
    assert hits["huge"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize(
    "item",
    [
        VectorItem("", unit(1), "r1", "t"),
        VectorItem("x", unit(1), "", "t"),
        VectorItem("x", unit(1), "r1", ""),
        VectorItem("x", unit(1), "r1", "t", ""),
        VectorItem("x", unit(1), "r1", "t", None, "yesterday"),  # type: ignore[arg-type]
        ("x", unit(1)),
    ],
    ids=["empty-id", "empty-resource", "empty-thread", "empty-message", "bad-date", "short"],
)
async def test_bad_items_are_refused(index: VectorIndex, item: VectorItem) -> None:
    with pytest.raises(ValidationError):
        await index.upsert([VectorItem("ok", unit(1), "r1", "t"), item])
    assert await index.count() == 0


async def test_bad_search_arguments_are_refused(index: VectorIndex) -> None:
    await index.upsert([VectorItem("ok", unit(1), "r1", "t")])
    for top_k in (0, -1, True):
        with pytest.raises(ValidationError, match="top_k"):
            await index.search(unit(1), resource_id="r1", top_k=top_k)
    with pytest.raises(ValidationError, match="resource_id"):
        await index.search(unit(1), resource_id="")
    with pytest.raises(ValidationError, match="ids"):
        await index.delete("ok")
    assert await index.count() == 1


async def test_plain_lists_and_float64_vectors_are_accepted(index: VectorIndex) -> None:
    await index.upsert([VectorItem("list", [1.0] + [0.0] * (DIMENSIONS - 1), "r1", "t"),
                        VectorItem("f64", np.eye(DIMENSIONS)[1], "r1", "t"),
                        ("tuple", unit(0, 0, 1), "r1", "t")])  # type: ignore[list-item]
    hits = await index.search([0.0, 1.0] + [0.0] * (DIMENSIONS - 2), resource_id="r1", top_k=1)
    assert hits == [VectorHit("f64", pytest.approx(1.0), "r1", "t", None)]  # type: ignore[arg-type]
    assert await index.count() == 3


async def test_concurrent_writes_and_searches_stay_consistent(index: VectorIndex) -> None:
    vectors = random_vectors(400, seed=8)

    async def write(start: int) -> None:
        await index.upsert(items(vectors[start : start + 50], prefix=f"w{start}-"))

    async def read() -> list[VectorHit]:
        return await index.search(vectors[0], resource_id="r1", top_k=5)

    results = await asyncio.gather(*(write(s) for s in range(0, 400, 50)), *(read() for _ in range(8)))
    assert await index.count("r1") == 400
    for hits in results[8:]:
        assert isinstance(hits, list) and len(hits) <= 5


async def test_random_operations_match_a_brute_force_model(index: VectorIndex,
                                                           factory: IndexFactory) -> None:
    """Upserts (new and existing ids, moves), deletes, thread and resource deletes in a random
    order; after each step counts, gets and searches agree with a dict of the live vectors."""
    rng = np.random.default_rng(9)
    model: dict[str, tuple[NDArray[np.float32], str, str]] = {}
    resources, threads = ["r0", "r1", "r2"], ["t0", "t1", "t2", "t3"]
    for step in range(60):
        action = rng.choice(["upsert", "upsert", "upsert", "delete", "thread", "resource"],
                            p=[0.3, 0.25, 0.2, 0.15, 0.07, 0.03])
        if action == "upsert":
            batch = []
            for _ in range(int(rng.integers(1, 120))):
                id_ = f"id{int(rng.integers(0, 300))}"
                vector = rng.standard_normal(DIMENSIONS).astype(np.float32)
                item = VectorItem(id_, vector, str(rng.choice(resources)), str(rng.choice(threads)))
                batch.append(item)
                model[id_] = (vector, item.resource_id, item.thread_id)
            await index.upsert(batch)
        elif action == "delete":
            ids = [f"id{int(i)}" for i in rng.integers(0, 300, int(rng.integers(1, 150)))]
            expected = len({i for i in ids if i in model})
            assert await index.delete(ids) == expected
            for id_ in ids:
                model.pop(id_, None)
        elif action == "thread":
            resource, thread = str(rng.choice(resources)), str(rng.choice(threads))
            gone = [k for k, (_, r, t) in model.items() if (r, t) == (resource, thread)]
            assert await index.delete_thread(resource, thread) == len(gone)
            for id_ in gone:
                del model[id_]
        else:
            resource = str(rng.choice(resources))
            gone = [k for k, (_, r, _) in model.items() if r == resource]
            assert await index.delete_resource(resource) == len(gone)
            for id_ in gone:
                del model[id_]

        assert await index.count() == len(model), step
        for resource in resources:
            live = [k for k, (_, r, _) in model.items() if r == resource]
            assert await index.count(resource) == len(live), step
            query = rng.standard_normal(DIMENSIONS).astype(np.float32)
            hits = await index.search(query, resource_id=resource, top_k=7)
            assert len(hits) == min(7, len(live)), step
            for hit in hits:
                vector, owner, thread = model[hit.id]
                assert (hit.resource_id, hit.thread_id) == (owner, thread) == (resource, thread)
                assert hit.score == pytest.approx(cosine(vector, query), abs=1e-5)
            if not factory.approximate:
                expected = brute_force(np.array([model[k][0] for k in live]), live, query, 7)
                assert [h.id for h in hits] == expected, step
        sample = list(model)[:20]
        got = await index.get(sample)
        assert [g.id for g in got] == sample
        for item in got:
            vector, owner, thread = model[item.id]
            assert (item.resource_id, item.thread_id) == (owner, thread)
            np.testing.assert_allclose(item.vector, vector / np.linalg.norm(vector), atol=1e-6)
