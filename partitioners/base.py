"""The partitioner interface: assign every node of one entity type to one of P partitions."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import numpy as np


class PartitionContext(Protocol):
    """What a partitioner may read about the nodes of one entity type.

    Nodes are numbered densely ``0..num_nodes-1`` in the order of their sorted original ids
    (``ids``). ``degrees()`` and ``adjacency()`` are computed on demand by streaming the
    input edges, so a partitioner that does not call them costs no extra pass.
    """

    num_nodes: int
    #: Sorted unique original ids: an int64 NumPy array, or a pyarrow string array.
    ids: Any
    #: Memory budget in bytes that the partitioner should stay within.
    memory_limit: int

    def degrees(self) -> np.ndarray:
        """Out-degree + in-degree of every node over all input edges, int64, shape (N,)."""

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """Undirected adjacency among nodes of this type as CSR.

        Returns ``(indptr, indices)``: int64 arrays of shapes (N+1,) and (indptr[-1],);
        each input edge (u, v) with both ends of this type appears as v in u's row and
        u in v's row. The arrays may be ``np.memmap`` views of temporary files.
        """


class Partitioner(ABC):
    """Base class of partitioning strategies; subclasses register under :attr:`name`.

    Args:
        num_partitions: P >= 1.
        seed: seed of every random choice the strategy makes (any integer; strategies use
            it modulo 2**64).
        **params: strategy-specific parameters; unknown names are errors.
    """

    name: ClassVar[str]

    def __init__(self, num_partitions: int, *, seed: int = 0, **params: Any):
        if isinstance(num_partitions, bool) or not isinstance(num_partitions, int) \
                or num_partitions < 1:
            raise ValueError(f"num_partitions must be an integer >= 1, got {num_partitions!r}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.num_partitions = num_partitions
        self.seed = int(seed)
        if params:
            raise ValueError(f"partitioner {self.name!r} has no parameter(s) "
                             f"{', '.join(sorted(params))}")

    def params(self) -> dict[str, Any]:
        """Every parameter (defaults included) as JSON-able values, recorded in the manifest."""
        return {"seed": self.seed}

    @abstractmethod
    def assign(self, ctx: PartitionContext) -> np.ndarray:
        """Return the partition of every node: int32 array of shape (ctx.num_nodes,), in [0, P)."""
