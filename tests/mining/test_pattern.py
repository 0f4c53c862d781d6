"""User patterns against brute force (injective maps over automorphisms) on random graphs
of every size up to 12 nodes: every connected 3- and 4-node pattern, induced or not,
labelled or not, and larger patterns up to 8 nodes."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest

import graphsys
from graphsys import mining
from graphsys.errors import ParameterError
from graphsys.mining.pattern import NAMED, Pattern
from tests.mining.conftest import brute_matches, random_edges, simple_graph

SMALL = ["edge", "wedge", "triangle", "4-path", "3-star", "4-cycle", "tailed-triangle",
         "diamond", "4-clique"]


def check(g, G, pattern: Pattern, labels=None, node_label=None) -> None:
    for induced in (False, True):
        want = brute_matches(G, pattern.edges, pattern.num_nodes, induced,
                             list(pattern.labels), node_label)
        assert mining.count(g, pattern, induced=induced, labels=labels) == want, (
            pattern, induced)
        rows = mining.matches(g, pattern, induced=induced, labels=labels, limit=None)
        assert rows.shape == (want, pattern.num_nodes)
        seen = set()
        for r in rows.tolist():  # every row is a match, each subgraph once
            assert len(set(r)) == pattern.num_nodes
            for a, b in itertools.combinations(range(pattern.num_nodes), 2):
                has = G.has_edge(r[a], r[b])
                want_edge = (a, b) in pattern.edges
                assert has or not want_edge
                assert not (induced and has and not want_edge)
            for i, lab in enumerate(pattern.labels):
                assert lab < 0 or node_label[r[i]] == lab
            # a subgraph once per assignment of the pattern's labels (a wildcard node and a
            # labelled one swapped are two matches)
            key = (frozenset(frozenset((r[a], r[b])) for a, b in pattern.edges),
                   frozenset(zip(r, pattern.labels)))
            assert key not in seen
            seen.add(key)


@pytest.mark.parametrize("n", range(1, 13))
def test_every_small_pattern(graph_of, n):
    src, dst = random_edges(n, 2 * n + 1, n)
    g = graph_of(src, dst, n)
    G = simple_graph(src, dst, n)
    for name in SMALL:
        if Pattern.named(name).num_nodes <= n:
            check(g, G, Pattern.named(name))


def test_labelled_patterns(graph_of):
    n = 10
    src, dst = random_edges(n, 30, 11)
    labels = np.random.default_rng(2).integers(0, 2, n)
    g = graph_of(src, dst, n, node_columns={"label": labels})
    G = simple_graph(src, dst, n)
    node_label = dict(enumerate(labels.tolist()))
    for edges, lab in (([(0, 1), (1, 2)], [0, 1, 0]), ([(0, 1), (1, 2)], [1, None, 0]),
                       ([(0, 1), (1, 2), (0, 2)], [1, 1, 0]),
                       (NAMED["4-cycle"], [0, 1, 0, 1]), (NAMED["diamond"], [0, 0, 1, None])):
        check(g, G, Pattern(edges, labels=lab), labels="label", node_label=node_label)
    with pytest.raises(ParameterError, match="labels"):
        mining.count(g, Pattern([(0, 1)], labels=[0, 1]))


def test_a_label_below_minus_one_is_refused(tmp_path):
    """The matcher reads every negative label as any: a pattern asking for node label -5
    or edge label -3 counted both edges of the path 0 - 1 - 2 (a brute force finds one
    each); such labels are refused in one line, -1 and None still match any."""
    g = graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 2], "kind": [-3, 4]}),
                            tmp_path / "g", edge_columns=["kind"])
    labels = np.array([{0: -5, 1: 3, 2: 3}[v] for v in g.node_ids()])
    for options in ({"labels": [-5, None]}, {"edge_labels": [-3]},
                    {"edge_labels": {(1, 0): -2**63}}):
        with pytest.raises(ParameterError, match="below -1"):
            Pattern([(0, 1)], **options)
    assert mining.count(g, Pattern([(0, 1)], labels=[-1, 3]), labels=labels) == 3
    assert mining.count(g, Pattern([(0, 1)], edge_labels=[-1]), edge_labels="kind") == 2



def test_induced_is_a_flag(graph_of):
    """``induced="no"`` counted induced 4-cycles (none in a 4-clique; a brute force finds
    three 4-cycles in it): a flag that is no bool is refused in one line by every entry."""
    src, dst = zip(*itertools.combinations(range(4), 2))
    g = graph_of(src, dst, 4)
    assert mining.count(g, "4-cycle") == 3
    for call in (mining.count, mining.matches, mining.iter_matches):
        with pytest.raises(ParameterError, match="induced"):
            call(g, "4-cycle", induced="no")


@pytest.mark.parametrize("k", [5, 6, 7, 8])
def test_larger_patterns(graph_of, k):
    """Random connected patterns of k nodes on random graphs small enough for brute
    force."""
    rng = np.random.default_rng(k)
    n = {5: 9, 6: 8, 7: 8, 8: 9}[k]
    src, dst = random_edges(n, 4 * n, k + 1)
    g = graph_of(src, dst, n)
    G = simple_graph(src, dst, n)
    for _ in range(2):
        T = nx.random_labeled_tree(k, seed=int(rng.integers(1 << 30)))
        extra = [e for e in itertools.combinations(range(k), 2)
                 if not T.has_edge(*e) and rng.random() < 0.25]
        check(g, G, Pattern(list(T.edges) + extra))
    check(g, G, Pattern.named(f"{k}-clique") if k <= 6 else Pattern.named("house"))


def test_patterns_and_errors():
    assert Pattern.named("4-cycle").automorphisms() == 8
    assert Pattern.named("3-star").automorphisms() == 6
    assert Pattern.named("6-clique").automorphisms() == 720
    for bad, match in (([], "at least one edge"), ([(0, 0)], "self-loop"),
                       ([(0, 1), (2, 3)], "connected"), ([(0, 2)], "numbered"),
                       ([(i, i + 1) for i in range(9)], "more than 8")):
        with pytest.raises(ParameterError, match=match):
            Pattern(bad)
    with pytest.raises(ParameterError, match="unknown pattern"):
        Pattern.named("pentagram")
    # node numbers and labels are integers: int() truncated 1.5 and parsed "1" before
    for edges, options in (([(0, 1.5)], {}), ([("0", "1")], {}), ([(True, 0)], {}),
                           ([(0, 1), (1, 2)], {"labels": [1.5, None, 2]}),
                           ([(0, 1), (1, 2)], {"labels": ["7", None, 2]}),
                           ([(0, 1), (1, 2)], {"edge_labels": [1.5, 2]}),
                           ([(0, 1), (1, 2)], {"anti_edges": [(0, 2.5)]})):
        with pytest.raises(ParameterError):
            Pattern(edges, **options)
    # a label past int64 raised OverflowError from the matcher's label array
    for options in ({"labels": [2**70, None, 0]}, {"labels": [1e30, None, 0]},
                    {"edge_labels": [-2**70, 0]}, {"edge_labels": {(0, 1): 2**64}}):
        with pytest.raises(ParameterError, match="not an int64"):
            Pattern([(0, 1), (1, 2)], **options)
    assert Pattern([(0, 1)], labels=[2**63 - 1, -1]).labels == (2**63 - 1, -1)
    with pytest.raises(ParameterError, match="directed"):  # "no" made an arc
        Pattern([(0, 1)], directed="no")
    assert Pattern(np.array([[0.0, 1.0], [1.0, 2.0]]), labels=np.array([3, -1, 3])) == \
        Pattern([(0, 1), (1, 2)], labels=[3, None, 3])


def test_induced_small_patterns_read_the_census(graph_of, monkeypatch):
    """An unlabelled induced 3- or 4-node pattern is counted by the motif census, not the
    matcher (which is made to fail here), with brute force's answer; a labelled one or one
    with anti-edges still goes to the matcher."""
    from graphsys.mining import match_kernels

    n = 12
    src, dst = random_edges(n, 30, 21)
    g, G = graph_of(src, dst, n), simple_graph(src, dst, n)
    want = {name: brute_matches(G, Pattern.named(name).edges, Pattern.named(name).num_nodes,
                                True) for name in SMALL if name != "edge"}

    def refuse(*args):
        raise AssertionError("the matcher ran")

    monkeypatch.setattr(match_kernels, "match_count", refuse)
    for name, value in want.items():
        assert mining.count(g, name, induced=True) == value, name
        assert mining.count(g, Pattern.named(name).edges, induced=True) == value, name
    with pytest.raises(AssertionError, match="the matcher ran"):
        mining.count(g, Pattern([(0, 1), (1, 2)], anti_edges=[(0, 2)]))


def test_a_match_call_counts_against_the_budget(graph_of):
    """count and matches built the symmetric rows beside the oriented view unsized (a
    traced peak of twice the limit); the call is now sized and refused in one line."""
    from graphsys import open_graph
    from graphsys.errors import GraphsysError
    from graphsys.storage.adjacency_index import build_index
    from graphsys.views.orient import build_bytes

    src, dst = random_edges(60, 300, 9)
    g = graph_of(src, dst, 60)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    want = mining.count(g, "4-cycle")
    tight = build_bytes(g) + 1
    for call in (lambda: mining.count(g, "4-cycle", memory_limit=tight),
                 lambda: mining.matches(g, "4-cycle", limit=5, memory_limit=tight)):
        with pytest.raises(GraphsysError, match=r"^building the matcher's symmetric rows in "
                                                r"RAM needs about"):
            call()
    assert mining.count(g, "4-cycle", memory_limit=64 * tight) == want


def test_the_mining_flags_refuse_what_is_no_bool(graph_of):
    """A flag was read by its truth: ``induced="no"`` counted induced matches,
    ``count_zeros="no"`` averaged over every node, ``directed="no"`` ran the directed
    triad census, ``largest="no"`` ranked the largest first. Each is now one line."""
    g = graph_of([0, 1, 2, 2], [1, 2, 0, 3], 4)
    calls = {"induced": (lambda f: mining.count(g, "wedge", induced=f),
                         lambda f: mining.matches(g, "wedge", induced=f),
                         lambda f: mining.iter_matches(g, "wedge", induced=f)),
             "per_node": (lambda f: mining.triangle_stats(g, per_node=f),),
             "count_zeros": (lambda f: mining.average_clustering(g, count_zeros=f),),
             "directed": (lambda f: mining.motifs(g, 3, directed=f),),
             "exact": (lambda f: mining.frequent_subgraphs(g, np.zeros(4, int), 1, exact=f),),
             "largest": (lambda f: mining.triangles(g).top(2, largest=f),)}
    for name, fs in calls.items():
        for call in fs:
            with pytest.raises(ParameterError, match=f"^{name} must be True or False"):
                call("no")
            call(np.False_)
    want = nx.average_clustering(simple_graph([0, 1, 2, 2], [1, 2, 0, 3], 4), count_zeros=False)
    assert mining.average_clustering(g, count_zeros=False) == pytest.approx(want)
