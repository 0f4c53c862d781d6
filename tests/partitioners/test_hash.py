"""Tests of the hash partitioner: reference values, seeds, id-order independence, string ids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import partitioners.hash as hash_module
from partitioners import HashPartitioner, get_partitioner

MASK = (1 << 64) - 1


def ref_fmix(z: int) -> int:
    """splitmix64 finalizer on Python ints."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def ref_partition(bits: int, seed: int, num_partitions: int) -> int:
    """The documented formula: fmix(bits ^ splitmix64(seed)) mod P."""
    key = ref_fmix((seed + 0x9E3779B97F4A7C15) & MASK)
    return ref_fmix((bits & MASK) ^ key) % num_partitions


def ref_fnv1a(s: str) -> int:
    h = 0xCBF29CE484222325
    for byte in s.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


STRINGS = ["", "a", "alice", "bob", "Zoë", "東京", "x" * 100, "node:12345", "a\x00b"]


def test_known_vectors():
    # splitmix64's first output from state 0, and FNV-1a 64 of "" and "a".
    assert hash_module.seed_key(0) == 0xE220A8397B1DCDAF
    got = hash_module.fnv1a_strings(pa.array(["", "a"]))
    assert got.tolist() == [0xCBF29CE484222325, 0xAF63DC4C8601EC8C]


@pytest.mark.parametrize("num_partitions", [1, 7, 8])
@pytest.mark.parametrize("seed", [0, 12345, -1])
def test_int_ids_match_reference(make_ctx, check, num_partitions, seed):
    ids = np.array([-2**63, -5, -1, 0, 1, 2, 3, 1000, 2**40 + 3, 2**63 - 1], dtype=np.int64)
    parts = HashPartitioner(num_partitions, seed=seed).assign(make_ctx(ids))
    check(parts, len(ids), num_partitions)
    assert parts.tolist() == [ref_partition(int(i), seed, num_partitions) for i in ids]


def test_chunk_boundaries(make_ctx, monkeypatch):
    monkeypatch.setattr(hash_module, "_CHUNK", 1000)
    ids = np.arange(-2500, 2500, dtype=np.int64) * 31
    parts = HashPartitioner(5, seed=3).assign(make_ctx(ids))
    assert parts.tolist() == [ref_partition(int(i), 3, 5) for i in ids]


def test_p1_is_all_zeros(make_ctx):
    assert not HashPartitioner(1).assign(make_ctx(1000)).any()
    assert not HashPartitioner(1).assign(make_ctx(pa.array(STRINGS))).any()


def test_deterministic_and_seed_dependent(make_ctx):
    ctx = make_ctx(20_000)
    a = HashPartitioner(8, seed=1).assign(ctx)
    assert np.array_equal(a, HashPartitioner(8, seed=1).assign(ctx))
    b = HashPartitioner(8, seed=2).assign(ctx)
    # Independent hashes agree on 1/P of the ids.
    assert 0.10 < np.mean(a == b) < 0.15


def test_independent_of_node_order_and_other_ids(make_ctx):
    rng = np.random.default_rng(0)
    ids = np.unique(rng.integers(-10**12, 10**12, 5000))
    parts = HashPartitioner(6, seed=9).assign(make_ctx(ids))
    perm = rng.permutation(len(ids))
    assert np.array_equal(HashPartitioner(6, seed=9).assign(make_ctx(ids[perm])), parts[perm])
    subset = np.sort(rng.choice(len(ids), 700, replace=False))
    assert np.array_equal(HashPartitioner(6, seed=9).assign(make_ctx(ids[subset])),
                          parts[subset])


def test_narrower_int_dtypes_hash_like_int64(make_ctx):
    ids = np.array([-7, 0, 3, 99], dtype=np.int64)
    expected = HashPartitioner(5).assign(make_ctx(ids))
    for dtype in (np.int32, np.int16):
        assert np.array_equal(HashPartitioner(5).assign(make_ctx(ids.astype(dtype))), expected)


def test_balanced_on_sequential_ids(make_ctx):
    for num_partitions in (10, 16):
        counts = np.bincount(HashPartitioner(num_partitions).assign(make_ctx(100_000)),
                             minlength=num_partitions)
        mean = 100_000 / num_partitions
        # +-5 standard deviations of a multinomial count.
        assert np.abs(counts - mean).max() < 5 * np.sqrt(mean)


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
def test_string_ids_match_reference(make_ctx, check, arrow_type):
    arr = pa.array(STRINGS, type=arrow_type)
    parts = HashPartitioner(7, seed=4).assign(make_ctx(arr))
    check(parts, len(STRINGS), 7)
    assert parts.tolist() == [ref_partition(ref_fnv1a(s), 4, 7) for s in STRINGS]


def test_string_ids_sliced_chunked_and_typed_alike(make_ctx):
    names = [f"user-{i}" for i in range(3000)]
    expected = HashPartitioner(8, seed=5).assign(make_ctx(pa.array(names)))
    variants = {
        "large_string": pa.array(names, type=pa.large_string()),
        "chunked": pa.chunked_array([names[:1000], names[1000:1001], names[1001:]]),
    }
    for label, arr in variants.items():
        got = HashPartitioner(8, seed=5).assign(make_ctx(arr))
        assert np.array_equal(got, expected), label
    for arrow_type in (pa.string(), pa.large_string()):
        sliced = pa.array(["pad"] * 17 + names + ["tail"], type=arrow_type).slice(17, 3000)
        assert sliced.offset == 17
        assert np.array_equal(HashPartitioner(8, seed=5).assign(make_ctx(sliced)), expected)
    assert np.array_equal(HashPartitioner(8, seed=5).assign(make_ctx(pa.array(names[500:900]))),
                          expected[500:900])


def test_reads_no_degrees_or_adjacency(make_ctx):
    ctx = make_ctx(100, src=np.arange(99), dst=np.arange(1, 100))
    get_partitioner("hash", 4).assign(ctx)
    assert ctx.calls == []


def test_empty_and_bad_ids(make_ctx):
    assert HashPartitioner(4).assign(make_ctx(np.zeros(0, np.int64))).shape == (0,)
    assert HashPartitioner(4).assign(make_ctx(pa.array([], pa.string()))).shape == (0,)
    with pytest.raises(ValueError, match="null"):
        HashPartitioner(4).assign(make_ctx(pa.array(["a", None])))
    with pytest.raises(TypeError, match="integer or pyarrow string"):
        HashPartitioner(4).assign(make_ctx(np.array([0.5, 1.5])))
    ctx = make_ctx(np.arange(5))
    ctx.num_nodes = 6
    with pytest.raises(ValueError, match="num_nodes"):
        HashPartitioner(4).assign(ctx)


def test_params():
    assert HashPartitioner(4, seed=7).params() == {"seed": 7}
    with pytest.raises(ValueError, match="num_partitions"):
        HashPartitioner(-1)
    with pytest.raises(ValueError, match="bogus"):
        get_partitioner("hash", 4, bogus=1)
