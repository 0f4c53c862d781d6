"""WCC against scipy.csgraph, k-core against networkx (the bucket-queue fast path and the
supersteps; self-loops ignored or refused)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.sparse import csgraph

from graphsys import bsp
from graphsys.errors import GraphsysError, ParameterError

from .conftest import GRAPH_KEYS, MODES


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
    fast = mode == "memory" and backend == "numba"
    assert res.stats.method in (("bucket-peel", "level-peel") if fast else ("supersteps",))
    if fast:
        sync = bsp.kcore(tg.graph, schedule="sync")
        np.testing.assert_array_equal(sync.values, res.values)


@pytest.mark.parametrize("undirected", [False, True])
def test_kcore_self_loops(tmp_path, undirected):
    """Self-loops count nothing (the core numbers of the graph without them, networkx's
    advice); self_loops="refuse" is networkx's rule."""
    import graphsys

    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 60, 400), rng.integers(0, 60, 400)
    src[:30] = dst[:30]  # self-loops, some repeated
    g = graphsys.from_numpy(src, dst, tmp_path / "g", undirected=undirected, dedupe=True,
                            partitions=3)
    G = nx.Graph() if undirected else nx.DiGraph()
    G.add_nodes_from(g.node_ids().tolist())
    for s, d, _, _ in g.iter_edges():
        G.add_edges_from(zip(g.to_original(s).tolist(), g.to_original(d).tolist()))
    assert nx.number_of_selfloops(G) > 0
    with pytest.raises(nx.NetworkXNotImplemented):
        nx.core_number(G)
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    ref = nx.core_number(G)
    for kw in ({}, {"schedule": "sync"}, {"mode": "out-of-core"}):
        assert bsp.kcore(g, **kw).to_dict() == {k: float(v) for k, v in ref.items()}, kw
    with pytest.raises(GraphsysError, match="self-loops, which networkx's core numbers "
                                            "refuse"):
        bsp.kcore(g, self_loops="refuse")
    with pytest.raises(ParameterError, match="^self_loops must be one of ignore, refuse"):
        bsp.kcore(g, self_loops="count")


def test_kcore_both_peelings(graphs, tmp_path):
    """The bucket queue (sparse graphs) and the level peeling (denser ones) agree with
    networkx, and with each other on one graph."""
    from graphsys.bsp.algorithms.kcore import LEVELS_MIN_DEGREE
    from graphsys.bsp.kernels_components import core_levels, core_numbers

    tg = graphs["chain"]
    res = bsp.kcore(tg.graph)
    assert res.stats.method == "bucket-peel"
    ref = nx.core_number(nx_graph(tg, directed=True))
    np.testing.assert_array_equal(res.values, [ref[v] for v in range(tg.n)])
    dense = graphs["undirected-p3"]
    assert dense.count.nnz > LEVELS_MIN_DEGREE * dense.n
    assert bsp.kcore(dense.graph).stats.method == "level-peel"
    c = dense.count.tocsr()
    deg = np.diff(c.indptr).astype(np.int32)
    a, b = np.empty(dense.n, np.int64), np.empty(dense.n, np.int64)
    core_numbers(c.indptr, c.indices, c.indptr, c.indices, False, deg.copy(), a)
    core_levels(c.indptr, c.indices, c.indptr, c.indices, False, deg.copy(), b)
    np.testing.assert_array_equal(a, b)
