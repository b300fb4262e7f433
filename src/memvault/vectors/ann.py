"""AnnIndex: approximate nearest-neighbour search for large resources, with an HNSW graph per
resource from usearch (``pip install 'memvault[ann]'``).

It is :class:`~memvault.vectors.exact.ExactIndex` plus one graph for each resource with at least
``graph_min_rows`` vectors:

- **Small resources** (most users) have no graph: search is exact, recall is 1, and a few
  thousand rows scan in well under a millisecond.
- **Large resources** get a usearch HNSW graph (cosine metric; vectors stored as bfloat16 by
  default, half of float32). A search asks the graph for ``max(oversample x top_k,
  min_fetch)`` candidates, then rescores them exactly against the float32 rows the index keeps,
  so the scores are exact cosine similarities and quantisation costs no ordering error among
  the candidates.
- **Isolation and selective filters.** One graph per resource: a resource filter costs nothing
  and can never starve the results (a single global graph filtered to one resource returns
  fewer than ``top_k`` hits once the resource is a small share of the graph). A thread filter
  inside a large resource is served exactly from the thread's rows when the thread has at most
  ``graph_min_rows`` vectors (the usual case: one conversation); a larger thread over-fetches
  from the graph in proportion to its share of the resource, keeps that thread's candidates,
  and falls back to the exact scan of the thread's rows when fewer than ``top_k`` survive or
  the over-fetch would exceed ``max_fetch``. Either way a filtered search returns ``top_k`` hits
  whenever the thread has that many.
- **Writes** add to the graph; deletes and overwrites mark graph entries removed, and the graph
  is rebuilt once removed entries exceed a quarter of the live ones (or dropped when the
  resource shrinks below half of ``graph_min_rows``). Building a graph happens inside the write
  that crosses the threshold, in a worker thread, under the index's lock.

Why usearch rather than hnswlib (measured on 100k embedding-like 384-d vectors, M=32,
efConstruction 64, efSearch 256, on this project's shared 2-core machines; see
``docs/benchmarks-recall.md``): both reach recall@10 0.998 at sub-millisecond latency (hnswlib
0.32 ms, usearch 0.45 ms p50) and build in about the same time (within the machine's noise:
6-9 s against 7-13 s). usearch stores the graph's vectors quantised (bf16: 177 MB against
305 MB for float32; this index keeps float32 rows for rescoring anyway, so a float32 copy in
the graph would be pure overhead), ships wheels (hnswlib 0.8.0, its last release, from 2023,
compiles from source on install), has type hints, supports removal, and is maintained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memvault.errors import MissingExtraError, ValidationError
from memvault.native import load_shared_cxx_runtime
from memvault.vectors import validate
from memvault.vectors.exact import INLINE_WORK, ExactIndex
from memvault.vectors.partition import Keys, Partition, Rows, similarities

if TYPE_CHECKING:
    from usearch.index import Index

Quantization = Literal["f32", "f16", "bf16", "i8"]


def _usearch_index() -> type[Index]:
    load_shared_cxx_runtime()
    try:
        from usearch.index import Index
    except ImportError:
        raise MissingExtraError("the approximate vector index (AnnIndex)", "ann", "usearch") from None
    return Index


@dataclass
class _Graph:
    index: Index
    removed: int = 0


class AnnIndex(ExactIndex):
    """Exact below ``graph_min_rows`` vectors per resource, an HNSW graph above. See the module
    docstring for the search, filter and rebuild rules.

    - ``graph_min_rows`` (10,000): a resource gets a graph once it has this many vectors.
    - ``connectivity`` (32), ``expansion_add`` (64), ``expansion_search`` (256): the HNSW
      parameters M, efConstruction and efSearch. Chosen by measurement: on unstructured random
      5k x 384 vectors M=16 reached recall@10 0.93 at efSearch 256 and M=32 0.99, for the same
      build time (efConstruction is what costs build time: M=32 with 128 took 31 s at 100k,
      against 12-13 s with 64).
      efSearch grows with the graph, ``expansion_search x (1 + 2 log10(entries / 100,000))``
      above 100,000 entries (768 at 1M): at 1M embedding-like vectors recall@10 was 0.92 at
      256, 0.94-0.97 at 512 (from one graph build to the next) and 0.97 at 768 (2.8 ms p50).
    - ``quantization`` (``"bf16"``): how the graph stores vectors: ``"i8"`` (half the memory
      of bf16), ``"f16"`` or ``"f32"`` (twice). Scores are always exact float32 rescoring, but
      the graph walks by its stored vectors; bf16 keeps 8 significant bits per component at any
      scale. Measured recall was no better than i8's beyond build-to-build noise, at the same
      build and search time.
    - ``oversample`` (4), ``min_fetch`` (40): candidates asked of the graph,
      ``max(oversample x top_k, min_fetch)``.
    - ``max_fetch`` (4,096): the largest over-fetch for a thread filter before the exact scan.
    - ``build_threads`` (0: all cores): threads usearch uses to add vectors.
    """

    def __init__(
        self,
        dimensions: int,
        *,
        graph_min_rows: int = 10_000,
        connectivity: int = 32,
        expansion_add: int = 64,
        expansion_search: int = 256,
        quantization: Quantization = "bf16",
        oversample: int = 4,
        min_fetch: int = 40,
        max_fetch: int = 4096,
        build_threads: int = 0,
        inline_work: int = INLINE_WORK,
    ) -> None:
        self._index_class = _usearch_index()
        super().__init__(dimensions, inline_work=inline_work)
        if quantization not in ("f32", "f16", "bf16", "i8"):
            raise ValidationError(f"quantization must be f32, f16, bf16 or i8, got {quantization!r}")
        for name, value in (("graph_min_rows", graph_min_rows), ("connectivity", connectivity),
                            ("expansion_add", expansion_add), ("expansion_search", expansion_search),
                            ("oversample", oversample), ("min_fetch", min_fetch),
                            ("max_fetch", max_fetch)):
            validate.check_positive(value, name)
        self.graph_min_rows = graph_min_rows
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self.quantization: Quantization = quantization
        self.oversample = oversample
        self.min_fetch = min_fetch
        self.max_fetch = max_fetch
        self.build_threads = build_threads
        self._graphs: dict[str, _Graph] = {}

    def graphs(self) -> dict[str, dict[str, Any]]:
        """Each graph's resource, live entries, removed entries and memory use in bytes."""
        with self._lock:
            return {resource_id: {"entries": len(graph.index), "removed": graph.removed,
                                  "memory_bytes": int(graph.index.memory_usage)}
                    for resource_id, graph in self._graphs.items()}

    # search

    def _search_work(self, partition: Partition, thread_id: str | None) -> int:
        if partition.keys_pinned and thread_id is None:  # a graph search: small and bounded
            return 0
        return partition.size * self.dimensions

    def _candidates(
        self,
        partition: Partition,
        resource_id: str,
        query: NDArray[np.float32],
        code: int | None,
        top_k: int,
    ) -> tuple[Rows | None, NDArray[np.float32]]:
        graph = self._graphs.get(resource_id)
        if graph is None:
            return self._exact(partition, query, code)
        want = max(self.oversample * top_k, self.min_fetch)
        if code is None:
            rows = self._ask(graph, partition, query, min(want, partition.size))
            if rows.size < min(top_k, partition.size):
                return self._exact(partition, query, None)
            return rows, similarities(partition.matrix[rows], query)
        thread_rows = partition.thread_rows(code).size
        if thread_rows <= self.graph_min_rows:
            return self._exact(partition, query, code)
        fetch = math.ceil(want * partition.size / thread_rows)
        if fetch > self.max_fetch:
            return self._exact(partition, query, code)
        rows = self._ask(graph, partition, query, min(fetch, partition.size))
        rows = rows[partition.threads[rows] == code]
        if rows.size < min(top_k, thread_rows):
            return self._exact(partition, query, code)
        return rows, similarities(partition.matrix[rows], query)

    def expansion_for(self, entries: int) -> int:
        """efSearch for a graph of this many entries (see the class docstring)."""
        growth = 1.0 + 2.0 * math.log10(entries / 100_000) if entries > 100_000 else 1.0
        return math.ceil(self.expansion_search * growth)

    def _ask(self, graph: _Graph, partition: Partition, query: NDArray[np.float32],
             count: int) -> Rows:
        expansion = self.expansion_for(partition.size)
        if graph.index.expansion_search != expansion:
            # usearch defines this setter, but its stub order makes mypy read the property as
            # read-only
            graph.index.expansion_search = expansion  # type: ignore[misc]
        keys = graph.index.search(query, count, threads=1).keys
        rows = partition.row_of_key[keys.astype(np.intp)]
        return rows[rows >= 0].astype(np.intp)

    # keeping the graphs in step

    def _written(self, resource_id: str, partition: Partition, stale: Keys, written: Rows) -> None:
        graph = self._graphs.get(resource_id)
        if graph is None:
            if partition.size >= self.graph_min_rows:
                self._build(resource_id, partition)
            return
        if stale.size:
            graph.index.remove(stale)
            graph.removed += int(stale.size)
        if self._rebuilt(resource_id, partition, graph):
            return
        graph.index.add(partition.keys[written], partition.matrix[written],
                        threads=self.build_threads)

    def _removed(self, resource_id: str, partition: Partition, keys: Keys) -> None:
        graph = self._graphs.get(resource_id)
        if graph is None:
            return
        if partition.size < self.graph_min_rows // 2:
            self._dropped(resource_id)
            partition.keys_pinned = False
            return
        graph.index.remove(keys)
        graph.removed += int(keys.size)
        self._rebuilt(resource_id, partition, graph)

    def _dropped(self, resource_id: str) -> None:
        self._graphs.pop(resource_id, None)

    def _rebuilt(self, resource_id: str, partition: Partition, graph: _Graph) -> bool:
        if graph.removed * 4 <= partition.size:
            return False
        self._build(resource_id, partition)
        return True

    def _build(self, resource_id: str, partition: Partition) -> None:
        partition.keys_pinned = False
        partition.renumber()
        partition.keys_pinned = True
        index = self._index_class(
            ndim=self.dimensions, metric="cos", dtype=self.quantization,
            connectivity=self.connectivity, expansion_add=self.expansion_add,
            expansion_search=self.expansion_search,
        )
        index.add(partition.keys[: partition.size], partition.vectors(), threads=self.build_threads)
        self._graphs[resource_id] = _Graph(index)
