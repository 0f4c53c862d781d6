"""Directed patterns against a brute force on random directed graphs (reciprocal edges,
duplicates and self-loops included): injective maps that find every pattern arc as a stored
edge (induced: each matched pair's stored directions exactly the pattern's), over the
automorphisms that keep the arcs; count, listing and stream agree."""

from __future__ import annotations

import itertools

import pytest

from graphsys.mining.pattern import Pattern
from tests.mining.conftest import matched_rows, random_graph

CASES = [
    [(0, 1)], [(0, 1), (1, 0)],
    [(0, 1), (1, 2)], [(0, 1), (2, 1)], [(1, 0), (1, 2)],               # path, in-, out-star
    [(0, 1), (1, 2), (2, 0)], [(0, 1), (1, 2), (0, 2)],                 # cycle, transitive
    [(0, 1), (1, 0), (1, 2), (2, 1)],                                   # mutual wedge
    [(0, 1), (1, 2), (2, 3), (3, 0)], [(0, 1), (0, 2), (1, 3), (2, 3)],  # 4-cycles
    [(0, 1), (1, 2), (2, 0), (2, 3)],
]


def brute(D, arcs, k: int, induced: bool) -> int:
    arcset = set(arcs)

    def fits(img):
        for a, b in itertools.permutations(range(k), 2):
            has = D.has_edge(img[a], img[b])
            if (a, b) in arcset and not has:
                return False
            if induced and has and (a, b) not in arcset:
                return False
        return True

    maps = sum(1 for img in itertools.permutations(D.nodes, k) if fits(img))
    auts = sum(1 for p in itertools.permutations(range(k))
               if {(p[a], p[b]) for a, b in arcs} == arcset)
    assert maps % auts == 0
    return maps // auts


@pytest.mark.parametrize("seed", range(3))
def test_directed_patterns_equal_brute_force(graph_of, seed):
    g, D = random_graph(graph_of, 8 + seed, 4 * (8 + seed), 60 + seed, directed=True)
    for arcs in CASES:
        p = Pattern(arcs, directed=True)
        for induced in (False, True):
            rows = matched_rows(g, p, brute(D, arcs, p.num_nodes, induced), induced)
            for r in rows:
                assert all(D.has_edge(r[a], r[b]) for a, b in arcs)


def test_directed_plan_and_equality():
    mutual = Pattern([(0, 1), (1, 0)], directed=True)
    one_way = Pattern([(0, 1)], directed=True)
    assert mutual.automorphisms() == 2 and one_way.automorphisms() == 1
    assert one_way != Pattern([(0, 1)]) and one_way != mutual
    text = Pattern([(0, 1), (2, 1)], directed=True).explain(induced=True).splitlines()
    assert text[3] == "level 0: node 1: every vertex"
    assert text[4] == "level 1: node 0: neighbours of node 1; exactly 0 -> 1"
    assert text[5].endswith("; exactly 2 -> 1") and "id > id(0)" in text[5]
    assert "1 <-> 0" in Pattern([(0, 1), (1, 0), (1, 2)], directed=True).explain()
