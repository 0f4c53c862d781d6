"""Motif censuses against brute force over every 3- and 4-node subset of random graphs of
every size up to 12 nodes; the sampled estimator's mean against the exact counts."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest

import graphsys
from graphsys import mining
from graphsys.errors import ParameterError
from graphsys.mining.motif import DIRECTED_3, UNDIRECTED_3, UNDIRECTED_4
from tests.mining.conftest import directed_graph, random_edges, simple_graph

#: A connected 4-node graph's class from (edges, sorted degrees).
SHAPE_4 = {(3, (1, 1, 2, 2)): "4-path", (3, (1, 1, 1, 3)): "3-star",
           (4, (2, 2, 2, 2)): "4-cycle", (4, (1, 2, 2, 3)): "tailed-triangle",
           (5, (2, 2, 3, 3)): "diamond", (6, (3, 3, 3, 3)): "4-clique"}


def brute_census(G: nx.Graph, size: int) -> dict[str, int]:
    names = UNDIRECTED_3 if size == 3 else UNDIRECTED_4
    out = dict.fromkeys(names, 0)
    for nodes in itertools.combinations(G.nodes, size):
        H = G.subgraph(nodes)
        if not nx.is_connected(H):
            continue
        if size == 3:
            out["triangle" if H.number_of_edges() == 3 else "wedge"] += 1
        else:
            out[SHAPE_4[(H.number_of_edges(), tuple(sorted(d for _, d in H.degree)))]] += 1
    return out


@pytest.mark.parametrize("n", range(1, 13))
def test_every_size(graph_of, n):
    for seed, density in ((n, 1.2), (n + 7, 3.0)):
        src, dst = random_edges(n, int(density * n) + 1, seed)
        g = graph_of(src, dst, n)
        G = simple_graph(src, dst, n)
        for size in (3, 4):
            census = mining.motifs(g, size)
            assert census.counts == brute_census(G, size)
            assert census.method == "exact"
        directed = mining.motifs(g, 3, directed=True).counts
        if n >= 3:
            ref = nx.triadic_census(directed_graph(src, dst, n))
            assert directed == {k: ref[k] for k in DIRECTED_3}


def test_sampled_estimator_is_unbiased(graph_of):
    """The mean of the estimates over seeds is within a few standard errors of the exact
    census; the reported standard error matches the spread of the estimates; a seed fixes
    the draws."""
    rng = np.random.default_rng(5)
    n = 40
    pairs = np.array([p for p in itertools.combinations(range(n), 2) if rng.random() < 0.3])
    g = graph_of(pairs[:, 0], pairs[:, 1], n)
    exact = mining.motifs(g, 4).counts
    runs = [mining.motifs(g, 4, method="sampled", samples=400, seed=s) for s in range(30)]
    for name in UNDIRECTED_4:
        est = np.array([r.counts[name] for r in runs])
        err = np.mean([r.stderr[name] for r in runs])
        assert abs(est.mean() - exact[name]) <= 4 * err / np.sqrt(len(runs)) + 1e-6, name
        if err:
            assert 0.5 < est.std(ddof=1) / err < 2, name
    again = mining.motifs(g, 4, method="sampled", samples=400, seed=3, threads=1)
    assert again.counts == runs[3].counts


def test_sampled_estimate_does_not_depend_on_the_partitions(graph_of):
    """A seed draws the same wedges and edges however the graph is partitioned (the draws
    followed internal ids: 1, 3 and 5 partitions gave three estimates)."""
    rng = np.random.default_rng(8)
    n = 30
    pairs = np.array([p for p in itertools.combinations(range(n), 2) if rng.random() < 0.3])
    runs = [mining.motifs(graph_of(pairs[:, 0], pairs[:, 1], n, partitions=p), 4,
                          method="sampled", samples=300, seed=1) for p in (1, 3, 5)]
    assert runs[0].counts == runs[1].counts == runs[2].counts
    assert runs[0].stderr == runs[1].stderr == runs[2].stderr


def test_sampled_estimate_on_string_ids(tmp_path):
    """String ids: the draws follow the original ids' order as with integer ids (the
    order's uint64 positions made a float index: IndexError). On a complete graph every
    wedge closes the same number of 4-cycles and every pair of common neighbours is
    adjacent, so the estimate is exact: C(6, 4) 4-cliques, nothing else."""
    pairs = list(itertools.combinations(range(6), 2))
    table = pa.table({"src": [f"v{a}" for a, _ in pairs], "dst": [f"v{b}" for _, b in pairs]})
    runs = [mining.motifs(graphsys.from_arrow(table, tmp_path / f"g{p}", partitions=p), 4,
                          method="sampled", samples=200, seed=2) for p in (1, 3)]
    want = dict.fromkeys(UNDIRECTED_4, 0.0) | {"4-clique": 15.0}
    assert runs[0].counts == runs[1].counts == pytest.approx(want)


def test_bad_parameters(graph_of):
    g = graph_of([0, 1], [1, 2], 3)
    with pytest.raises(ParameterError, match="size"):
        mining.motifs(g, 6)
    with pytest.raises(ParameterError, match="size"):
        mining.motifs(g, 4, directed=True)
    with pytest.raises(ParameterError, match="method"):
        mining.motifs(g, 3, method="sampled")
    with pytest.raises(ParameterError, match="samples"):
        mining.motifs(g, 4, method="sampled", samples=1)
    with pytest.raises(ParameterError, match="seed"):  # was numpy's ValueError
        mining.motifs(g, 4, method="sampled", seed=-1)
    with pytest.raises(ParameterError, match="directed"):  # "no" gave the triad census
        mining.motifs(g, 3, directed="no")


@pytest.mark.parametrize("size,options", [
    (3, {}), (4, {}), (4, {"method": "sampled", "samples": 1000}), (5, {})])
def test_a_census_counts_against_the_budget(graph_of, size, options):
    """A census's arrays beside its oriented view (4-node: about 4.8 times the view on a
    2M-edge graph with a ``sym`` index) are sized with it and refused in one line."""
    from graphsys import open_graph
    from graphsys.errors import GraphsysError
    from graphsys.storage.adjacency_index import build_index
    from graphsys.views.orient import build_bytes

    src, dst = random_edges(60, 300, 6)
    g = graph_of(src, dst, 60)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    tight = build_bytes(g) + 1
    with pytest.raises(GraphsysError, match=rf"^building the {size}-node motif census in RAM "
                                            rf"needs about .* of memory_limit"):
        mining.motifs(g, size, memory_limit=tight, **options)
    assert mining.motifs(g, size, memory_limit=64 * tight, **options).counts == \
        mining.motifs(g, size, **options).counts
