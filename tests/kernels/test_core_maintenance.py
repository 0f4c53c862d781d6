"""The order-based core maintenance kernel (:mod:`graphsys.kernels.core_maintenance`): after
random batches of deletions and insertions on small multigraphs (parallel edges, self-loops,
directed and undirected), the core numbers equal networkx's ``core_number`` of the final
graph and the order kept is a k-order of it (core numbers never fall along it, each node
has at most its core number of edges to nodes after it)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from graphsys.kernels import core_maintenance as cm
from graphsys.kernels.cores import core_levels, peel_degrees


def _csr(n, src, dst):
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst[np.argsort(src, kind="stable")].astype(np.int64)


def _peeled(n, src, dst, two):
    """Core numbers and peel ranks of the edges ``src -> dst`` (both directions stored
    when not ``two``)."""
    out = _csr(n, src, dst)
    into = _csr(n, dst, src) if two else out
    deg = np.empty(n, np.int64)
    peel_degrees(*out, into[0], two, np.empty(0, np.int64), True, deg)
    core, order = np.zeros(n), np.empty(n, np.int64)
    core_levels(*out, *into, two, deg, core, np.empty(n, np.int64), order)
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    return core.astype(np.int64), rank, out, into


def _reference(n, pairs):
    """Core numbers by brute force: remove a node of least degree (parallel edges each
    counted, self-loops never), its core number the largest least degree seen so far;
    networkx's ``core_number`` where the graph is simple."""
    deg = np.zeros(n, np.int64)
    nbrs = [[] for _ in range(n)]
    for a, b in pairs:
        if a != b:
            deg[a] += 1
            deg[b] += 1
            nbrs[a].append(b)
            nbrs[b].append(a)
    core, left, k = np.zeros(n, np.int64), set(range(n)), 0
    while left:
        v = min(left, key=lambda x: deg[x])
        k = max(k, deg[v])
        core[v] = k
        left.remove(v)
        for x in nbrs[v]:
            deg[x] -= 1
    simple = {tuple(sorted(p)) for p in pairs if p[0] != p[1]}
    if len(simple) == sum(a != b for a, b in pairs):
        g = nx.Graph(list(simple))
        g.add_nodes_from(range(n))
        assert core.tolist() == [nx.core_number(g)[v] for v in range(n)]
    return core


def _check_order(n, pairs, core, rank):
    assert sorted(rank.tolist()) == list(range(n))
    seq = np.argsort(rank)
    assert (np.diff(core[seq]) >= 0).all()
    plus = np.zeros(n, np.int64)
    for a, b in pairs:
        if a != b:
            plus[a if rank[a] < rank[b] else b] += 1
    assert (plus <= core).all(), np.flatnonzero(plus > core)


@pytest.mark.parametrize("two", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_random_batches_equal_networkx_and_keep_a_k_order(two, seed):
    rng = np.random.default_rng(seed)
    n = 40
    pairs = [tuple(int(x) for x in rng.integers(0, n, 2)) for _ in range(150)]
    pairs += [pairs[i] for i in rng.integers(0, len(pairs), 10)] + [(3, 3)]
    for _ in range(4):  # each batch starts from the last one's cores and order
        src = np.array([a for a, _ in pairs], np.int64)
        dst = np.array([b for _, b in pairs], np.int64)
        stored = (src, dst) if two else (np.concatenate([src, dst]), np.concatenate([dst, src]))
        core, rank, out, into = _peeled(n, *stored, two)
        if _ == 0:
            order_core, order_rank = core, rank
        ok, od = cm.order_lists(order_core, order_rank, int(order_core.max()) + 80, 1 << 40)
        assert ok
        gone = sorted({pairs[i] for i in rng.integers(0, len(pairs), 8)})
        copies = [p for p in pairs if p in gone]
        new = [tuple(int(x) for x in rng.integers(0, n, 2)) for _ in range(25)]
        new += [new[0], (5, 5)]
        nip, nix, isu, isv = cm.positions(n, *(np.array(c, np.int64) for c in zip(*new)))
        du, dv = (np.array(c, np.int64) for c in zip(*copies))
        dip, dix, dsu, dsv = cm.positions(n, du, dv)
        empty = np.empty(0, np.int64)
        ov = (*out, *into, (empty, empty, empty), empty, np.zeros(n, np.bool_),
              np.zeros(n, np.bool_), nip, nix, np.zeros(len(nix), np.bool_), dip, dix,
              np.zeros(len(dix), np.bool_), two)
        got = order_core.copy()
        _, done = cm.overlay_update(
            ov, n, got, od, du, dv, dsu, dsv, np.array([a for a, _ in new], np.int64),
            np.array([b for _, b in new], np.int64), isu, isv, 1 << 60)
        assert done
        pairs = [p for p in pairs if p not in gone] + new
        assert np.array_equal(got, _reference(n, pairs))
        order_core, order_rank = got, cm.order_ranks(od, n)
        _check_order(n, pairs, order_core, order_rank)
