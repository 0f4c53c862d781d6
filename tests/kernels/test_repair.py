"""The WCC split search after deletions (:func:`graphsys.kernels.repair.wcc_race`) against
scipy's components of the graph after the change, on graphs with hubs (where its anchor
joins most seeds unsearched) and without."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from graphsys.kernels import repair
from graphsys.kernels.arrays import flags, read_only


def _adjacency(n, src, dst):
    """Sorted CSR and CSC (int64 offsets, int32 ids) of the directed pairs."""
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    a.sum_duplicates()
    a.sort_indices()
    t = a.T.tocsr()
    t.sort_indices()
    return (a.indptr.astype(np.int64), a.indices.astype(np.int32),
            t.indptr.astype(np.int64), t.indices.astype(np.int32))


def _partition(labels):
    """Each node's smallest fellow: equal arrays mean equal partitions."""
    _, inv = np.unique(labels, return_inverse=True)
    first = np.full(inv.max() + 1, len(labels))
    np.minimum.at(first, inv, np.arange(len(labels)))
    return first[inv]


def _case(rng, n, hubs):
    """A random directed graph: a core of sparse random pairs and a few hubs linked to many
    of its nodes, and pendant paths hanging from it (which a deletion cuts off)."""
    core = max(2, int(n * rng.uniform(0.5, 0.9)))
    m = int(rng.integers(core // 2, 3 * core))
    src, dst = [rng.integers(0, core, m)], [rng.integers(0, core, m)]
    for h in rng.choice(core, min(hubs, core), replace=False):
        k = int(rng.integers(core // 8, core // 2 + 1))
        nb = rng.choice(core, k, replace=False)
        out = rng.random(k) < 0.5
        src.append(np.where(out, h, nb))
        dst.append(np.where(out, nb, h))
    at = core
    while at < n:  # a path of 1-6 new nodes from a core node
        length = min(int(rng.integers(1, 7)), n - at)
        chain = np.concatenate([[rng.integers(0, core)], np.arange(at, at + length)])
        flip = rng.random(length) < 0.5
        src.append(np.where(flip, chain[1:], chain[:-1]))
        dst.append(np.where(flip, chain[:-1], chain[1:]))
        at += length
    src, dst = np.concatenate(src), np.concatenate(dst)
    keep = src != dst
    return src[keep], dst[keep]


@pytest.mark.parametrize("anchor", [True, False])
@pytest.mark.parametrize("hubs", [0, 1, 3, 12])
def test_split_search_matches_scipy(hubs, anchor, monkeypatch):
    monkeypatch.setattr(repair, "ANCHOR_MIN_SEEDS", 0.0 if anchor else np.inf)
    monkeypatch.setattr(repair, "ANCHOR_HUB_RATIO", 0.0)  # any node of largest degree
    rng = np.random.default_rng(100 + hubs)
    empty = np.zeros(0, np.int64)
    for _ in range(150):
        n = int(rng.integers(2, 160))
        src, dst = _case(rng, n, hubs)
        if not len(src):
            continue
        pairs = np.unique(src * n + dst)
        # delete a random share of the pairs, hubs' pairs among them
        gone = np.sort(rng.choice(pairs, int(rng.integers(1, len(pairs) + 1)) if
                                  rng.random() < 0.3 else max(1, len(pairs) // 10),
                                  replace=False))
        oip, oix, iip, iix = _adjacency(n, src, dst)
        old = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
        _, comp = connected_components(old, directed=True, connection="weak")
        comp = comp.astype(np.int64)
        u, v = gone // n, gone % n
        seeds = np.unique(np.concatenate([u, v])).astype(np.int64)
        dout, din = flags(n, gone)
        keys = read_only(gone, np.sort(gone % n * n + gone // n))
        key, work, done = repair.wcc_race(n, *read_only(oip, oix, iip, iix),
                                          (empty, empty, empty), *keys, dout, din, comp,
                                          int(comp.max()) + 1, seeds, 10**9)
        assert done
        left = np.setdiff1d(pairs, gone)
        new = sp.csr_matrix((np.ones(len(left)), (left // n, left % n)), shape=(n, n))
        _, want = connected_components(new, directed=True, connection="weak")
        assert np.array_equal(_partition(key), _partition(want)), (n, len(gone))
