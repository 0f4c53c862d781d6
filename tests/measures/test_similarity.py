"""Link scores and top-k candidates against NetworkX (random graphs, self-loops, parallel and
reciprocal edges, directed ones in their undirected view), brute force over scipy rows and
igraph on the real graphs."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from graphsys.errors import ParameterError
from graphsys.measures import common_neighbors, link_scores, top_links
from tests.measures.conftest import small_graph

NX = {
    "jaccard": nx.jaccard_coefficient,
    "adamic_adar": nx.adamic_adar_index,
    "resource_allocation": nx.resource_allocation_index,
    "preferential_attachment": nx.preferential_attachment,
    "common": None,
}


def nx_score(U, method, u, v):
    if method == "common":
        return len(nx.common_neighbors(U, u, v))
    try:
        return next(NX[method](U, [(u, v)]))[2]
    except ZeroDivisionError:  # a common neighbour of degree 1 (u == v only)
        return math.inf


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("threads", ["serial", "parallel"])
def test_serial_and_threaded_pairs_agree(tmp_path, monkeypatch, directed, threads):
    """Few pairs run on the calling thread, many on the team: the same scores."""
    from graphsys.measures import similarity

    monkeypatch.setattr(similarity, "PAIRS_PARALLEL_MIN_WORK",
                        1 << 62 if threads == "serial" else 0)
    t = small_graph(tmp_path, 3, directed, dedupe=False)
    nodes = list(t.U)
    rng = np.random.default_rng(8)
    pairs = [(nodes[a], nodes[b]) for a, b in rng.integers(0, len(nodes), (80, 2))]
    for method in NX:
        got = link_scores(t.graph, pairs, method)
        ref = [nx_score(t.U, method, u, v) for u, v in pairs]
        np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=method)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("dedupe", [True, False])
def test_pairs_match_networkx(tmp_path, directed, dedupe):
    rng = np.random.default_rng(5)
    for seed in range(4):
        t = small_graph(tmp_path, seed + 10 * dedupe, directed, dedupe=dedupe)
        nodes = list(t.U)
        pairs = [(nodes[a], nodes[b]) for a, b in rng.integers(0, len(nodes), (60, 2))]
        for method in NX:
            got = link_scores(t.graph, pairs, method)
            ref = [nx_score(t.U, method, u, v) for u, v in pairs]
            np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=method)
        for u, v in pairs[:15]:
            assert set(common_neighbors(t.graph, u, v).tolist()) == nx.common_neighbors(t.U, u, v)


@pytest.mark.parametrize("directed", [False, True])
def test_top_links_are_the_best_two_hop_candidates(tmp_path, directed):
    t = small_graph(tmp_path, 3, directed, n=35, m=90)
    g, U = t.graph, t.U
    rank = dict(zip(g.node_ids().tolist(), range(g.num_nodes())))  # ties: smaller internal id
    for method in NX:
        res = top_links(g, k=4, method=method)
        got: dict = {}
        for u, v, s in res:
            got.setdefault(u, []).append((v, s))
        for u in U:
            two = {x for w in U[u] if w != u for x in U[w]} - set(U[u]) - {u}
            scores = {x: nx_score(U, method, u, x) for x in two}
            want = sorted(two, key=lambda x: (-scores[x], rank[x]))[:4]
            row = got.get(u, [])
            assert [x for x, _ in row] == want, (method, u)
            np.testing.assert_allclose([s for _, s in row], [scores[x] for x in want])
    one = top_links(g, [int(g.node_ids()[0])], k=2)
    assert set(one.source.tolist()) <= {int(g.node_ids()[0])}
    # k above the node count: every candidate (it allocated k per query: 10**9 failed)
    every = top_links(g, k=10**9, method="common")
    assert len(every) == sum(len({x for w in U[u] if w != u for x in U[w]} - set(U[u]) - {u})
                             for u in U)
    assert one.to_table().column_names == ["source", "target", "score"]


def test_string_ids_and_internal_ids(tmp_path):
    import graphsys

    G = nx.Graph([("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")])
    g = graphsys.from_networkx(G, tmp_path / "g")
    assert link_scores(g, [("a", "d")], "common").tolist() == [1.0]
    a, d = g.to_internal(["a", "d"]).tolist()
    assert link_scores(g, np.array([[a, d]]), "common", internal=True).tolist() == [1.0]
    assert common_neighbors(g, "a", "d").to_pylist() == ["c"]
    assert list(top_links(g, ["d"], k=3, method="jaccard")) == [("d", "a", 0.5),
                                                                  ("d", "b", 0.5)]


def test_bad_input_is_one_line(tmp_path):
    t = small_graph(tmp_path, 1, False, n=5, m=6)
    with pytest.raises(ParameterError, match="method must be one of"):
        link_scores(t.graph, [(3, 10)], "cosine")
    with pytest.raises(ParameterError, match="pairs"):
        link_scores(t.graph, [(3, 10, 17)])
    with pytest.raises(ParameterError, match="^pairs must hold ids of the graph's nodes: "
                                             "node id 4 is not in the graph"):
        link_scores(t.graph, [(3, 4)])  # the parameter is named, not the id alone
    with pytest.raises(ParameterError, match="^u, v must hold ids .* node id 4 is not"):
        common_neighbors(t.graph, 3, 4)
    with pytest.raises(ParameterError, match="internal id 99"):
        link_scores(t.graph, [(0, 99)], internal=True)
    for dtype in (np.int64, np.int32, np.uint64):  # an array's columns, checked in one pass
        with pytest.raises(ParameterError, match="internal id 99"):
            link_scores(t.graph, np.array([[0, 1], [0, 99]], dtype), internal=True)
    with pytest.raises(ParameterError, match="internal id -1"):
        link_scores(t.graph, np.array([[0, 1], [-1, 2]]), internal=True)
    good = np.array([[0, 1], [2, 3]])
    assert (link_scores(t.graph, good.astype(np.uint8), internal=True).tolist()
            == link_scores(t.graph, good.tolist(), internal=True).tolist())
    with pytest.raises(ParameterError, match="k must be"):
        top_links(t.graph, k=-1)
    assert link_scores(t.graph, np.zeros((0, 2), np.int64)).shape == (0,)
    # internal ids that are no integers: an int64 cast read 0.5 as node 0, True as node 1
    for bad in (np.array([[0.5, 1.0]]), [(True, 1)], [("0", 1)]):
        with pytest.raises(ParameterError, match="integer internal ids"):
            link_scores(t.graph, bad, internal=True)
    with pytest.raises(ParameterError, match="integer internal ids"):
        common_neighbors(t.graph, 0.5, 1, internal=True)
    assert (link_scores(t.graph, good.astype(np.float64), internal=True).tolist()
            == link_scores(t.graph, good, internal=True).tolist())  # whole floats: ids


def brute_scores(sym, method, u, v):
    """The scores from Python sets over the rows of the binary symmetric matrix."""
    nb = [set(sym.indices[sym.indptr[x]:sym.indptr[x + 1]].tolist()) for x in (u, v)]

    def deg(w):
        row = sym.indices[sym.indptr[w]:sym.indptr[w + 1]]
        return len(row) + int(w in row)

    common = (nb[0] & nb[1]) - {u, v}
    if method == "common":
        return len(common)
    if method == "jaccard":
        union = len(nb[0] | nb[1])
        return len(common) / union if union else 0.0
    if method == "adamic_adar":
        return sum(1 / math.log(deg(w)) for w in common)
    if method == "resource_allocation":
        return sum(1 / deg(w) for w in common)
    return deg(u) * deg(v)


@pytest.mark.parametrize("name", ["email-enron", "soc-slashdot0902", "luxembourg-osm"])
def test_real_graphs_match_brute_force(real, name):
    r = real[name]
    rng = np.random.default_rng(0)
    src = np.repeat(np.arange(r.sym.shape[0]), np.diff(r.sym.indptr))
    e = rng.integers(0, len(src), (400, 2))  # degree-biased pairs: ends of random edges
    pairs = np.column_stack([src[e[:, 0]], r.sym.indices[e[:, 1]]])
    for method in NX:
        got = link_scores(r.graph, pairs, method, internal=True)
        ref = [brute_scores(r.sym, method, u, v) for u, v in pairs.tolist()]
        np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=method)


def test_enron_jaccard_matches_igraph(real):
    ig = pytest.importorskip("igraph")
    r = real["email-enron"]
    n = r.sym.shape[0]
    coo = r.sym.tocoo()
    keep = coo.row < coo.col
    G = ig.Graph(n=n, edges=np.column_stack([coo.row[keep], coo.col[keep]]).tolist())
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, n, (300, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    ref = G.similarity_jaccard(pairs=pairs.tolist(), loops=False)  # NetworkX: no implied loops
    np.testing.assert_allclose(link_scores(r.graph, pairs, "jaccard", internal=True), ref,
                               rtol=1e-12)


def test_stored_sym_index_gives_the_same_scores(tmp_path):
    """A directed graph with its ``sym`` index (``graphsys index --undirected``): the view
    reads the index's unique rows; scores, candidates and the diameter are unchanged."""
    from graphsys import open_graph
    from graphsys.measures import diameter, eccentricity
    from graphsys.measures.kernels_view import UNIQUE
    from graphsys.measures.view import undirected_view
    from graphsys.storage.adjacency_index import build_index

    t = small_graph(tmp_path, 7, True, n=30, m=110, dedupe=False)
    indexed = open_graph(t.graph.path)
    build_index(indexed, ("sym",))
    indexed = open_graph(t.graph.path)
    assert undirected_view(indexed).sym == UNIQUE
    nodes = list(t.U)
    rng = np.random.default_rng(2)
    pairs = [(nodes[a], nodes[b]) for a, b in rng.integers(0, len(nodes), (80, 2))]
    for method in NX:
        np.testing.assert_allclose(link_scores(indexed, pairs, method),
                                   [nx_score(t.U, method, u, v) for u, v in pairs])
        assert list(top_links(indexed, k=3, method=method)) == list(
            top_links(t.graph, k=3, method=method))
    assert diameter(indexed, exact=True).value == diameter(t.graph, exact=True).value
    np.testing.assert_array_equal(eccentricity(indexed).values, eccentricity(t.graph).values)


def test_stored_and_built_rows_share_one_kernel_signature(tmp_path):
    """The measures' view hands its kernels read-only int32 rows: a graph with its stored
    ``sym`` index (mapped, int32 ids) and one whose rows are built in memory (int64 ids)
    reach the same compiled signature of the link-score kernels."""
    import graphsys
    from graphsys.measures import kernels_similarity as ks
    from graphsys.storage.adjacency_index import build_index

    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 40, 200), rng.integers(0, 40, 200)
    built = graphsys.from_numpy(src, dst, tmp_path / "built", undirected=True)
    stored = graphsys.from_numpy(src, dst, tmp_path / "stored", undirected=True)
    build_index(stored, ("csr", "sym"))
    for g in (built, stored):
        ids = g.node_ids()
        link_scores(g, ids[np.array([[0, 1], [2, 3]])], "jaccard")
        top_links(g, ids[:2], 3, "jaccard")
    assert len(ks.pair_scores.signatures) == 1
    assert len(ks.top_k.signatures) == 1


def test_internal_is_a_flag_of_every_measure(tmp_path):
    """``internal="no"`` was read as True (the ids taken as internal ones, the answer in
    internal ids); it is now refused in one line, as ``exact`` already was."""
    from graphsys.measures import diameter, eccentricity, reciprocity

    t = small_graph(tmp_path, 1, False, n=5, m=6)
    calls = (lambda f: link_scores(t.graph, [(3, 10)], internal=f),
             lambda f: common_neighbors(t.graph, 3, 10, internal=f),
             lambda f: top_links(t.graph, internal=f),
             lambda f: eccentricity(t.graph, [3], internal=f),
             lambda f: reciprocity(t.graph, [3], internal=f))
    for call in calls:
        for bad in ("no", 1, None):
            with pytest.raises(ParameterError, match="^internal must be True or False"):
                call(bad)
        call(np.False_)
    with pytest.raises(ParameterError, match="^exact must be True or False"):
        diameter(t.graph, exact="no")
