"""A tiny in-memory :class:`partitioners.base.PartitionContext` for the partitioner tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from partitioners import EdgeListContext


class MemoryContext(EdgeListContext):
    """:class:`partitioners.EdgeListContext` that records, in ``calls``, the names of the
    on-demand methods called, in order."""

    def __init__(self, ids: Any, src: np.ndarray | None = None, dst: np.ndarray | None = None,
                 memory_limit: int = 1 << 30):
        super().__init__(ids, src, dst, memory_limit)
        self.calls: list[str] = []

    def degrees(self) -> np.ndarray:
        self.calls.append("degrees")
        return super().degrees()

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        self.calls.append("adjacency")
        return super().adjacency()

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
