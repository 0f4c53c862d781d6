"""Anti-edges per pair against a brute force: injective maps that keep the pattern's edges
and keep its anti-edge pairs non-adjacent (and labels), divided by the automorphisms that
keep edges, anti-edges and labels; each row returned checked, each subgraph once."""

from __future__ import annotations

import itertools

import pytest

from graphsys import mining
from graphsys.errors import ParameterError
from graphsys.mining.pattern import Pattern
from tests.mining.conftest import labelled_graph, matched_rows, random_graph

CASES = [
    ([(0, 1), (1, 2)], [(0, 2)]),                           # open wedge = induced wedge
    ([(0, 1), (1, 2), (2, 3)], [(0, 3)]),                   # 4-path not closed to a cycle
    ([(0, 1), (1, 2), (2, 3), (3, 0)], [(0, 2)]),           # 4-cycle, one chord absent
    ([(0, 1), (0, 2), (0, 3)], [(1, 2)]),                   # a star, two leaves apart
    ([(0, 1), (1, 2), (2, 0), (2, 3)], [(0, 3), (1, 3)]),   # tailed triangle, induced
    ([(0, 1), (1, 2), (2, 3), (3, 4)], [(0, 4), (1, 3)]),
]


def brute(G, k, edges, anti, labels=None, node_label=None) -> int:
    labels = labels or [-1] * k

    def fits(img, e, a, lab):
        return (all(G.has_edge(img[x], img[y]) for x, y in e)
                and not any(G.has_edge(img[x], img[y]) for x, y in a)
                and all(lab[i] < 0 or node_label[img[i]] == lab[i] for i in range(k)))

    maps = sum(1 for img in itertools.permutations(G.nodes, k) if fits(img, edges, anti, labels))
    es, an = {frozenset(e) for e in edges}, {frozenset(e) for e in anti}
    auts = sum(1 for p in itertools.permutations(range(k))
               if {frozenset((p[a], p[b])) for a, b in edges} == es
               and {frozenset((p[a], p[b])) for a, b in anti} == an
               and all(labels[p[i]] == labels[i] for i in range(k)))
    assert maps % auts == 0
    return maps // auts


@pytest.mark.parametrize("seed", range(3))
def test_anti_edges_equal_brute_force(graph_of, seed):
    g, G = random_graph(graph_of, 9 + seed, 3 * (9 + seed), 40 + seed)
    for edges, anti in CASES:
        p = Pattern(edges, anti_edges=anti)
        for r in matched_rows(g, p, brute(G, p.num_nodes, edges, anti)):
            assert all(G.has_edge(r[a], r[b]) for a, b in edges)
            assert not any(G.has_edge(r[a], r[b]) for a, b in anti)
    # an anti-edge on every non-edge is induced matching
    wedge = Pattern([(0, 1), (1, 2)], anti_edges=[(0, 2)])
    assert mining.count(g, wedge) == mining.count(g, "wedge", induced=True)


def test_labelled_anti_edges(graph_of):
    g, G, labels, node_label = labelled_graph(graph_of, 11, 33, 9, 2)
    p = Pattern([(0, 1), (1, 2), (2, 3)], labels=[0, None, None, 0], anti_edges=[(0, 3)])
    assert mining.count(g, p, labels=labels) == brute(G, 4, p.edges, p.anti_edges,
                                                      list(p.labels), node_label)


def test_anti_edges_in_symmetry_and_plan():
    plain, anti = Pattern.named("4-cycle"), Pattern.named("4-cycle")
    anti = Pattern(anti.edges, anti_edges=[(0, 2)])
    assert plain.automorphisms() == 8 and anti.automorphisms() == 4
    assert plain != anti and len({plain, anti}) == 2
    assert "not adjacent to 0" in anti.explain() and "not adjacent" not in plain.explain()
    with pytest.raises(ParameterError, match="both an edge and an anti-edge"):
        Pattern([(0, 1), (1, 2)], anti_edges=[(1, 0)])
    with pytest.raises(ParameterError, match="anti-edge 0-5"):
        Pattern([(0, 1), (1, 2)], anti_edges=[(0, 5)])
    with pytest.raises(ParameterError, match="anti-edge 1-1"):
        Pattern([(0, 1), (1, 2)], anti_edges=[(1, 1)])
    with pytest.raises(ParameterError, match="pairs of node numbers"):
        Pattern([(0, 1), (1, 2)], anti_edges=[("a", 1)])
