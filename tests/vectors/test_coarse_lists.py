"""CoarseLists, the inverted-file first stage of StoredIndex: every row is in exactly one list,
the nearest lists hold a query's nearest rows on clustered data, and the lists stay in step
with every change of the rows (adds, rewrites, removals, swap-moves, compactions)."""

from __future__ import annotations

import numpy as np

from memvault.vectors.coarse import CoarseLists
from memvault.vectors.quantized import QuantizedPartition


def _clustered(rng: np.random.Generator, count: int, dims: int = 32, centres: int = 12) -> np.ndarray:
    middle = rng.standard_normal((centres, dims))
    rows = middle[rng.integers(0, centres, count)] + 0.25 * rng.standard_normal((count, dims))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _check(lists: CoarseLists, size: int) -> None:
    """Each live row is in exactly one list, at the slot it records; nothing else is."""
    seen: list[int] = []
    for target, members in enumerate(lists.members):
        mine = members[: lists.counts[target]].tolist()
        seen.extend(mine)
        for place, row in enumerate(mine):
            assert lists.list_of[row] == target and lists.slot[row] == place
    assert sorted(seen) == list(range(size))


def _partition(vectors: np.ndarray) -> QuantizedPartition:
    partition = QuantizedPartition(vectors.shape[1])
    partition.append([f"t{i % 3}" for i in range(len(vectors))],
                     [f"m{i}" for i in range(len(vectors))], vectors)
    return partition


def test_build_puts_every_row_in_one_list_and_is_deterministic() -> None:
    vectors = _clustered(np.random.default_rng(0), 3_000)
    built = CoarseLists.build(len(vectors), lambda rows: vectors[rows].copy())
    _check(built, len(vectors))
    again = CoarseLists.build(len(vectors), lambda rows: vectors[rows].copy())
    assert np.array_equal(built.list_of, again.list_of)
    assert np.array_equal(built.centroids, again.centroids)


def test_the_nearest_lists_hold_the_nearest_rows_on_clustered_data() -> None:
    rng = np.random.default_rng(1)
    vectors = _clustered(rng, 6_000)
    lists = CoarseLists.build(len(vectors), lambda rows: vectors[rows].copy())
    assert len(lists.counts) > 10
    found = 0
    queries = _clustered(rng, 50)
    for query in queries:
        probed = lists.probe(query, 1_200)  # a fifth of the rows
        assert probed.size >= 1_200 and len(set(probed.tolist())) == probed.size
        truth = np.argsort(-(vectors @ query))[:10]
        found += len(set(truth.tolist()) & set(probed.tolist()))
    assert found / (10 * len(queries)) >= 0.99


def test_the_lists_follow_every_change_of_the_partitions_rows() -> None:
    rng = np.random.default_rng(2)
    vectors = _clustered(rng, 2_000)
    partition = _partition(vectors)
    lists = partition.build_coarse()
    assert lists is not None
    _check(lists, partition.size)
    fresh = _clustered(rng, 300)
    partition.put(["t9"] * 300, [f"n{i}" for i in range(300)], fresh)  # new rows
    partition.put(["t0"] * 50, [f"m{i}" for i in range(0, 150, 3)], fresh[:50])  # rewrites
    _check(lists, partition.size)
    assert partition.remove_messages("t1", [f"m{i}" for i in range(1, 60, 3)]) == 20  # swap-moves
    _check(lists, partition.size)
    assert partition.remove_thread("t2") > 64  # many rows at once: a compaction
    _check(lists, partition.size)
    # a rewritten row is found through its new vector's list
    row = partition._row_of[partition.thread_code["t0"]]["m3"]
    assert row in lists.probe(fresh[1], 1).tolist()
    partition.remove(np.arange(partition.size))
    _check(lists, 0)
