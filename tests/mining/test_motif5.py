"""The 5-node motif census against a brute force over every 5-node subset of random graphs
(classes by a canonical form over all 120 orderings) and against igraph's
``motifs_randesu(size=5)``."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from graphsys import mining
from graphsys.errors import ParameterError
from graphsys.mining.motif import UNDIRECTED_5
from graphsys.mining.pattern import Pattern
from tests.mining.conftest import random_edges, simple_graph

PAIRS = list(itertools.combinations(range(5), 2))


def canonical(edges) -> int:
    """The smallest bitmask of the 10 pairs over every relabelling of 5 nodes."""
    best = None
    for perm in itertools.permutations(range(5)):
        mask = sum(1 << PAIRS.index(tuple(sorted((perm[a], perm[b])))) for a, b in edges)
        best = mask if best is None else min(best, mask)
    return best


CLASS = {canonical(Pattern.named(name).edges): name for name in UNDIRECTED_5}


def test_the_classes_are_the_21_connected_graphs():
    atlas = [G for G in nx.graph_atlas_g() if G.number_of_nodes() == 5 and nx.is_connected(G)]
    assert len(atlas) == 21 == len(CLASS) == len(UNDIRECTED_5)
    assert {canonical(G.edges) for G in atlas} == set(CLASS)


def brute_census(G: nx.Graph) -> dict[str, int]:
    out = dict.fromkeys(UNDIRECTED_5, 0)
    for nodes in itertools.combinations(G.nodes, 5):
        H = G.subgraph(nodes)
        if nx.is_connected(H):
            index = {v: i for i, v in enumerate(nodes)}
            out[CLASS[canonical([(index[a], index[b]) for a, b in H.edges])]] += 1
    return out


@pytest.mark.parametrize("n,density,seed", [(5, 2.0, 1), (7, 2.0, 2), (9, 1.5, 3),
                                            (10, 2.5, 4), (12, 2.0, 5), (12, 4.0, 6)])
def test_census_equals_brute_force(graph_of, n, density, seed):
    src, dst = random_edges(n, int(density * n), seed)
    g, G = graph_of(src, dst, n), simple_graph(src, dst, n)
    census = mining.motifs(g, 5)
    assert census.size == 5 and not census.directed
    assert census.counts == brute_census(G)


def test_census_equals_igraph(graph_of):
    ig = pytest.importorskip("igraph")
    G = nx.powerlaw_cluster_graph(60, 3, 0.5, seed=3)
    src, dst = np.array(list(G.edges)).T
    g = graph_of(src, dst, 60)
    H = ig.Graph(n=60, edges=list(G.edges))
    got = H.motifs_randesu(size=5)
    want = {name: got[ig.Graph(n=5, edges=list(Pattern.named(name).edges)).isoclass()]
            for name in UNDIRECTED_5}
    assert mining.motifs(g, 5).counts == {k: int(v) for k, v in want.items()}


def test_code_table_classes_every_graph_on_5_positions():
    """Each of the 1024 adjacency codes maps to its class, -1 exactly when disconnected."""
    from graphsys.mining.motif import PAIRS_5, five_node_classes

    table = five_node_classes()
    for code in range(1 << 10):
        G = nx.Graph([PAIRS_5[b] for b in range(10) if code >> b & 1])
        G.add_nodes_from(range(5))
        if nx.is_connected(G):
            assert UNDIRECTED_5[table[code]] == CLASS[canonical(G.edges)]
        else:
            assert table[code] == -1


@pytest.mark.parametrize("per_task", [1, 3, 8])
def test_hubs_split_across_tasks_and_threads(graph_of, monkeypatch, per_task):
    """Hubs whose ESU children are cut into several tasks, on one thread and on two."""
    from graphsys.mining import census as census_module

    monkeypatch.setattr(census_module, "CHILDREN_PER_TASK", per_task)
    rng = np.random.default_rng(per_task)
    n = 14
    src = np.concatenate([np.zeros(12, np.int64), np.ones(9, np.int64),
                          rng.integers(0, n, 20)])
    dst = np.concatenate([np.arange(2, 14), np.arange(5, 14), rng.integers(0, n, 20)])
    g, G = graph_of(src, dst, n), simple_graph(src, dst, n)
    want = brute_census(G)
    for threads in (1, 2):
        assert mining.motifs(g, 5, threads=threads).counts == want


def test_size_5_refusals(graph_of):
    g = graph_of([0, 1], [1, 2], 3)
    with pytest.raises(ParameterError, match="sampled"):
        mining.motifs(g, 5, method="sampled")
    with pytest.raises(ParameterError, match="directed"):
        mining.motifs(g, 5, directed=True)
    with pytest.raises(ParameterError, match="3, 4 or 5"):
        mining.motifs(g, 6)
