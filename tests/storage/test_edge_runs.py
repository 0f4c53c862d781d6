"""Sorting a bucket's edges (:func:`graphsys.storage.edge_runs.sorted_columns`): keys packed
as uint32 when local offsets fit 16 bits sort as the uint64 keys do."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys.storage.edge_runs import sorted_columns


@pytest.mark.parametrize("bits", [1, 9, 16])
def test_packed_sort_matches_the_uint64_sort(bits):
    rng = np.random.default_rng(bits)
    src = rng.integers(0, 2**bits, 50_000).astype(np.uint64)
    dst = rng.integers(0, 2**bits, 50_000).astype(np.uint64)
    dst[:10] = 2**bits - 1  # the largest offsets survive the packing
    key = (src << np.uint64(32)) | dst
    packed = sorted_columns(key, None, None, dedupe=True, local_bits=bits)["key"]
    wide = sorted_columns(key, None, None, dedupe=True, local_bits=32)["key"]
    assert packed.dtype == np.uint64
    np.testing.assert_array_equal(packed, wide)
    np.testing.assert_array_equal(wide, np.unique(key))
