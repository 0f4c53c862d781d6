"""Betweenness, closeness and harmonic centrality against networkx (exact, sampled with
networkx's own sample and scaling, weighted), in memory (numba, parallel over sources) and
in supersteps (memory, out of core, torch), and brute force on small random graphs."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphsys
from graphsys import bsp
from graphsys.errors import GraphsysError, ParameterError

from .conftest import GRAPH_KEYS, MODES, nx_graph


def close(got: dict, want: dict, tol: float = 1e-9) -> bool:
    return got.keys() == want.keys() and all(abs(got[k] - want[k]) <= tol * max(1, abs(want[k]))
                                             for k in want)


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_betweenness_matches_networkx(graphs, key):
    tg = graphs[key]
    G = nx_graph(tg.graph, tg.undirected)
    for normalized in (True, False):
        for endpoints in (False, True):
            res = bsp.betweenness(tg.graph, normalized=normalized, endpoints=endpoints)
            assert res.stats.method == "brandes"
            want = nx.betweenness_centrality(G, normalized=normalized, endpoints=endpoints)
            assert close(res.to_dict(), want), (normalized, endpoints)
    res = bsp.betweenness(tg.graph, weighted=True)
    assert res.stats.weighted
    assert close(res.to_dict(), nx.betweenness_centrality(G, weight="weight"))


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_betweenness_without_the_dag_buffers(graphs, key, monkeypatch):
    """Where the DAG buffers would exceed their byte budget, the dependency pass reads
    out-edges instead: the same values as networkx."""
    from graphsys.bsp import kernels_centrality

    monkeypatch.setattr(kernels_centrality, "DAG_BYTES", 0)
    tg = graphs[key]
    G = nx_graph(tg.graph, tg.undirected)
    for endpoints in (False, True):
        res = bsp.betweenness(tg.graph, endpoints=endpoints)
        want = nx.betweenness_centrality(G, endpoints=endpoints)
        assert close(res.to_dict(), want), endpoints


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p1"])
@pytest.mark.parametrize("k,seed", [(7, 1), (40, 5)])
def test_sampled_betweenness_is_networkx_scaling(graphs, key, k, seed):
    """networkx's own sample of k sources given as ``sources``: its values, sampled and
    other nodes scaled apart (networkx 3.6)."""
    tg = graphs[key]
    G = nx_graph(tg.graph, tg.undirected)
    sample = random.Random(seed).sample(list(G.nodes()), k)
    for normalized in (True, False):
        for endpoints in (False, True):
            want = nx.betweenness_centrality(G, k=k, seed=seed, normalized=normalized,
                                             endpoints=endpoints)
            got = bsp.betweenness(tg.graph, sources=sample, normalized=normalized,
                                  endpoints=endpoints).to_dict()
            assert close(got, want), (normalized, endpoints)


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_supersteps_give_the_kernels_values(graphs, key, mode, backend):
    """The vector program (16 searches a superstep) equals the numba kernels."""
    tg = graphs[key]
    fast = bsp.betweenness(tg.graph, k=20, seed=3, endpoints=True)
    res = bsp.betweenness(tg.graph, k=20, seed=3, endpoints=True, mode=mode, backend=backend,
                          schedule="sync")
    assert res.stats.method == "supersteps" and res.stats.converged
    np.testing.assert_allclose(res.values, fast.values, rtol=1e-12, atol=1e-15)
    for func in (bsp.closeness, bsp.harmonic):
        fast = func(tg.graph, k=20, seed=3)
        res = func(tg.graph, k=20, seed=3, mode=mode, backend=backend, schedule="sync")
        np.testing.assert_allclose(res.values, fast.values, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_closeness_and_harmonic_match_networkx(graphs, key):
    tg = graphs[key]
    G = nx_graph(tg.graph, tg.undirected)
    for wf in (True, False):
        assert close(bsp.closeness(tg.graph, wf_improved=wf).to_dict(),
                     nx.closeness_centrality(G, wf_improved=wf))
        assert close(bsp.closeness(tg.graph, wf_improved=wf, weighted=True).to_dict(),
                     nx.closeness_centrality(G, distance="weight", wf_improved=wf))
    assert close(bsp.harmonic(tg.graph).to_dict(), nx.harmonic_centrality(G))
    assert close(bsp.harmonic(tg.graph, weighted=True).to_dict(),
                 nx.harmonic_centrality(G, distance="weight"))
    assert bsp.closeness(tg.graph, k=tg.n).to_dict() == bsp.closeness(tg.graph).to_dict()


def test_sampled_sources_do_not_depend_on_the_layout(tmp_path):
    # k sources were drawn among internal ids: betweenness(k=5, seed=1) of one graph gave
    # node 2 0.1429 stored in 1 partition, 0.1049 in 3 and 0.1143 in 5
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 80), rng.integers(0, 30, 80)
    runs = []
    for partitions, partitioner in ((1, "hash"), (3, "hash"), (5, "fennel")):
        g = graphsys.from_numpy(src, dst, tmp_path / f"g{partitions}", num_nodes=30,
                                partitions=partitions, partitioner=partitioner)
        runs.append([f(g, k=5, seed=1).to_dict() for f in (bsp.betweenness, bsp.closeness)])
    for run in runs[1:]:
        for got, want in zip(run, runs[0]):
            assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3"])
def test_sampled_closeness_is_the_sample_estimate(graphs, key):
    """From the distances of the k sampled sources (networkx): closeness (c / D) * (c / k_u)
    and harmonic sum(1 / d) * (N - 1) / k_u, k_u the sources other than u."""
    tg = graphs[key]
    G = nx_graph(tg.graph, tg.undirected)
    n, k = tg.n, 30
    ids = tg.graph.node_ids().tolist()
    # drawn among the nodes in original-id order
    sources = [sorted(ids)[i] for i in np.random.default_rng(11).choice(n, k, replace=False)]
    total, count, inverse = (dict.fromkeys(ids, 0.0) for _ in range(3))
    for s in sources:
        for u, d in nx.single_source_shortest_path_length(G, s).items():
            if d > 0:
                total[u] += d
                count[u] += 1
                inverse[u] += 1 / d
    others = {u: k - (u in sources) for u in ids}
    clo = {u: (count[u] / total[u]) * (count[u] / others[u]) if total[u] else 0.0
           for u in ids}
    har = {u: inverse[u] * (n - 1) / others[u] for u in ids}
    assert close(bsp.closeness(tg.graph, k=k, seed=11).to_dict(), clo)
    assert close(bsp.harmonic(tg.graph, k=k, seed=11).to_dict(), har)
    by_id = bsp.closeness(tg.graph, sources=sources).to_dict()
    assert close(by_id, clo)


def test_centrality_errors(graphs):
    g = graphs["directed-p1"].graph
    with pytest.raises(ParameterError, match="^k must be an integer from 1 to the 240 nodes"):
        bsp.betweenness(g, k=0)
    with pytest.raises(ParameterError, match="^k and sources exclude each other"):
        bsp.closeness(g, k=3, sources=[1, 2])
    with pytest.raises(ParameterError, match="^sources lists a node twice"):
        bsp.harmonic(g, sources=[1, 1])
    with pytest.raises(ParameterError, match="^normalized must be True or False"):
        bsp.betweenness(g, normalized="yes")
    with pytest.raises(GraphsysError, match="^weighted betweenness runs in memory on the CPU"):
        bsp.betweenness(g, weighted=True, schedule="sync")
    chain = graphs["chain"].graph
    with pytest.raises(ParameterError, match="^weighted is True but edge set 'default' has "
                                             "no weights"):
        bsp.closeness(chain, weighted=True)


def test_one_source_id_is_one_source(tmp_path):
    """``sources="ab"`` is the node "ab", as personalized_pagerank reads it: it was read as
    the nodes "a" and "b" (their betweenness given for the sample of "ab"), and a lone
    integer id raised TypeError."""
    G = nx.DiGraph([("a", "ab"), ("ab", "b"), ("b", "a"), ("b", "c")])
    g = graphsys.from_networkx(G, tmp_path / "g")
    for algorithm in (bsp.betweenness, bsp.closeness, bsp.harmonic):
        one = algorithm(g, sources="ab").values  # (betweenness: NaN at a lone source)
        assert np.array_equal(one, algorithm(g, sources=["ab"]).values, equal_nan=True)
        assert not np.array_equal(one, algorithm(g, sources=["a", "b"]).values,
                                  equal_nan=True)
    chain = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 3]), tmp_path / "c")
    assert bsp.harmonic(chain, sources=1).to_dict() == bsp.harmonic(chain, sources=[1]).to_dict()


def test_weights_must_be_positive(tmp_path):
    g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tmp_path / "g",
                            weight=np.array([1.0, 0.0]))
    with pytest.raises(GraphsysError, match="^closeness reads edge weights as lengths and "
                                            "needs them positive and finite; found 0.0"):
        bsp.closeness(g, weighted=True)
    assert bsp.closeness(g).stats.converged  # hops: the weights are not read


def test_weighted_betweenness_refuses_weights_a_path_sum_can_absorb(tmp_path):
    """With weights 1 and 1e-17, 1 + 1e-17 == 1 in float64, so an edge weighed as 0 and
    the path counts compared sums that only rounding made equal: node 1 of the directed
    triangle below got 0.25 where exact arithmetic gives 0 (0 -> 2 is shorter than
    0 -> 1 -> 2), and on the edges 1->3 (1), 3->2, 2->4, 4->2 (1e-17) nodes 2 and 3 got 2
    and 2 where networkx gives 3 and 1.5. Such weights are now refused; closeness and
    harmonic, which compare no sums, still run."""
    g = graphsys.from_numpy(np.array([0, 1, 0]), np.array([1, 2, 2]), tmp_path / "g",
                            weight=np.array([1.0, 1e-17, 1.0]))
    with pytest.raises(GraphsysError, match="^betweenness compares sums of edge weights"):
        bsp.betweenness(g, weighted=True)
    assert bsp.closeness(g, weighted=True).stats.converged
    fine = graphsys.from_numpy(np.array([0, 1, 0]), np.array([1, 2, 2]), tmp_path / "f",
                               weight=np.array([1.0, 1e-10, 1.0]))
    assert bsp.betweenness(fine, weighted=True).to_dict() == nx.betweenness_centrality(
        nx.DiGraph([(0, 1, {"w": 1.0}), (1, 2, {"w": float(np.float32(1e-10))}),
                    (0, 2, {"w": 1.0})]), weight="w")


EDGES = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)).filter(
    lambda e: e[0] != e[1]), min_size=1, max_size=60)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(edges=EDGES, undirected=st.booleans())
def test_small_random_graphs(tmp_path_factory, edges, undirected):
    src, dst = (np.array(x) for x in zip(*edges))
    g = graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("c") / "g", num_nodes=21,
                            dedupe=True, undirected=undirected, partitions=2)
    G = nx_graph(g, undirected)
    assert close(bsp.betweenness(g).to_dict(), nx.betweenness_centrality(G))
    assert close(bsp.closeness(g).to_dict(), nx.closeness_centrality(G))
    assert close(bsp.harmonic(g).to_dict(), nx.harmonic_centrality(G))


@pytest.mark.parametrize("undirected", [False, True])
def test_bottom_up_searches_match_networkx(tmp_path, undirected):
    """A small-world graph whose searches take bottom-up steps (a mapped CSC index, or an
    undirected edge set): the same values as networkx, and the same for 1 and 2 threads."""
    from graphsys.storage.adjacency_index import build_index

    rng = np.random.default_rng(3)
    n = 400
    src = rng.integers(0, n, 6000) % (rng.integers(1, n, 6000))  # skewed: hubs at low ids
    dst = rng.integers(0, n, 6000)
    keep = src != dst
    g = graphsys.from_numpy(src[keep], dst[keep], tmp_path / "g", num_nodes=n, dedupe=True,
                            undirected=undirected, partitions=2)
    build_index(g, ("csr", "csc"))
    g = graphsys.open_graph(tmp_path / "g")
    G = nx_graph(g, undirected)
    assert close(bsp.betweenness(g).to_dict(), nx.betweenness_centrality(G))
    sample = random.Random(2).sample(list(G.nodes()), 30)
    assert close(bsp.betweenness(g, sources=sample).to_dict(),
                 nx.betweenness_centrality(G, k=30, seed=2))
    assert close(bsp.betweenness(g, endpoints=True).to_dict(),
                 nx.betweenness_centrality(G, endpoints=True))
    assert close(bsp.closeness(g).to_dict(), nx.closeness_centrality(G))
    assert close(bsp.harmonic(g).to_dict(), nx.harmonic_centrality(G))
    one = bsp.closeness(g, k=50, threads=1).values
    assert np.array_equal(one, bsp.closeness(g, k=50, threads=2).values)


@pytest.mark.parametrize("undirected", [False, True])
def test_closeness_searches_are_the_one_bfs(tmp_path, undirected):
    """An unweighted closeness run searches each source with the one breadth-first search
    (graphsys.kernels.bfs.search, bottom-up steps over the in-edges where they are at
    hand): its edges read are that search's, source by source, and its sums its levels'."""
    import numba

    from graphsys.bsp import kernels_centrality as kc
    from graphsys.kernels import bfs
    from graphsys.storage.adjacency_index import build_index

    rng = np.random.default_rng(3)
    n = 400
    src = rng.integers(0, n, 6000) % (rng.integers(1, n, 6000))  # hubs: bottom-up steps
    dst = rng.integers(0, n, 6000)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=n, dedupe=True,
                            drop_self_loops=True, undirected=undirected)
    build_index(g, ("csr", "csc"))
    csr, csc = g.csr(), g.csc()
    sources = np.arange(0, n, 7)
    lanes = numba.get_num_threads()
    total, reached = np.zeros((lanes, n)), np.zeros((lanes, n), np.int64)
    inverse = np.zeros((lanes, n))
    read = kc.distance_sums(csr.indptr, csr.indices, csr.indptr[:0], False, sources, total,
                            reached, inverse, csc.indptr, csc.indices)
    want_read, want_total, bottom_up = 0, np.zeros(n), 0
    for s in sources:
        level, _, _, _, scanned, pulled = bfs.levels(csr.indptr, csr.indices, csc.indptr,
                                                     csc.indices, False, int(s), bfs.NO_LIMIT, 1)
        want_read += scanned.sum()
        want_total += np.maximum(level, 0)
        bottom_up += pulled.sum()
    assert bottom_up > 0  # the searches took bottom-up steps
    assert read.sum() == want_read
    np.testing.assert_array_equal(total.sum(0), want_total)


def test_stored_and_built_adjacency_share_one_kernel_signature(tmp_path):
    """The searches' kernels get read-only views: a graph with stored (mapped) CSR and CSC
    indexes and one whose adjacency is built in memory reach the same compiled signature
    (each a parallel kernel's seconds of compiling), and a weighted run compiles the
    Dijkstra kernels only."""
    from numba.core.dispatcher import Dispatcher

    from graphsys.bsp import kernels_centrality as kc
    from graphsys.storage.adjacency_index import build_index

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    built = graphsys.from_numpy(src, dst, tmp_path / "built")
    stored = graphsys.from_numpy(src, dst, tmp_path / "stored")
    build_index(stored, ("csr", "csc"))
    for g in (built, stored):
        for f in (bsp.betweenness, bsp.closeness, bsp.harmonic):
            f(g, k=5)
    # the module's own kernels (``filled``, imported from bsp.kernels, takes one signature
    # per fill value's type by design)
    kernels = {name: d for name, d in vars(kc).items()
               if isinstance(d, Dispatcher) and d.py_func.__module__ == kc.__name__}
    assert [name for name, d in kernels.items() if len(d.signatures) > 1] == []
