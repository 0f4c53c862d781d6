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


def random_graph(graph_of, n: int, m: int, seed: int, directed: bool = False):
    """A random stored graph of ``m`` edges over ``n`` nodes and its networkx twin (the
    undirected simple view, or the directed one)."""
    src, dst = random_edges(n, m, seed)
    twin = directed_graph if directed else simple_graph
    return graph_of(src, dst, n), twin(src, dst, n)


def matched_rows(g, pattern, want: int, induced: bool = False, labels=None) -> list[tuple]:
    """Check that count, the full listing and the stream (chunks of 2) agree on ``want``
    matches, in the same order; returns the rows."""
    from graphsys import mining

    assert mining.count(g, pattern, induced=induced, labels=labels) == want, (pattern,
                                                                           induced)
    rows = [tuple(r) for r in mining.matches(g, pattern, induced=induced, labels=labels,
                                             limit=None).tolist()]
    assert len(rows) == want
    assert rows == list(mining.iter_matches(g, pattern, induced=induced, labels=labels,
                                            chunk=2))
    return rows


def labelled_graph(graph_of, n: int, m: int, seed: int, nlabels: int):
    """A random stored graph, its networkx twin, its labels ``id % nlabels`` by internal id
    and the same as ``{id: label}``."""
    src, dst = random_edges(n, m, seed)
    g, G = graph_of(src, dst, n), simple_graph(src, dst, n)
    labels = np.array([v % nlabels for v in g.node_ids()])
    return g, G, labels, {int(v): int(v) % nlabels for v in g.node_ids()}


@pytest.fixture
def graph_of(tmp_path):
    """``graph_of(src, dst, n, **options)``: a stored graph in a fresh directory."""
    counter = itertools.count()

    def make(src, dst, n, **options):
        return store(tmp_path / f"g{next(counter)}", np.asarray(src), np.asarray(dst), n,
                     **options)

    return make

