"""What a partitioner sees of an ingest (:class:`partitioners.base.PartitionContext`): the
node ids of one entity type and, computed on demand from the edges the read pass spilled,
their degrees and their undirected adjacency (memory-mapped under the spill directory)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import numpy as np

from graphsys.storage import kernels
from graphsys.storage.ids import IdIndex

#: The dense edges of every spilled batch: (src, dst, lhs type, rhs type), dense node
#: indices of their types.
DenseEdges = Callable[[], Iterator[tuple[np.ndarray, np.ndarray, str, str]]]


class SpilledEdges:
    """:class:`partitioners.base.PartitionContext` over the spilled edges of one entity type
    (``etype``, its nodes ``index``): ``edges`` iterates them, ``counting`` is the module
    of ``count_into`` (:mod:`~graphsys.storage.kernels` or its NumPy twins), ``spill`` the
    directory where :meth:`adjacency` maps its indices."""

    def __init__(self, etype: str, index: IdIndex, memory_limit: int, edges: DenseEdges,
                 counting: ModuleType, spill: Path):
        self._etype = etype
        self._edges = edges
        self._counting = counting
        self._spill = spill
        self.ids = index.ids
        self.num_nodes = len(index)
        self.memory_limit = memory_limit
        self._degrees: np.ndarray | None = None

    def degrees(self) -> np.ndarray:
        if self._degrees is None:
            deg = np.zeros(self.num_nodes, np.int64)
            for src, dst, lhs, rhs in self._edges():
                if lhs == self._etype:
                    self._counting.count_into(src, deg)
                if rhs == self._etype:
                    self._counting.count_into(dst, deg)
            self._degrees = deg
        return self._degrees

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.num_nodes
        counts = np.zeros(n, np.int64)
        for src, dst, lhs, rhs in self._edges():
            if lhs == rhs == self._etype:
                self._counting.count_into(src, counts)
                self._counting.count_into(dst, counts)
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        path = self._spill / f"adjacency-{self._etype}.bin"
        total = int(indptr[-1])
        indices = (np.memmap(path, dtype=np.int64, mode="w+", shape=(total,)) if total
                   else np.zeros(0, np.int64))
        cursor = indptr[:-1].copy()
        no_w, no_perm = np.zeros(0, np.float32), np.zeros(0, np.int64)
        for src, dst, lhs, rhs in self._edges():
            if lhs == rhs == self._etype:
                kernels.csr_fill(src, dst, 0, cursor, indices, no_w, no_w, no_perm, 0)
                kernels.csr_fill(dst, src, 0, cursor, indices, no_w, no_w, no_perm, 0)
        return indptr, indices
