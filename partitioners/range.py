"""Range partitioning: contiguous runs of the sorted ids, equal node counts."""

from __future__ import annotations

import numpy as np

from partitioners.base import PartitionContext, Partitioner


def range_sizes(num_nodes: int, num_partitions: int) -> np.ndarray:
    """Node count of each partition: int64 array of shape (P,), summing to ``num_nodes``.

    The first ``num_nodes % P`` partitions get ``num_nodes // P + 1`` nodes, the rest
    ``num_nodes // P``, so sizes differ by at most 1.
    """
    q, r = divmod(num_nodes, num_partitions)
    sizes = np.full(num_partitions, q, dtype=np.int64)
    sizes[:r] += 1
    return sizes


class RangePartitioner(Partitioner):
    """Node i (in sorted-id order) goes to the partition whose contiguous range covers i.

    Partition p holds nodes ``[sum(sizes[:p]), sum(sizes[:p+1]))`` with sizes from
    :func:`range_sizes`: node counts differ by at most 1 and each partition is a contiguous
    range of original ids. Deterministic; the seed is unused. Reads neither degrees nor
    adjacency. Memory: the int32 output.

    Parameters
    ----------
    num_partitions : int
        ``P >= 1``.
    seed : int, default 0
        Unused (accepted like every strategy's).

    Examples
    --------
    >>> from partitioners import EdgeListContext, RangePartitioner
    >>> RangePartitioner(3).assign(EdgeListContext(8)).tolist()
    [0, 0, 0, 1, 1, 1, 2, 2]
    """

    name = "range"

    def assign(self, ctx: PartitionContext) -> np.ndarray:
        sizes = range_sizes(ctx.num_nodes, self.num_partitions)
        return np.repeat(np.arange(self.num_partitions, dtype=np.int32), sizes)
