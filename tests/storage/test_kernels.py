"""Storage kernels tested directly against NumPy."""

import numpy as np
import pytest

from graphsys.prefetch import PREFETCH_EDGES
from graphsys.storage.kernels import COUNT_PREFETCH_MIN_SLOTS, count_into, csr_fill


@pytest.mark.parametrize("slots", [7, COUNT_PREFETCH_MIN_SLOTS + 3])  # plain, prefetched
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_count_into_accumulates_a_bincount(slots, dtype):
    rng = np.random.default_rng(slots)
    counts = rng.integers(0, 5, slots).astype(np.int64)
    before = counts.copy()
    index = rng.integers(0, slots, 100_003).astype(dtype)
    index[-1] = slots - 1  # the last slot, reached only past the prefetch window's end
    count_into(index, counts)
    np.testing.assert_array_equal(counts, before + np.bincount(index, minlength=slots))
    count_into(index[:0], counts)  # no index: nothing changes
    np.testing.assert_array_equal(counts, before + np.bincount(index, minlength=slots))


def test_csr_fill_scatters_each_row_in_chunk_order():
    """Rows get their neighbours (offset by col_base), weights and stream positions in the
    chunk's order, at their cursors, which advance; chunks shorter and longer than the
    prefetch distance."""
    rng = np.random.default_rng(0)
    n, col_base, edge_base = 50, 1000, 77
    for m in (PREFETCH_EDGES // 2, 10 * PREFETCH_EDGES + 7):
        rows = rng.integers(0, n, m)
        cols = rng.integers(0, 900, m).astype(np.int32)
        w = rng.random(m).astype(np.float32)
        indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))]
        cursor = indptr[:-1].copy()
        indices = np.full(m, -1, np.int64)
        w_out, perm = np.zeros(m, np.float32), np.full(m, -1, np.int64)
        csr_fill(rows, cols, col_base, cursor, indices, w, w_out, perm, edge_base)
        np.testing.assert_array_equal(cursor, indptr[1:])
        for r in range(n):
            mine = np.flatnonzero(rows == r)  # in chunk order
            span = slice(indptr[r], indptr[r + 1])
            np.testing.assert_array_equal(indices[span], col_base + cols[mine])
            np.testing.assert_array_equal(w_out[span], w[mine])
            np.testing.assert_array_equal(perm[span], edge_base + mine)
