"""Edge-labelled patterns against a brute force on small random graphs whose edges carry an
integer label column (duplicates with other labels, reciprocal edges and self-loops
included): injective maps of the pattern's nodes that find, for every pattern edge, a
stored edge of its label between the images (undirected: either direction; directed: the
arc's), over the automorphisms that keep edges and labels; and against networkx's
``GraphMatcher`` / ``DiGraphMatcher`` with an ``edge_match`` on a simple graph. Count,
listing and stream agree."""

from __future__ import annotations

import itertools
from collections import defaultdict

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
from networkx.algorithms.isomorphism import DiGraphMatcher, GraphMatcher

import graphsys
from graphsys import cli, mining
from graphsys.errors import ParameterError
from graphsys.mining.pattern import NAMED, Pattern

UNDIRECTED = [
    ([(0, 1)], [1]),
    ([(0, 1), (1, 2)], [0, 1]), ([(0, 1), (1, 2)], [1, 1]), ([(0, 1), (1, 2)], [None, 2]),
    (NAMED["triangle"], [0, 0, 1]), (NAMED["triangle"], [0, 1, 2]),
    (NAMED["triangle"], [2, 2, 2]),
    (NAMED["4-cycle"], [0, 1, 0, 1]), (NAMED["4-cycle"], [0, 0, 1, 1]),
    (NAMED["4-cycle"], [1, None, 1, None]),
]
DIRECTED = [
    ([(0, 1)], [1]), ([(0, 1), (1, 0)], [0, 1]), ([(0, 1), (1, 0)], [2, 2]),
    ([(0, 1), (1, 2)], [0, 1]), ([(0, 1), (2, 1)], [1, 1]), ([(1, 0), (1, 2)], [0, None]),
    ([(0, 1), (1, 2), (2, 0)], [0, 0, 0]), ([(0, 1), (1, 2), (2, 0)], [0, 1, 2]),
    ([(0, 1), (1, 2), (0, 2)], [1, 0, 1]),
    ([(0, 1), (1, 2), (2, 3), (3, 0)], [0, 1, 0, 1]),
]


def labelled_graph(path, n: int, m: int, seed: int, nlabels: int, simple: bool = False):
    """A stored graph of ``m`` random edges over ``0..n-1`` with edge column ``kind`` in
    ``0..nlabels-1`` (3 partitions: internal ids are not the original ones), and the
    stored edges as ``{(u, v): labels}`` (self-loops left out). ``simple``: no self-loop,
    each unordered pair once."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if simple:
        pairs = {(min(a, b), max(a, b)) for a, b in zip(src.tolist(), dst.tolist()) if a != b}
        src, dst = np.array(sorted(pairs)).T if pairs else (np.zeros(0, int),) * 2
        flip = rng.random(len(src)) < 0.5   # stored in either direction
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
    kind = rng.integers(0, nlabels, len(src))
    table = pa.table({"src": src.astype(np.int64), "dst": dst.astype(np.int64),
                      "kind": kind.astype(np.int64)})
    g = graphsys.from_arrow(table, path, edge_columns=["kind"], partitions=3)
    stored = defaultdict(set)
    for a, b, lab in zip(src.tolist(), dst.tolist(), kind.tolist()):
        if a != b:
            stored[(a, b)].add(lab)
    return g, stored, (src, dst, kind)


def _wanted(p: Pattern) -> dict:
    """``{(a, b): label}`` per pattern edge (undirected: both orders) or arc."""
    if p.directed:
        return dict(zip(p.arcs, p.edge_labels))
    out = dict(zip(p.edges, p.edge_labels))
    return out | {(b, a): lab for (a, b), lab in out.items()}


def brute(stored, nodes, p: Pattern, induced: bool) -> int:
    k, want = p.num_nodes, _wanted(p)

    def labels(u, v):
        return stored.get((u, v), set()) if p.directed else \
            stored.get((u, v), set()) | stored.get((v, u), set())

    def fits(img) -> bool:
        for a, b in itertools.permutations(range(k), 2):
            if not p.directed and a > b:
                continue
            have = labels(img[a], img[b])
            adjacent = bool(labels(img[a], img[b]) | labels(img[b], img[a]))
            if (a, b) in want:
                if not have or want[(a, b)] >= 0 and want[(a, b)] not in have:
                    return False
            elif induced and (have if p.directed else adjacent):
                return False
        return True

    maps = sum(1 for img in itertools.permutations(nodes, k) if fits(img))
    auts = sum(1 for q in itertools.permutations(range(k))
               if {(q[a], q[b]): lab for (a, b), lab in want.items()} == want)
    assert auts == p.automorphisms()
    assert maps % auts == 0
    return maps // auts


def agree(g, p: Pattern, want: int, induced: bool) -> list[tuple]:
    """count, the full listing and the stream (chunks of 2) give ``want`` matches, in the
    same order; returns the rows."""
    assert mining.count(g, p, induced=induced, edge_labels="kind") == want, (p, induced)
    rows = [tuple(r) for r in mining.matches(g, p, induced=induced, edge_labels="kind",
                                             limit=None).tolist()]
    assert len(rows) == want
    assert rows == list(mining.iter_matches(g, p, induced=induced, edge_labels="kind",
                                            chunk=2))
    return rows


@pytest.mark.parametrize("seed", range(3))
def test_undirected_edge_labels_equal_brute_force(tmp_path, seed):
    n = 7 + seed
    g, stored, _ = labelled_graph(tmp_path / "g", n, 4 * n, seed, 3)
    for edges, labs in UNDIRECTED:
        p = Pattern(edges, edge_labels=labs)
        for induced in (False, True):
            for r in agree(g, p, brute(stored, range(n), p, induced), induced):
                for (a, b), lab in zip(p.edges, p.edge_labels):
                    have = stored.get((r[a], r[b]), set()) | stored.get((r[b], r[a]), set())
                    assert have and (lab < 0 or lab in have)


@pytest.mark.parametrize("seed", range(3))
def test_directed_edge_labels_equal_brute_force(tmp_path, seed):
    n = 7 + seed
    g, stored, _ = labelled_graph(tmp_path / "g", n, 5 * n, 10 + seed, 3)
    for arcs, labs in DIRECTED:
        p = Pattern(arcs, directed=True, edge_labels=labs)
        for induced in (False, True):
            for r in agree(g, p, brute(stored, range(n), p, induced), induced):
                for (a, b), lab in zip(p.arcs, p.edge_labels):
                    assert lab < 0 or lab in stored[(r[a], r[b])]


def test_node_and_edge_labels_together(tmp_path):
    """Node labels (a node column) and edge labels (an edge column) both checked."""
    n = 9
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, n, 40), rng.integers(0, n, 40)
    kind = rng.integers(0, 2, 40)
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "kind": kind}),
                            tmp_path / "g", edge_columns=["kind"], partitions=2)
    node_label = {int(v): int(v) % 2 for v in g.node_ids()}
    labels = np.array([node_label[int(v)] for v in g.node_ids()])
    p = Pattern([(0, 1), (1, 2)], labels=[0, 1, None], edge_labels=[1, 0])
    stored = defaultdict(set)
    for a, b, lab in zip(src.tolist(), dst.tolist(), kind.tolist()):
        if a != b:
            stored[(a, b)].add(lab)
    nodes = sorted(node_label)
    want = sum(1 for x, y, z in itertools.permutations(nodes, 3)
               if node_label[x] == 0 and node_label[y] == 1
               and 1 in stored[(x, y)] | stored[(y, x)] and 0 in stored[(y, z)] | stored[(z, y)])
    assert mining.count(g, p, labels=labels, edge_labels="kind") == want
    assert len(mining.matches(g, p, labels=labels, edge_labels="kind", limit=None)) == want


def _nx_count(matcher_cls, G, P, induced: bool) -> int:
    def edge_match(data, pat):
        return pat["kind"] < 0 or data["kind"] == pat["kind"]

    gm = matcher_cls(G, P, edge_match=edge_match)
    maps = sum(1 for _ in (gm.subgraph_isomorphisms_iter() if induced
                           else gm.subgraph_monomorphisms_iter()))
    auts = sum(1 for _ in matcher_cls(P, P, edge_match=lambda a, b: a["kind"] == b["kind"])
               .isomorphisms_iter())
    return maps // auts


@pytest.mark.parametrize("directed", [False, True])
def test_counts_equal_networkx_matchers(tmp_path, directed):
    """On a simple graph (one label per stored pair), the counts are GraphMatcher's (and
    DiGraphMatcher's) matches under an edge_match on the label, over the pattern's
    automorphisms."""
    n = 30
    g, _, (src, dst, kind) = labelled_graph(tmp_path / "g", n, 110, 21, 3, simple=True)
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_edges_from((int(a), int(b), {"kind": int(k)}) for a, b, k in zip(src, dst, kind))
    for edges, labs in DIRECTED if directed else UNDIRECTED:
        if directed and (1, 0) in edges:
            continue      # the simple graph has no reciprocal pair
        p = Pattern(edges, directed=directed, edge_labels=labs)
        P = nx.DiGraph() if directed else nx.Graph()
        P.add_edges_from((a, b, {"kind": -1 if lab is None else lab})
                         for (a, b), lab in zip(edges, labs))
        cls = DiGraphMatcher if directed else GraphMatcher
        for induced in (False, True):
            want = _nx_count(cls, G, P, induced)
            assert mining.count(g, p, induced=induced, edge_labels="kind") == want, (
                p, induced)


def test_pattern_api_explain_and_symmetry():
    p = Pattern([(0, 1), (1, 2), (2, 0)], edge_labels={(1, 0): 4})
    assert p.edge_labels == (4, -1, -1) and p.edge_labelled
    assert p.automorphisms() == 2 and Pattern.named("triangle").automorphisms() == 6
    assert p != Pattern.named("triangle") and p == Pattern(NAMED["triangle"],
                                                           edge_labels=[4, None, None])
    assert repr(p) == "Pattern([(0, 1), (0, 2), (1, 2)], edge_labels=[4, -1, -1])"
    text = p.explain()
    assert "edge 0-1 label 4" in text and "symmetry breaking: id(0) < id(1)" in text
    arcs = Pattern([(0, 1), (1, 0), (1, 2)], directed=True, edge_labels=[1, 2, None])
    assert arcs.automorphisms() == 1
    assert "1 -> 0 label 2, 0 -> 1 label 1" in arcs.explain()
    for bad, message in (({"edge_labels": [1]}, "2 edges but 1 edge labels"),
                         ({"edge_labels": {(0, 2): 1}}, "not an edge"),
                         ({"edge_labels": {(0, 1): 1, (1, 0): 2}}, "two labels")):
        with pytest.raises(ParameterError, match=message):
            Pattern([(0, 1), (1, 2)], **bad)


def test_refusals_are_one_line(tmp_path):
    t = pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "kind": [1, 1, 2],
                  "score": [0.5, 1.0, 2.0]})
    g = graphsys.from_arrow(t, tmp_path / "g", edge_columns=["kind", "score"])
    p = Pattern([(0, 1)], edge_labels=[2])
    assert mining.count(g, p, edge_labels="kind") == 1
    for kw, message in (({}, "the pattern has edge labels"),
                        ({"edge_labels": "nope"}, "no edge column 'nope'"),
                        ({"edge_labels": "score"}, "holds float64, not integer"),
                        ({"edge_labels": 3}, "must name an integer edge column")):
        for call in (mining.count, mining.matches, mining.iter_matches):
            with pytest.raises(ParameterError, match=message) as err:
                call(g, p, **kw)
            assert "\n" not in str(err.value)


def test_cli_edge_labels(tmp_path, capsys):
    import json

    t = pa.table({"src": [1, 2, 3, 4, 1], "dst": [2, 3, 4, 1, 3], "kind": [1, 1, 1, 1, 2]})
    graphsys.from_arrow(t, tmp_path / "g", edge_columns=["kind"],
                        nodes=pa.table({"id": [1, 2, 3, 4], "label": [0, 0, 0, 0]}))
    assert cli.main(["mine", "pattern", str(tmp_path / "g"), "wedge", "--edge-labels", "kind",
                     "--pattern-edge-labels", "1,2", "--list", "10", "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["matches"] == 4 and got["edge_labels"] == [1, 2]
    assert sorted(map(tuple, got["listed"])) == [(2, 1, 3), (2, 3, 1), (4, 1, 3), (4, 3, 1)]
    assert cli.main(["mine", "pattern", str(tmp_path / "g"), "0-1,1-2,2-0", "--directed",
                     "--edge-labels", "kind", "--pattern-edge-labels", "1,*,*", "--json",
                     "--quiet"]) == 0
    # the one directed 3-cycle 1 -> 3 -> 4 -> 1 (labels 2, 1, 1): arc 0 -> 1 on either 1
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["matches"] == 2
    assert cli.main(["mine", "fsm", str(tmp_path / "g"), "--labels", "label", "--edge-labels",
                     "kind", "--support", "2", "--max-edges", "1", "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["patterns"] == [   # the 4-cycle's kind-1 edges reach 4 nodes, the chord 2
        {"edges": [[0, 1]], "labels": [0, 0], "edge_labels": [1], "support": 4},
        {"edges": [[0, 1]], "labels": [0, 0], "edge_labels": [2], "support": 2}]
    for args, message in ((["--pattern-edge-labels", "1,2"], "needs --edge-labels"),
                          (["--edge-labels", "kind", "--pattern-edge-labels", "1,x"],
                           "--pattern-edge-labels '1,x'"),
                          (["--edge-labels", "nope", "--pattern-edge-labels", "1,2"],
                           "no edge column 'nope'")):
        assert cli.main(["mine", "pattern", str(tmp_path / "g"), "wedge", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and message in err, err


def _form(code, labels) -> tuple:
    """Smallest (labels, edges ``(a, b, edge label)``) over every relabelling of the nodes
    (independent of :func:`graphsys.mining.fsm.canonical`)."""
    best = None
    for perm in itertools.permutations(range(len(labels))):
        lab = [None] * len(labels)
        for v, x in enumerate(labels):
            lab[perm[v]] = x
        edges = tuple(sorted((min(perm[a], perm[b]), max(perm[a], perm[b]), x)
                             for a, b, x in code))
        best = (tuple(lab), edges) if best is None else min(best, (tuple(lab), edges))
    return best


def brute_fsm(stored, node_label: dict, support: int, max_edges: int) -> dict:
    """Every connected set of up to ``max_edges`` labelled edges (distinct pairs) as a
    pattern; its MNI support from every injective map that keeps node labels and finds
    each edge's label between the images."""
    pairs = defaultdict(set)
    for (a, b), labs in stored.items():
        pairs[(min(a, b), max(a, b))] |= labs
    items = [(a, b, x) for (a, b), labs in sorted(pairs.items()) for x in sorted(labs)]
    forms = set()
    for size in range(1, max_edges + 1):
        for subset in itertools.combinations(items, size):
            H = nx.Graph([(a, b) for a, b, _ in subset])
            if H.number_of_edges() < size or not nx.is_connected(H):
                continue
            nodes = sorted(H)
            at = {v: i for i, v in enumerate(nodes)}
            forms.add(_form([(at[a], at[b], x) for a, b, x in subset],
                            [node_label[v] for v in nodes]))
    out = {}
    for labs, code in forms:
        images = [set() for _ in labs]
        for img in itertools.permutations(sorted(node_label), len(labs)):
            if all(node_label[img[v]] == x for v, x in enumerate(labs)) and all(
                    x in pairs.get((min(img[a], img[b]), max(img[a], img[b])), ())
                    for a, b, x in code):
                for v, u in enumerate(img):
                    images[v].add(u)
        if min(len(s) for s in images) >= support:
            out[(labs, code)] = min(len(s) for s in images)
    return out


@pytest.mark.parametrize("n,m,nlabels,elabels,support,seed", [
    (8, 14, 2, 2, 2, 1), (8, 16, 1, 3, 2, 2), (9, 18, 2, 2, 3, 3), (7, 16, 2, 3, 1, 4)])
def test_fsm_with_edge_labels_equals_brute_force(tmp_path, n, m, nlabels, elabels,
                                                 support, seed):
    g, stored, _ = labelled_graph(tmp_path / "g", n, m, seed, elabels)
    by_node = np.random.default_rng(seed).integers(0, nlabels, n)
    node_label = {v: int(by_node[v]) for v in range(n)}
    want = brute_fsm(stored, node_label, support, 3)
    labels = by_node[g.node_ids()]                   # one per node, internal order
    for exact in (True, False):
        got = {}
        for f in mining.frequent_subgraphs(g, labels, support, max_edges=3, exact=exact,
                                           edge_labels="kind"):
            key = _form([(a, b, x) for (a, b), x in zip(f.pattern.edges,
                                                         f.pattern.edge_labels)],
                        f.pattern.labels)
            assert key not in got                    # each pattern once
            assert f.to_dict()["edge_labels"] == list(f.pattern.edge_labels)
            got[key] = f.support
        assert got.keys() == want.keys() and len(want) >= 3
        assert got == want if exact else all(s >= support for s in got.values())


def test_fsm_edge_label_refusals(tmp_path):
    t = pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "kind": [1, -1, 2],
                  "score": [0.5, 1.0, 2.0]})
    g = graphsys.from_arrow(t, tmp_path / "g", edge_columns=["kind", "score"])
    labels = np.zeros(3, np.int64)
    with pytest.raises(ParameterError, match="non-negative"):
        mining.frequent_subgraphs(g, labels, 1, edge_labels="kind")
    with pytest.raises(ParameterError, match="not integer"):
        mining.frequent_subgraphs(g, labels, 1, edge_labels="score")


def test_edge_labels_keyed_as_records_past_the_int64_product(tmp_path, monkeypatch):
    """The edge-label lists found each stored edge by the key ``u * n + v`` (int64, wraps
    from about 3.04e9 nodes); past that size the keys are (u, v) records, forced here: the
    same counts as brute force."""
    from graphsys.storage import edge_changes

    monkeypatch.setattr(edge_changes, "MAX_PACKED_NODES", 1)
    g, stored, _ = labelled_graph(tmp_path / "g", 8, 32, 1, 3)
    for edges, labs in UNDIRECTED[:3]:
        p = Pattern(edges, edge_labels=labs)
        agree(g, p, brute(stored, range(8), p, False), False)
