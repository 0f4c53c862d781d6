"""Real graphs from the dataset mirror (skipped without it): SNAP's published triangle
counts, networkx and igraph on ca-GrQc, email-Eu-core and email-Enron, in RAM, from the
undirected index, and out of core over row blocks."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np
import pytest

from graphsys import mining, open_graph
from graphsys.datasets import load_dataset
from graphsys.mining.motif import DIRECTED_3, UNDIRECTED_4
from graphsys.mining.outofcore import triangles_by_blocks
from graphsys.mining.parallel import Ranks
from graphsys.mining.pattern import NAMED
from graphsys.storage.adjacency_index import build_index

ig = pytest.importorskip("igraph")

#: SNAP's published triangle counts (undirected view, self-loops dropped).
SNAP_TRIANGLES = {"wiki-vote": 608_389, "email-eu-core": 105_461, "ca-grqc": 48_260,
                  "email-enron": 727_044, "ego-facebook": 1_612_010,
                  "soc-slashdot0902": 602_592}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """``stored(name)``: the registry dataset ingested once (3 partitions)."""
    from tests.conftest import mirror_dir

    mirror = mirror_dir()
    if mirror is None or not (mirror / "snap" / "ca-GrQc.txt.gz").exists():
        pytest.skip("dataset mirror not found (set GRAPHSYS_MIRROR)")
    tmp = tmp_path_factory.mktemp("real")
    made = {}

    def get(name: str):
        if name not in made:
            made[name] = load_dataset(name, tmp / name, partitions=3, cache=tmp / "cache",
                                      mirror=mirror)
        return made[name]

    return get


def edges_of(g, directed: bool):
    s, d = zip(*[(a, b) for a, b, _, _ in g.iter_edges()])
    s, d = np.concatenate(s), np.concatenate(d)
    keep = s != d
    G = (nx.DiGraph if directed else nx.Graph)()
    G.add_nodes_from(range(g.num_nodes()))
    G.add_edges_from(zip(s[keep].tolist(), d[keep].tolist()))
    return G


def igraph_of(G) -> ig.Graph:
    out = ig.Graph(n=G.number_of_nodes(), edges=list(G.edges), directed=G.is_directed())
    out.simplify()
    return out


@pytest.mark.parametrize("name", ["ca-grqc", "email-eu-core", "wiki-vote", "ego-facebook",
                                  "email-enron", "soc-slashdot0902"])
def test_snap_triangle_counts(stored, name):
    """The published counts from the buckets, from the sym index in RAM, and out of core
    in about five row blocks."""
    g = stored(name)
    want = SNAP_TRIANGLES[name]
    assert mining.triangle_count(g) == want
    build_index(g, ("sym",))
    g = open_graph(g.path)
    assert mining.triangle_count(g, mode="memory") == want
    dag = g.manifest.indexes["default"]["sym"].num_edges // 2
    total, counts, _ = triangles_by_blocks(g, "default", per_vertex=True, memory_limit=None,
                                           threads=2, ranks=Ranks(),
                                           block_entries=dag // 5 + 1)
    assert total == want and counts.sum() == 3 * want


def test_networkx_triangles_clustering_transitivity(stored):
    g = stored("ca-grqc")
    G = edges_of(g, directed=False)
    stats = mining.triangle_stats(g, per_node=True)
    tri = nx.triangles(G)
    np.testing.assert_array_equal(stats.triangles.values,
                                  [tri[v] for v in range(g.num_nodes())])
    ref = nx.clustering(G)
    np.testing.assert_allclose(stats.clustering.values, [ref[v] for v in range(len(ref))],
                               atol=1e-12)
    assert stats.transitivity == pytest.approx(nx.transitivity(G), abs=1e-12)
    assert stats.average_clustering == pytest.approx(nx.average_clustering(G), abs=1e-12)


@pytest.mark.slow("full")
def test_networkx_triangles_email_enron(stored):
    g = stored("email-enron")
    G = edges_of(g, directed=False)
    stats = mining.triangle_stats(g, per_node=True)
    tri = nx.triangles(G)
    np.testing.assert_array_equal(stats.triangles.values,
                                  [tri[v] for v in range(g.num_nodes())])
    assert stats.transitivity == pytest.approx(nx.transitivity(G), abs=1e-12)


def test_networkx_cliques_citeseer(stored):
    """k-cliques of every size against networkx's enumerate_all_cliques (CiteSeer's
    citations, undirected: its cliques are few enough to list in Python)."""
    g = stored("citeseer")
    G = edges_of(g, directed=False)
    sizes: Counter = Counter()
    per_node: dict[int, Counter] = {}
    for c in nx.enumerate_all_cliques(G):
        sizes[len(c)] += 1
        per_node.setdefault(len(c), Counter()).update(c)
    assert max(sizes) >= 4
    for k in range(3, 9):
        assert mining.clique_count(g, k) == sizes.get(k, 0), k
        counts = mining.clique_counts(g, k).values
        assert {v: int(c) for v, c in enumerate(counts) if c} == dict(per_node.get(k, {}))
    assert mining.count(g, "4-clique") == sizes[4]


def test_igraph_cliques_ca_grqc(stored):
    """4-cliques against igraph's cliques (ca-GrQc holds a 44-clique: 329,297 of them)."""
    g = stored("ca-grqc")
    G = igraph_of(edges_of(g, directed=False))
    assert mining.clique_count(g, 4) == len(G.cliques(min=4, max=4))
    listed = g.to_internal(mining.cliques(g, 4, limit=1000).reshape(-1)).reshape(-1, 4)
    assert listed.shape == (1000, 4)
    assert all(G.are_adjacent(int(a), int(b)) for row in listed.tolist()
               for i, a in enumerate(row) for b in row[i + 1:])


@pytest.mark.slow("full")
def test_igraph_five_cliques_ca_grqc(stored):
    g = stored("ca-grqc")
    G = igraph_of(edges_of(g, directed=False))
    assert mining.clique_count(g, 5) == len(G.cliques(min=5, max=5))


def _isoclass(edges, directed: bool) -> int:
    k = 1 + max(max(e) for e in edges)
    return ig.Graph(n=k, edges=edges, directed=directed).isoclass()


def test_igraph_motifs_ca_grqc(stored):
    g = stored("ca-grqc")
    G = igraph_of(edges_of(g, directed=False))
    three = G.motifs_randesu(size=3)
    census = mining.motifs(g, 3).counts
    assert census["wedge"] == three[_isoclass(NAMED["wedge"], False)]
    assert census["triangle"] == three[_isoclass(NAMED["triangle"], False)]
    four = G.motifs_randesu(size=4)
    census = mining.motifs(g, 4).counts
    for name in UNDIRECTED_4:
        assert census[name] == four[_isoclass(NAMED[name], False)], name
    # the user-pattern matcher agrees on every 4-node class, induced
    for name in ("4-cycle", "diamond", "tailed-triangle"):
        assert mining.count(g, name, induced=True) == census[name], name


@pytest.mark.slow("full")
def test_triad_census_networkx_email_eu_core(stored):
    g = stored("email-eu-core")
    assert mining.triad_census(g) == nx.triadic_census(edges_of(g, directed=True))


def test_directed_motifs_email_eu_core(stored):
    """The triad census's connected classes against igraph's directed 3-node motifs."""
    g = stored("email-eu-core")
    D = edges_of(g, directed=True)
    census = mining.triad_census(g)
    assert sum(census.values()) == g.num_nodes() * (g.num_nodes() - 1) * (
        g.num_nodes() - 2) // 6
    motifs = igraph_of(D).motifs_randesu(size=3)
    for name in DIRECTED_3:
        T = nx.triad_graph(name)
        index = {v: i for i, v in enumerate(sorted(T))}
        cls = _isoclass([(index[a], index[b]) for a, b in T.edges], True)
        assert census[name] == motifs[cls], name
