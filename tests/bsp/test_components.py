"""WCC against scipy.csgraph, k-core against networkx (the level-peeling fast path and the
supersteps; self-loops ignored or refused) and against its definition on random
multigraphs."""

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
    assert res.stats.method == ("level-peel" if fast else "supersteps")
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
    keep = src != dst  # without the loops: refuse reads none and peels the same degrees
    plain = graphsys.from_numpy(src[keep], dst[keep], tmp_path / "plain", undirected=undirected,
                                dedupe=True, partitions=3, num_nodes=60)
    np.testing.assert_array_equal(bsp.kcore(plain, self_loops="refuse").values,
                                  bsp.kcore(plain).values)


@pytest.mark.parametrize("undirected", [False, True])
def test_kcore_degrees_kept_per_mapped_index(tmp_path, monkeypatch, undirected):
    """The starting degrees are counted once per mapped adjacency index (every run where
    the graph has none), again after a re-index, and a graph reopened after an append
    counts its own: the core numbers stay networkx's throughout."""
    import importlib

    import pyarrow as pa

    import graphsys
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.append import append_edges
    from graphsys.storage.ingest import EdgeSource, IngestOptions

    kcore_module = importlib.import_module("graphsys.bsp.algorithms.kcore")
    counted = []
    peel = kcore_module.peel_degrees
    monkeypatch.setattr(kcore_module, "peel_degrees",
                        lambda *a: counted.append(1) or peel(*a))

    def reference(g) -> dict:
        G = nx.Graph() if undirected else nx.DiGraph()
        G.add_nodes_from(g.node_ids().tolist())
        for s, d, _, _ in g.iter_edges():
            G.add_edges_from(zip(g.to_original(s).tolist(), g.to_original(d).tolist()))
        G.remove_edges_from(list(nx.selfloop_edges(G)))
        return {k: float(v) for k, v in nx.core_number(G).items()}

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", undirected=undirected, dedupe=True,
                            partitions=2)
    ref = reference(g)
    for _ in range(2):  # no index: the adjacency is built, and counted, every run
        assert bsp.kcore(g).to_dict() == ref
    assert len(counted) == 2
    build_index(g, ("csr", "csc"))
    for _ in range(3):
        assert bsp.kcore(g).to_dict() == ref
    assert len(counted) == 3
    build_index(g, ("csr", "csc"), force=True)  # mapped anew: counted anew
    assert bsp.kcore(g).to_dict() == ref and len(counted) == 4
    a, b = np.meshgrid(np.arange(45, 60), np.arange(45, 60))  # a 15-clique, new nodes too
    keep = a < b
    append_edges(g.path, [EdgeSource(table=pa.table({"src": a[keep], "dst": b[keep]}),
                                      edge_set="day2")],
                 IngestOptions(undirected=undirected))
    grown = graphsys.open_graph(g.path)
    build_index(grown, ("csr", "csc"))
    want = reference(grown)
    assert want != ref and max(want.values()) >= 14
    for _ in range(2):
        assert bsp.kcore(grown).to_dict() == want
    assert len(counted) == 5


def brute_cores(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Core numbers by definition: the k-core is what is left once vertices of degree
    below k are removed until none is; a vertex's core number is the largest k whose k-core
    holds it (degree: the edges at a vertex, multi-edges with their multiplicity, self-loops
    not)."""
    keep = src != dst
    src, dst = src[keep], dst[keep]
    core, alive, k = np.zeros(n, np.int64), np.ones(n, bool), 1
    while alive.any():
        while True:
            m = alive[src] & alive[dst]
            deg = np.bincount(src[m], minlength=n) + np.bincount(dst[m], minlength=n)
            drop = alive & (deg < k)
            if not drop.any():
                break
            alive &= ~drop
        core[alive] = k
        k += 1
    return core


def lists(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr int64, indices int32, rows ascending) of the edges ``src -> dst``, every
    repeat kept."""
    order = np.lexsort((dst, src))
    return (np.r_[0, np.cumsum(np.bincount(src, minlength=n))].astype(np.int64),
            dst[order].astype(np.int32))


def test_core_levels_brute_force():
    """The level peeling on random multigraphs with self-loops and cliques of several sizes
    (core numbers that skip levels), directed (out- and in-lists) and stored both ways;
    the removal order it records is a degeneracy ordering (each vertex has at most its
    core number of list entries after it, self-loops aside)."""
    from graphsys.kernels.cores import core_levels, peel_degrees

    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(1, 40))
        parts = [rng.integers(0, n, (2, int(rng.integers(0, 3 * n))))]
        for _ in range(int(rng.integers(0, 3))):  # a clique
            members = rng.choice(n, int(rng.integers(1, min(n, 9) + 1)), replace=False)
            a, b = np.meshgrid(members, members)
            parts.append(np.stack([a[a < b], b[a < b]]))
        src, dst = np.concatenate(parts, axis=1)
        want = brute_cores(n, src, dst)
        for two_ways in (True, False):
            if two_ways:
                out, into = lists(n, src, dst), lists(n, dst, src)
            else:  # stored both ways: one list
                out = into = lists(n, np.r_[src, dst], np.r_[dst, src])
            deg, got = np.empty(n, np.int32), np.empty(n)
            peel_degrees(*out, into[0], two_ways, np.empty(0, np.int64), True, deg)
            order = np.empty(n, np.int32)  # the queue: the removal order
            core_levels(*out, *into, two_ways, deg, got, np.empty(n, np.int32), order)
            np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}, {two_ways}")
            assert sorted(order.tolist()) == list(range(n))
            pos = np.empty(n, np.int64)
            pos[order] = np.arange(n)
            for v in range(n):
                later = sum(int(((pos[ls[1][ls[0][v]:ls[0][v + 1]]] > pos[v])).sum())
                            for ls in ((out, into) if two_ways else (out,)))
                assert later <= want[v], (trial, two_ways, v)
