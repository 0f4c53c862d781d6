"""Storage kernels tested directly against NumPy."""

import numpy as np
import pytest

from graphsys.storage.kernels import COUNT_PREFETCH_MIN_SLOTS, count_into


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
