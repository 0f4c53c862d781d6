"""Storage kernels tested directly against NumPy."""

import numpy as np
import pytest

from graphsys.prefetch import PREFETCH_EDGES
from graphsys.storage.ids import IdIndex
from graphsys.storage.kernels import (
    COUNT_PREFETCH_MIN_SLOTS,
    count_into,
    csr_fill,
    id_buckets,
    lookup_ints,
)


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


@pytest.mark.parametrize("ids", [
    np.unique(np.random.default_rng(1).integers(0, 1 << 25, 300_000)),  # sparse R-MAT-like
    np.unique(np.random.default_rng(2).integers(-2**40, 2**40, 50_000)),  # negative, wide
    np.concatenate([np.arange(100), 2**50 + np.arange(10_000)]),  # two far clusters
    np.array([-7], np.int64),
], ids=["sparse", "wide", "clustered", "one"])
def test_bucketed_lookup_matches_binary_search(ids):
    """The bucket index finds every present id (any query dtype) and answers -1 for absent
    ids inside and outside the range, exactly as a plain binary search."""
    rng = np.random.default_rng(3)
    present = rng.choice(ids, 20_000)
    absent = np.setdiff1d(rng.integers(ids[0] - 50, ids[-1] + 50, 5_000), ids)
    queries = np.concatenate([present, absent, [ids[0], ids[-1], ids[0] - 1, ids[-1] + 1]])
    plain = lookup_ints(ids, queries)
    np.testing.assert_array_equal(plain[:len(present)], np.searchsorted(ids, present))
    assert (plain[len(present):len(present) + len(absent)] == -1).all()
    np.testing.assert_array_equal(lookup_ints(ids, queries, id_buckets(ids)), plain)
    np.testing.assert_array_equal(IdIndex("node", ids, None).lookup(queries), plain)
    if ids[0] >= 0 and ids[-1] < 2**31:
        np.testing.assert_array_equal(
            lookup_ints(ids, present.astype(np.int32), id_buckets(ids)), plain[:len(present)])


def test_id_buckets_refuse_a_span_that_would_overflow():
    ids = np.array([-2**62, 0, 2**62], np.int64)
    assert id_buckets(ids) is None
    index = IdIndex("node", ids, None)  # a plain binary search then
    np.testing.assert_array_equal(index.lookup(np.array([2**62, 1, -2**62])), [2, -1, 0])


def test_seen_bitmap_lists_the_marked_ids():
    """Marks at word edges (0, 63, 64) and far out come back ascending, once each."""
    from graphsys.storage.kernels import mark_seen, seen_ids

    rng = np.random.default_rng(4)
    ids = np.concatenate([[0, 63, 64, 127, 128, 4095], rng.integers(0, 5000, 3000)])
    seen = np.zeros(5000 // 64 + 1, np.uint64)
    mark_seen(ids.astype(np.int32), seen)
    mark_seen(ids[:10], seen)  # marking again changes nothing
    np.testing.assert_array_equal(seen_ids(seen), np.unique(ids))
    assert seen_ids(np.zeros(3, np.uint64)).shape == (0,)
