"""WCC against scipy.csgraph, k-core against networkx, label propagation against a plain
Python implementation of the same synchronous rule."""

from __future__ import annotations

import collections

import networkx as nx
import numpy as np
import pytest
from scipy.sparse import csgraph

from graphsys import bsp

from .conftest import GRAPH_KEYS, MODES, build


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """True when labels ``a`` and ``b`` group the vertices identically."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_wcc(graphs, key, mode, backend, device):
    tg = graphs[key]
    res = bsp.wcc(tg.graph, mode=mode, backend=backend, device=device)
    ncomp, ref = csgraph.connected_components(tg.count, directed=True, connection="weak")
    assert same_partition(res.values, ref)
    assert len(np.unique(res.values)) == ncomp > 12  # isolated vertices are components
    # label = smallest global id of the component
    for lab in np.unique(res.values):
        assert lab == np.flatnonzero(res.values == lab).min()


def nx_graph(tg, directed: bool):
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(range(tg.n))
    r, c = tg.count.nonzero()
    G.add_edges_from(zip(r.tolist(), c.tolist()))
    return G


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_kcore(graphs, key, mode, backend, device):
    tg = graphs[key]
    res = bsp.kcore(tg.graph, mode=mode, backend=backend, device=device)
    ref = nx.core_number(nx_graph(tg, directed=not tg.undirected))
    np.testing.assert_array_equal(res.values, [ref[v] for v in range(tg.n)])
    assert res.values.max() >= 3


def lpa_reference(tg, max_iters: int) -> np.ndarray:
    """Synchronous LPA, dict by dict: most frequent label among neighbours (both edge
    directions unless stored undirected) and self; ties -> smallest label."""
    nbrs = collections.defaultdict(list)
    r, c = tg.count.nonzero()
    counts = tg.count.tocsr()
    for u, v in zip(r.tolist(), c.tolist()):
        k = int(counts[u, v])
        nbrs[v] += [u] * k
        if not tg.undirected:
            nbrs[u] += [v] * k
    label = list(range(tg.n))
    for _ in range(max_iters):
        new = []
        for v in range(tg.n):
            cnt = collections.Counter(label[u] for u in nbrs[v])
            cnt[label[v]] += 1
            best = max(cnt.values())
            new.append(min(lab for lab, k in cnt.items() if k == best))
        if new == label:
            break
        label = new
    return np.array(label, np.float64)


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_label_propagation(graphs, key, mode, backend, device):
    tg = graphs[key]
    res = bsp.label_propagation(tg.graph, max_iters=30, mode=mode, backend=backend,
                                device=device)
    np.testing.assert_array_equal(res.values, lpa_reference(tg, 30))


def test_label_propagation_finds_cliques(tmp_path):
    # three 6-cliques joined in a ring by single edges: three communities
    edges = [(a + 6 * k, b + 6 * k) for k in range(3) for a in range(6) for b in range(a)]
    edges += [(0, 6), (7, 12), (13, 1)]
    s, d = zip(*edges)
    tg = build(tmp_path, "cliques", s, d, num_nodes=18, partitions=2, undirected=True)
    res = bsp.label_propagation(tg.graph)
    ids = tg.graph.node_ids()
    groups = {frozenset(int(ids[v]) for v in np.flatnonzero(res.values == lab))
              for lab in np.unique(res.values)}
    assert groups == {frozenset(range(6 * k, 6 * k + 6)) for k in range(3)}
    assert res.stats.converged
