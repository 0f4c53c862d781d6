"""Strongly connected components against networkx: the forward-backward + Tarjan fast path
and the colouring supersteps (in memory, out of core, torch), and brute force on small
random graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphsys
from graphsys import bsp

from .conftest import GRAPH_KEYS, MODES


def reference(g, directed: bool = True) -> dict:
    """{original id: smallest internal id of its component} by networkx."""
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(range(g.num_nodes()))
    for s, d, _, _ in g.iter_edges():
        G.add_edges_from(zip(s.tolist(), d.tolist()))
    comps = nx.strongly_connected_components(G) if directed else nx.connected_components(G)
    label = np.empty(g.num_nodes())
    for c in comps:
        label[list(c)] = min(c)
    return dict(zip(g.node_ids().tolist(), label.tolist()))


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_scc_matches_networkx(graphs, key, mode, backend):
    tg = graphs[key]
    res = bsp.scc(tg.graph, mode=mode, backend=backend)
    assert res.to_dict() == reference(tg.graph, directed=not tg.undirected)
    assert res.stats.converged
    fast = mode == "memory" and backend == "numba"
    undirected = {"union-find", "afforest"}
    assert res.stats.method in ((undirected if tg.undirected else {"pivot-tarjan"}) if fast
                                else {"supersteps"})
    if fast:
        assert bsp.scc(tg.graph, schedule="sync").to_dict() == res.to_dict()


EDGES = st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), min_size=1, max_size=70)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edges=EDGES, partitions=st.integers(1, 3))
def test_scc_brute_force(tmp_path_factory, edges, partitions):
    """Mutual reachability by transitive closure (Floyd-Warshall on booleans)."""
    src, dst = (np.array(x) for x in zip(*edges))
    g = graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("scc") / "g", num_nodes=25,
                            partitions=partitions)
    n = g.num_nodes()
    reach = np.eye(n, dtype=bool)
    for s, d, _, _ in g.iter_edges():
        reach[s, d] = True
    for k in range(n):
        reach |= reach[:, [k]] & reach[[k], :]
    mutual = reach & reach.T
    want = np.array([np.flatnonzero(mutual[v]).min() for v in range(n)], np.float64)
    np.testing.assert_array_equal(bsp.scc(g).values, want)
    np.testing.assert_array_equal(bsp.scc(g, schedule="sync").values, want)


@pytest.mark.parametrize("seed", range(4))
def test_scc_multistep_power_law(seed):
    """The trimming, the direction-optimizing closures (top-down, bottom-up sweeps and
    back) and Tarjan on the three parts they leave, against scipy on R-MAT graphs (a giant
    component, many small ones) and on sparse uniform ones (a pivot of small degree)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    from graphsys.bsp.kernels_components import scc_multistep
    from graphsys.generators import rmat_edges

    n = 1 << 11
    chunks = list(rmat_edges(n, 6 * n, seed=seed))
    rmat = (np.concatenate([c["src"] for c in chunks]), np.concatenate([c["dst"] for c in chunks]))
    rng = np.random.default_rng(seed)
    uniform = (rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n))
    for src, dst in (rmat, uniform):
        out = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
        out.sort_indices()
        into = out.tocsc()
        comp = np.empty(n)
        read, size = scc_multistep(out.indptr.astype(np.int64), out.indices.astype(np.int32),
                                   into.indptr.astype(np.int64), into.indices.astype(np.int32),
                                   comp)
        _, label = connected_components(out, directed=True, connection="strong")
        smallest = np.full(label.max() + 1, n)
        np.minimum.at(smallest, label, np.arange(n))
        np.testing.assert_array_equal(comp, smallest[label])
        assert read > 0 and size == np.bincount(label).max()
