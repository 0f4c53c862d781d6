"""A tiny in-memory :class:`partitioners.base.PartitionContext` for the partitioner tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


class MemoryContext:
    """A PartitionContext over in-memory ids and edges.

    Args:
        ids: sorted unique original ids (int64 NumPy array or pyarrow string array), or an int
            N for ids ``0..N-1``.
        src, dst: int64 arrays of shape (E,): edge endpoints as node indices in [0, N).

    ``calls`` lists the names of the on-demand methods called, in order.
    """

    def __init__(self, ids: Any, src: np.ndarray | None = None, dst: np.ndarray | None = None,
                 memory_limit: int = 1 << 30):
        self.ids = np.arange(ids, dtype=np.int64) if isinstance(ids, int) else ids
        self.num_nodes = len(self.ids)
        self.src = np.zeros(0, np.int64) if src is None else np.asarray(src, np.int64)
        self.dst = np.zeros(0, np.int64) if dst is None else np.asarray(dst, np.int64)
        self.memory_limit = memory_limit
        self.calls: list[str] = []

    def degrees(self) -> np.ndarray:
        self.calls.append("degrees")
        ends = np.concatenate([self.src, self.dst])
        return np.bincount(ends, minlength=self.num_nodes).astype(np.int64)

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        self.calls.append("adjacency")
        rows = np.concatenate([self.src, self.dst])
        cols = np.concatenate([self.dst, self.src])
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.num_nodes), out=indptr[1:])
        return indptr, cols[np.argsort(rows, kind="stable")]

    def cut_fraction(self, parts: np.ndarray) -> float:
        """Fraction of the edges whose ends lie in different partitions of ``parts``."""
        return float(np.mean(parts[self.src] != parts[self.dst]))

    def loads(self, parts: np.ndarray, num_partitions: int) -> np.ndarray:
        """Sum of node degrees per partition: int64 array of shape (P,)."""
        return np.bincount(parts, weights=self.degrees(), minlength=num_partitions) \
            .astype(np.int64)


@pytest.fixture
def make_ctx() -> type[MemoryContext]:
    """The :class:`MemoryContext` class, to build contexts in tests."""
    return MemoryContext


def check_assignment(parts: np.ndarray, num_nodes: int, num_partitions: int) -> None:
    """Assert the partitioner output contract: int32, shape (N,), values in [0, P)."""
    assert parts.dtype == np.int32
    assert parts.shape == (num_nodes,)
    if num_nodes:
        assert parts.min() >= 0 and parts.max() < num_partitions


@pytest.fixture
def check() -> Any:
    """:func:`check_assignment`."""
    return check_assignment
