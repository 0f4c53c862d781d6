"""Tests of the range partitioner: contiguous runs of equal node counts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from partitioners import RangePartitioner
from partitioners.range import range_sizes


@pytest.mark.parametrize("num_nodes,num_partitions",
                         [(0, 3), (1, 1), (2, 5), (10, 3), (12, 4), (1001, 7), (64, 64)])
def test_sizes_and_contiguity(make_ctx, check, num_nodes, num_partitions):
    parts = RangePartitioner(num_partitions).assign(make_ctx(num_nodes))
    check(parts, num_nodes, num_partitions)
    sizes = np.bincount(parts, minlength=num_partitions)
    assert sizes.sum() == num_nodes
    assert sizes.max() - sizes.min() <= 1
    assert np.all(np.diff(parts) >= 0)  # contiguous runs of the sorted ids
    assert np.array_equal(sizes, range_sizes(num_nodes, num_partitions))


def test_exact_layout(make_ctx):
    parts = RangePartitioner(3).assign(make_ctx(8))
    assert parts.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]


def test_p1_is_all_zeros(make_ctx):
    assert not RangePartitioner(1).assign(make_ctx(500)).any()


def test_string_ids_and_no_graph_pass(make_ctx):
    ctx = make_ctx(pa.array(["a", "b", "c", "d", "e"]), src=[0, 1], dst=[1, 2])
    assert RangePartitioner(2, seed=3).assign(ctx).tolist() == [0, 0, 0, 1, 1]
    assert ctx.calls == []


def test_params():
    assert RangePartitioner(2, seed=3).params() == {"seed": 3}
    with pytest.raises(ValueError, match="num_partitions"):
        RangePartitioner(0)
