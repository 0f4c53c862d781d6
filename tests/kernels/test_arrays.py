"""The read-only views the engines hand their kernels."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from graphsys.kernels.arrays import read_only


def test_views_are_read_only_and_share_the_data():
    a, b = np.arange(5), np.zeros(3, np.float32)
    va, vb = read_only(a, b)
    assert not va.flags.writeable and not vb.flags.writeable
    assert a.flags.writeable and b.flags.writeable  # the arrays themselves unchanged
    assert np.shares_memory(a, va) and va.dtype == a.dtype and vb.dtype == b.dtype
    with pytest.raises(ValueError):
        va[0] = 1


def test_a_kernel_compiles_one_signature_for_writable_and_read_only_arrays():
    @numba.njit
    def total(x):
        return x.sum()

    writable = np.arange(4)
    mapped = np.arange(4)
    mapped.flags.writeable = False  # as a mapped index is
    assert total(*read_only(writable)) == total(*read_only(mapped)) == 6
    assert len(total.signatures) == 1
