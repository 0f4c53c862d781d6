"""Sorting a bucket's edges (:func:`graphsys.storage.edge_runs.sorted_columns`): the radix
sort orders keys, relations and weights as numpy's stable sorts do, for any number of
local-offset bits, uint32 keys (two offsets of up to 16 bits) and uint64 ones."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys.storage.edge_runs import key_dtype, sorted_columns


def _keys(rng, bits: int, n: int) -> np.ndarray:
    src = rng.integers(0, 2**bits, n).astype(np.uint64)
    dst = rng.integers(0, 2**bits, n).astype(np.uint64)
    dst[:10] = 2**bits - 1  # the largest offsets survive the packing
    src[10:20] = 2**bits - 1
    return ((src << np.uint64(bits)) | dst).astype(key_dtype(bits))  # as the routing packs


@pytest.mark.parametrize("bits", [1, 9, 16, 17, 21, 31])
def test_radix_sort_matches_numpy(bits):
    rng = np.random.default_rng(bits)
    key = _keys(rng, bits, 50_000)
    got = sorted_columns(key.copy(), None, None, dedupe=True, local_bits=bits)["key"]
    assert got.dtype == (np.uint32 if bits <= 16 else np.uint64)
    np.testing.assert_array_equal(got, np.unique(key))
    merged = sorted_columns(key.copy(), None, None, dedupe=False, sorted_runs=True)["key"]
    np.testing.assert_array_equal(merged, np.sort(key))


@pytest.mark.parametrize("bits", [3, 15, 21])
@pytest.mark.parametrize("with_rel", [False, True])
def test_radix_sort_is_stable_with_payload(bits, with_rel):
    """Equal (key, rel) keep their input order: the weights, all distinct, say which row
    came first; dedupe keeps the first of each."""
    rng = np.random.default_rng(7)
    n = 40_000
    key = _keys(rng, bits, n)
    rel = rng.integers(0, 5, n).astype(np.int32) if with_rel else None
    weight = np.arange(n, dtype=np.float32)
    order = np.lexsort((rel, key)) if with_rel else np.argsort(key, kind="stable")
    for dedupe in (False, True):
        got = sorted_columns(key.copy(), None if rel is None else rel.copy(), weight.copy(),
                             dedupe=dedupe, local_bits=bits)
        want_key, want_w = key[order], weight[order]
        want_rel = rel[order] if with_rel else None
        if dedupe:
            same = want_key[1:] == want_key[:-1]
            if with_rel:
                same &= want_rel[1:] == want_rel[:-1]
            keep = np.concatenate([[True], ~same])
            want_key, want_w = want_key[keep], want_w[keep]
            want_rel = want_rel[keep] if with_rel else None
        np.testing.assert_array_equal(got["key"], want_key)
        np.testing.assert_array_equal(got["weight"], want_w)
        if with_rel:
            np.testing.assert_array_equal(got["rel"], want_rel)
