"""k-cliques against networkx's enumerate_all_cliques on random graphs of every size up
to 12 nodes, and dense ones (many cliques per root)."""

from __future__ import annotations

import itertools
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from graphsys import mining
from graphsys.errors import ParameterError
from tests.mining.conftest import random_edges, simple_graph


def reference(G: nx.Graph) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {}
    for c in nx.enumerate_all_cliques(G):
        out.setdefault(len(c), []).append(tuple(sorted(c)))
    return out


def check(g, G) -> None:
    ref = reference(G)
    for k in range(3, 9):
        want = ref.get(k, [])
        assert mining.clique_count(g, k) == len(want), k
        per_node = Counter(v for c in want for v in c)
        assert mining.clique_counts(g, k).to_dict() == {v: per_node.get(v, 0) for v in G}
        listed = mining.cliques(g, k, limit=None)
        assert listed.shape == (len(want), k)
        assert sorted(tuple(sorted(r)) for r in listed.tolist()) == sorted(want)


@pytest.mark.parametrize("n", range(1, 13))
def test_every_size(graph_of, n):
    for seed, density in ((n, 1.5), (n + 50, 4.0)):
        src, dst = random_edges(n, int(density * n) + 1, seed)
        check(graph_of(src, dst, n), simple_graph(src, dst, n))


def test_dense_graphs(graph_of):
    """A dense random graph (rows longer than 64: several bitset words) and K_10."""
    rng = np.random.default_rng(0)
    n = 90
    pairs = np.array([p for p in itertools.combinations(range(n), 2) if rng.random() < 0.5])
    check(graph_of(pairs[:, 0], pairs[:, 1], n), simple_graph(pairs[:, 0], pairs[:, 1], n))
    src, dst = np.triu_indices(10, 1)
    g = graph_of(src, dst, 10)
    assert [mining.clique_count(g, k) for k in range(3, 9)] == [
        120, 210, 252, 210, 120, 45]


def test_limit(graph_of):
    src, dst = np.triu_indices(8, 1)
    g = graph_of(src, dst, 8)
    first = mining.cliques(g, 4, limit=7)
    assert first.shape == (7, 4)
    np.testing.assert_array_equal(first, mining.cliques(g, 4, limit=None)[:7])
    assert mining.cliques(g, 4, limit=0).shape == (0, 4)
    with pytest.raises(ParameterError, match="limit"):
        mining.cliques(g, 4, limit=-1)
    for bad in (2, 9, 3.0):
        with pytest.raises(ParameterError, match="k must be"):
            mining.clique_count(g, bad)


def test_the_degeneracy_pass_counts_against_the_budget(graph_of):
    """With a ``sym`` index the oriented view is sized alone (4 bytes per edge): a
    ``memory_limit`` just above it let the clique calls build the symmetric rows and the
    degeneracy ordering beside it, about 4.5 times the limit on a 2M-edge graph; the
    whole call is now sized and refused in one line."""
    from graphsys import open_graph
    from graphsys.errors import GraphsysError
    from graphsys.storage.adjacency_index import build_index
    from graphsys.views.orient import build_bytes

    src, dst = random_edges(60, 300, 5)
    g = graph_of(src, dst, 60)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    want = mining.clique_count(g, 3)
    tight = build_bytes(g) + 1   # the oriented view's build fits
    for call in (lambda: mining.clique_count(g, 3, memory_limit=tight),
                 lambda: mining.clique_counts(g, 4, memory_limit=tight),
                 lambda: mining.cliques(g, 3, memory_limit=tight)):
        with pytest.raises(GraphsysError, match=r"^building the degeneracy ordering of the "
                                                r"clique search in RAM needs about .* more "
                                                r"than the .* of memory_limit"):
            call()
    assert mining.clique_count(g, 3, memory_limit=64 * tight) == want


def test_a_large_limit_is_not_allocated_up_front(graph_of):
    """cliques(g, 3, limit=10**11) on a triangle tried to allocate 2.18 TiB (MemoryError);
    a limit past 65,536 rows is now capped at the count, and a listing over the budget
    refused in one line."""
    from graphsys.errors import GraphsysError

    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    assert mining.cliques(g, 3, limit=10**15).shape == (1, 3)
    assert mining.matches(g, "triangle", limit=10**15).shape == (1, 3)
    src, dst = zip(*itertools.combinations(range(12), 2))   # K12: 220 triangles
    k12 = graph_of(src, dst, 12)
    with pytest.raises(GraphsysError, match=r"^building the 220 3-cliques listed in RAM"):
        mining.cliques(k12, 3, limit=None, memory_limit=10_000)
