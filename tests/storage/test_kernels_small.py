"""The NumPy twins of the ingest kernels against the numba kernels, and an ingest on each
kind writing the same files."""

import json

import numpy as np
import pyarrow as pa
import pytest

import graphsys
from graphsys.interop import _common
from graphsys.storage import kernels, kernels_small
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

RNG = np.random.default_rng(7)


def test_ids_bitmap_and_lookups_match():
    ids = np.concatenate([RNG.integers(0, 5000, 3000), [0, 63, 64, 4999]])
    seen = [np.zeros(80, np.uint64), np.zeros(80, np.uint64)]
    for k, mod in enumerate((kernels, kernels_small)):
        mod.mark_seen(ids, seen[k])
        mod.mark_seen(ids[:10].astype(np.int32), seen[k])
    np.testing.assert_array_equal(seen[0], seen[1])
    got = kernels_small.seen_ids(seen[1])
    np.testing.assert_array_equal(got, kernels.seen_ids(seen[0]))
    np.testing.assert_array_equal(got, np.unique(ids))
    queries = np.array([-5, 0, 3, 64, 4999, 10**9])
    np.testing.assert_array_equal(kernels_small.lookup_ints(got, queries),
                                  kernels.lookup_ints(got, queries))
    strings = pa.array(["a", "b", "d"], pa.large_string())
    q = pa.array(["d", "c", "a"])
    np.testing.assert_array_equal(kernels_small.lookup_strings(strings, q),
                                  kernels.lookup_strings(strings, q))


def _routing_case(seed: int):
    """300 nodes in 3 partitions, 5,000 edges (the first 50 loops) with a rel, a weight and
    an edge column."""
    n, p, m = 300, 3, 5000
    rng = np.random.default_rng(seed)
    part = rng.integers(0, p, n).astype(np.int32)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:50] = dst[:50]  # loops
    rel, weight = rng.integers(0, 4, m).astype(np.int32), rng.random(m).astype(np.float32)
    return n, p, m, part, src, dst, rel, weight, rng.random(m)


@pytest.mark.parametrize("drop_loops", [False, True])
@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("key_type", [np.uint32, np.uint64])
def test_routing_and_scatter_match(drop_loops, undirected, key_type):
    n, p, m, part, src, dst, rel, weight, extra = _routing_case(3)
    outs = []
    bits = 7 if key_type is np.uint32 else 31  # local offsets below 2**7 (300 nodes / 3)
    for mod in (kernels, kernels_small):
        local, sizes = mod.local_offsets(part, p)
        codes = mod.route_codes(part, local, np.zeros(0, np.int64), np.empty(n, np.int64))
        counts = np.zeros(p * p, np.int64)
        k = mod.count_routes(src, dst, codes, codes, p, drop_loops, undirected, counts)
        loops = int((src == dst).sum())
        assert k == counts.sum() == (m - loops) * (1 + undirected) + loops * (not drop_loops)
        cursor = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        key_out, rel_out = np.empty(k, key_type), np.empty(k, np.int32)
        w_out, x_out, dest = np.empty(k, np.float32), np.empty(k), np.empty(k, np.int64)
        mod.scatter_routes(src, dst, codes, codes, p, drop_loops, undirected, cursor, key_out,
                           bits, rel, -1, rel_out, weight, w_out, dest)
        np.testing.assert_array_equal(cursor, np.cumsum(counts))
        np.testing.assert_array_equal(np.sort(dest), np.arange(k))
        mod.scatter_column(src, dst, drop_loops, undirected, dest, extra, x_out)
        srcs, dsts = np.empty(k, np.int32), np.empty(k, np.int32)
        mod.split_keys(key_out, bits, srcs, dsts)  # the routed edges' local offsets
        s, d = (src[src != dst], dst[src != dst]) if drop_loops else (src, dst)
        if undirected:
            s, d = np.concatenate([s, d[s != d]]), np.concatenate([d, s[s != d]])
        want = np.sort(local[s].astype(np.int64) << 32 | local[d])
        np.testing.assert_array_equal(np.sort(srcs.astype(np.int64) << 32 | dsts), want)
        outs.append((local, sizes, codes, k, counts, cursor, dest, key_out, rel_out, w_out,
                     x_out, srcs, dsts))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("drop_loops", [False, True])
@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("key_type", [np.uint32, np.uint64])
def test_one_pass_routing_matches_and_agrees_with_two_passes(drop_loops, undirected,
                                                              key_type):
    # the buffered (out-of-core) path's routing: the same grouped rows as the two passes
    n, p, m, part, src, dst, rel, weight, extra = _routing_case(4)
    outs = []
    bits = 7 if key_type is np.uint32 else 31
    for mod in (kernels, kernels_small):
        local, _ = mod.local_offsets(part, p)
        codes = mod.route_codes(part, local, np.zeros(0, np.int64), np.empty(n, np.int64))
        bucket, key = np.empty(2 * m, np.int32), np.empty(2 * m, key_type)
        row, counts = np.empty(2 * m, np.int64), np.zeros(p * p, np.int64)
        k = mod.route_keys(src, dst, codes, codes, p, drop_loops, undirected, bucket, key, bits,
                           row, counts)
        np.testing.assert_array_equal(counts, np.bincount(bucket[:k], minlength=p * p))
        cursor = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        key_out, rel_out = np.empty(k, key_type), np.empty(k, np.int32)
        w_out, x_out = np.empty(k, np.float32), np.empty(k)
        mod.scatter_column_rows(bucket[:k], row[:k], cursor.copy(), extra, x_out)
        mod.scatter_by_bucket(bucket[:k], key[:k], row[:k], cursor, key_out, rel, -1, rel_out,
                              weight, w_out)
        two = [np.zeros(p * p, np.int64)]
        mod.count_routes(src, dst, codes, codes, p, drop_loops, undirected, two[0])
        c2 = np.concatenate([[0], np.cumsum(two[0])[:-1]]).astype(np.int64)
        k2, r2, w2 = np.empty(k, key_type), np.empty(k, np.int32), np.empty(k, np.float32)
        mod.scatter_routes(src, dst, codes, codes, p, drop_loops, undirected, c2, k2, bits, rel,
                           -1, r2, weight, w2, np.zeros(0, np.int64))
        for a, b in ((key_out, k2), (rel_out, r2), (w_out, w2), (counts, two[0])):
            np.testing.assert_array_equal(a, b)
        outs.append((k, bucket[:k], key[:k], row[:k], key_out, rel_out, w_out, x_out))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bits,rel_bits", [(6, 0), (6, 2), (16, 0), (13, 6), (16, 2), (31, 2),
                                           (31, 0)])
@pytest.mark.parametrize("with_order", [False, True])
def test_radix_sort_matches(bits, rel_bits, with_order):
    """uint32 keys (two offsets of up to 16 bits) whose packed values fit 32 bits sort in
    place as uint32, wider packed values as uint64, uint64 keys as uint64: either way the
    keys and the permutation are the comparison sort's (stable: many repeated edges)."""
    top = 1 << bits  # each side draws from 50 values below it: many repeated edges
    key = (RNG.integers(max(top - 50, 0), top, 4000).astype(np.uint64) << np.uint64(bits)) | (
        RNG.integers(max(top - 50, 0), top, 4000).astype(np.uint64))
    key = key.astype(np.uint32 if 2 * bits <= 32 else np.uint64)
    rel = RNG.integers(0, 1 << rel_bits, 4000).astype(np.int32) if rel_bits else np.zeros(
        0, np.int32)
    got = []
    for mod in (kernels, kernels_small):
        k, order = key.copy(), np.empty(len(key) if with_order else 0, np.int64)
        mod.radix_sort_edges(k, rel, bits, rel_bits, order)
        got.append((k, order))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
    assert (np.diff(got[0][0].astype(np.float64)) >= 0).all()


@pytest.mark.parametrize("bits", [1, 16, 31])
def test_split_keys_matches(bits):
    src = RNG.integers(0, 2**bits, 1000)
    dst = RNG.integers(0, 2**bits, 1000)
    src[0], dst[1] = 2**bits - 1, 2**bits - 1
    key = ((src.astype(np.uint64) << np.uint64(bits)) | dst.astype(np.uint64)).astype(
        np.uint32 if 2 * bits <= 32 else np.uint64)
    for mod in (kernels, kernels_small):
        s, d = np.empty(1000, np.int32), np.empty(1000, np.int32)
        mod.split_keys(key, bits, s, d)
        np.testing.assert_array_equal(s, src)
        np.testing.assert_array_equal(d, dst)


def _files(path):
    return json.loads((path / "manifest.json").read_text())["files"]


@pytest.mark.parametrize("options", [
    {"partitions": 3},
    {"partitions": 4, "undirected": True, "drop_self_loops": True},
    {"partitions": 2, "dedupe": True},
])
def test_an_ingest_writes_the_same_files_on_either_kernels(tmp_path, monkeypatch, options):
    """A small in-memory ingest runs on the NumPy twins; forced onto numba (threshold 0)
    it writes byte-identical files (the manifest's digests). (Nodes 0..N-1 would be
    written directly, without the ingest's kernels: tests/interop/test_dense.py.)"""
    monkeypatch.setattr(_common, "write_dense", lambda *a, **k: False)
    rng = np.random.default_rng(1)
    m, n = 3000, 400
    src, dst = rng.integers(0, n, m) * 3, rng.integers(0, n, m) * 3  # sparse: no direct map
    weight = rng.random(m).astype(np.float32)
    feat = rng.random((n * 3, 4), dtype=np.float32)
    dirs = []
    for name, limit in (("small", kernels_small.SMALL_INGEST_EDGES), ("numba", 0)):
        monkeypatch.setattr(kernels_small, "SMALL_INGEST_EDGES", limit)
        out = tmp_path / name
        graphsys.from_numpy(src, dst, out, num_nodes=n * 3, weight=weight,
                            node_columns={"feat": feat}, **options)
        dirs.append(out)
    assert _files(dirs[0]) == _files(dirs[1])


def test_string_ids_and_relations_write_the_same_files(tmp_path, monkeypatch):
    table = pa.table({"src": ["a", "b", "c", "a", "zz"], "dst": ["b", "c", "a", "c", "a"],
                      "rel": ["x", "y", "x", "x", "y"]})
    dirs = []
    for name, limit in (("small", 1 << 20), ("numba", 0)):
        monkeypatch.setattr(kernels_small, "SMALL_INGEST_EDGES", limit)
        ingest_sources([EdgeSource(table=table, rel_col="rel")], tmp_path / name,
                       IngestOptions(partitions=2))
        dirs.append(tmp_path / name)
    assert _files(dirs[0]) == _files(dirs[1])


@pytest.mark.parametrize("ordered", [True, False])
def test_pair_positions_match_a_dictionary(ordered):
    src, dst = RNG.integers(0, 300, 5000).astype(np.int32), RNG.integers(0, 300, 5000)
    if ordered:  # a bucket's rows ascend by (src, dst)
        order = np.lexsort((dst, src))
        src, dst = src[order], dst[order]
    dst = dst.astype(np.int32)
    picked = RNG.choice(len(src), 400)
    keys = np.unique((src[picked].astype(np.int64) << 32) | dst[picked])
    keys = np.concatenate([keys, [(np.int64(301) << 32) | 5]])  # a pair no row has
    where = {int(k): p for p, k in enumerate(keys)}
    want = [where.get((int(s) << 32) | int(d), -1) for s, d in zip(src, dst)]
    for mod in (kernels, kernels_small):
        for k in (keys, keys[:0]):
            out = np.full(len(src), 7, np.int64)
            mod.pair_positions(src, dst, k, out)
            np.testing.assert_array_equal(out, want if len(k) else -1)
