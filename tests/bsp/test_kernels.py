"""BSP engine kernels tested directly against brute force."""

import numpy as np

from graphsys.bsp.kernels import fill_rows
from graphsys.prefetch import PREFETCH_EDGES


def test_fill_rows_scatters_each_row_in_batch_order():
    """Rows get their neighbours (offset by col_base) and weights in the batch's order, at
    their cursors, which advance; batches shorter and longer than the prefetch distance."""
    rng = np.random.default_rng(0)
    n, col_base = 50, 1000
    for m in (PREFETCH_EDGES // 2, 10 * PREFETCH_EDGES + 7):
        rows = rng.integers(0, n, m)
        cols = rng.integers(0, 900, m).astype(np.int32)
        w = rng.random(m).astype(np.float32)
        indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))]
        cursor = indptr[:-1].copy()
        indices = np.full(m, -1, np.int64)
        w_out = np.zeros(m, np.float32)
        fill_rows(rows, cols, col_base, cursor, indices, w, w_out)
        np.testing.assert_array_equal(cursor, indptr[1:])
        for r in range(n):
            mine = np.flatnonzero(rows == r)  # in batch order
            np.testing.assert_array_equal(indices[indptr[r]:indptr[r + 1]], col_base + cols[mine])
            np.testing.assert_array_equal(w_out[indptr[r]:indptr[r + 1]], w[mine])
