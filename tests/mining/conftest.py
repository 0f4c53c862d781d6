"""Small random graphs and brute-force references for the mining tests."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

import graphsys


def random_edges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random directed edges over ``0..n-1``: duplicates, both directions and
    self-loops included, as stored graphs have them."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m), rng.integers(0, n, m)


def store(path, src, dst, n: int, **options) -> graphsys.Graph:
    """The edges as a stored graph over nodes ``0..n-1`` (isolated ones included), in 3
    hash partitions by default, so internal ids are not the original ones."""
    options.setdefault("partitions", min(3, max(n, 1)))
    return graphsys.from_numpy(np.asarray(src, np.int64), np.asarray(dst, np.int64), path,
                               num_nodes=n, **options)


def simple_graph(src, dst, n: int) -> nx.Graph:
    """The undirected simple view: no self-loops, parallel edges once."""
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from((int(a), int(b)) for a, b in zip(src, dst) if a != b)
    return G


def directed_graph(src, dst, n: int) -> nx.DiGraph:
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((int(a), int(b)) for a, b in zip(src, dst) if a != b)
    return G


def brute_matches(G: nx.Graph, edges, k: int, induced: bool, labels=None,
                  node_label=None) -> int:
    """Injective maps of the pattern into ``G`` that keep its edges (and, induced, its
    non-edges; labels: the nodes' labels), over the pattern's automorphisms (also counted
    by brute force): the number of distinct matched subgraphs."""
    pat = {frozenset(e) for e in edges}
    nodes = list(G.nodes)
    labels = labels or [-1] * k

    def fits(image) -> bool:
        for a, b in itertools.combinations(range(k), 2):
            has = G.has_edge(image[a], image[b])
            want = frozenset((a, b)) in pat
            if want and not has or induced and has and not want:
                return False
        return all(lab < 0 or node_label[image[i]] == lab for i, lab in enumerate(labels))

    maps = sum(1 for image in itertools.permutations(nodes, k) if fits(image))
    auts = sum(1 for p in itertools.permutations(range(k))
               if {frozenset((p[a], p[b])) for a, b in pat} == pat
               and all(labels[p[i]] == labels[i] for i in range(k)))
    assert maps % auts == 0
    return maps // auts


@pytest.fixture
def graph_of(tmp_path):
    """``graph_of(src, dst, n, **options)``: a stored graph in a fresh directory."""
    counter = itertools.count()

    def make(src, dst, n, **options):
        return store(tmp_path / f"g{next(counter)}", np.asarray(src), np.asarray(dst), n,
                     **options)

    return make

