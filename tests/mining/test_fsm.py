"""Frequent subgraph mining with MNI support against a brute force: every connected set of
up to ``k`` edges of a small random labelled graph gives a labelled pattern (a canonical
form over every ordering of its nodes), and each pattern's MNI support is computed from
networkx's VF2 subgraph monomorphisms (every embedding, each node's distinct images)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

from graphsys import mining
from graphsys.errors import ParameterError
from graphsys.mining.fsm import canonical
from tests.mining.conftest import random_edges, simple_graph


def brute_form(edges, labels) -> tuple:
    """Smallest (labels, edges) over every relabelling of the nodes (independent of
    :func:`graphsys.mining.fsm.canonical`)."""
    k = len(labels)
    best = None
    for perm in itertools.permutations(range(k)):
        lab = [None] * k
        for v in range(k):
            lab[perm[v]] = labels[v]
        code = (tuple(lab), tuple(sorted(tuple(sorted((perm[a], perm[b]))) for a, b in edges)))
        best = code if best is None or code < best else best
    return best


def brute_mni(G: nx.Graph, label: dict, edges, labels) -> int:
    P = nx.Graph()
    P.add_nodes_from((v, {"label": lab}) for v, lab in enumerate(labels))
    P.add_edges_from(edges)
    nx.set_node_attributes(G, label, "label")
    gm = GraphMatcher(G, P, node_match=lambda a, b: a["label"] == b["label"])
    images = {v: set() for v in range(len(labels))}
    for mapping in gm.subgraph_monomorphisms_iter():
        for g_node, p_node in mapping.items():
            images[p_node].add(g_node)
    return min(len(s) for s in images.values())


def brute_fsm(G: nx.Graph, label: dict, support: int, max_edges: int) -> dict:
    edges = list(G.edges)
    patterns = set()
    for size in range(1, max_edges + 1):
        for subset in itertools.combinations(edges, size):
            H = nx.Graph(list(subset))
            if not nx.is_connected(H):
                continue
            nodes = sorted(H.nodes)
            index = {v: i for i, v in enumerate(nodes)}
            patterns.add(brute_form([(index[a], index[b]) for a, b in subset],
                                    [label[v] for v in nodes]))
    out = {}
    for labs, pedges in patterns:
        s = brute_mni(G, label, pedges, labs)
        if s >= support:
            out[(labs, pedges)] = s
    return out


def got_fsm(g, labels, support, max_edges, exact=True) -> dict:
    out = {}
    for f in mining.frequent_subgraphs(g, labels, support, max_edges=max_edges, exact=exact):
        key = brute_form(f.pattern.edges, f.pattern.labels)
        assert key not in out            # each pattern once
        out[key] = f.support
    return out


@pytest.mark.parametrize("n,m,nlabels,support,max_edges,seed", [
    (8, 14, 2, 2, 3, 1), (9, 16, 2, 3, 3, 2), (10, 18, 3, 2, 3, 3), (10, 15, 2, 2, 4, 4),
    (12, 20, 3, 3, 3, 5), (7, 16, 1, 3, 4, 6), (11, 22, 2, 1, 2, 7)])
def test_fsm_equals_brute_force(graph_of, n, m, nlabels, support, max_edges, seed):
    src, dst = random_edges(n, m, seed)
    g, G = graph_of(src, dst, n), simple_graph(src, dst, n)
    G.remove_nodes_from([v for v in list(G) if G.degree(v) == 0])
    rng = np.random.default_rng(seed)
    by_node = rng.integers(0, nlabels, n)
    label = {v: int(by_node[v]) for v in G}
    labels = by_node[g.node_ids()]                   # one per node, internal order
    want = brute_fsm(G, label, support, max_edges)
    assert got_fsm(g, labels, support, max_edges) == want
    early = got_fsm(g, labels, support, max_edges, exact=False)
    assert early.keys() == want.keys() and all(s >= support for s in early.values())


def test_canonical_is_an_isomorphism_invariant():
    rng = np.random.default_rng(0)
    for _ in range(50):
        k = int(rng.integers(2, 6))
        edges = [(i, int(rng.integers(0, i))) for i in range(1, k)]   # a random tree
        edges += [e for e in itertools.combinations(range(k), 2) if rng.random() < 0.3]
        edges = sorted({(min(a, b), max(a, b)) for a, b in edges})
        labels = [int(x) for x in rng.integers(0, 2, k)]
        perm = [int(x) for x in rng.permutation(k)]
        moved = [(perm[a], perm[b]) for a, b in edges]
        moved_labels = [0] * k
        for v in range(k):
            moved_labels[perm[v]] = labels[v]
        assert canonical(edges, labels) == canonical(moved, moved_labels)
        assert (brute_form(edges, labels) == brute_form(moved, moved_labels))


def test_label_column_and_refusals(graph_of, tmp_path):
    import graphsys

    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    g = graphsys.from_numpy(src, dst, tmp_path / "c", num_nodes=4,
                            node_columns={"kind": np.array([0, 1, 0, 1])})
    found = mining.frequent_subgraphs(g, "kind", 2, max_edges=4)
    assert [(len(f.pattern.edges), f.support) for f in found] == [(1, 2), (2, 2), (2, 2),
                                                                   (3, 2), (4, 2)]
    assert found[-1].to_dict() == {"edges": [[0, 2], [0, 3], [1, 2], [1, 3]],
                                   "labels": [0, 0, 1, 1], "support": 2}
    with pytest.raises(ParameterError, match="support"):
        mining.frequent_subgraphs(g, "kind", 0)
    with pytest.raises(ParameterError, match="max_edges"):
        mining.frequent_subgraphs(g, "kind", 1, max_edges=True)
    with pytest.raises(ParameterError, match="non-negative"):
        mining.frequent_subgraphs(g, np.array([-1, 0, 0, 1]), 1)
    with pytest.raises(ParameterError, match="labels"):
        mining.frequent_subgraphs(g, np.array([0, 1]), 1)


def test_fsm_counts_against_the_budget_and_reads_its_pairs_in_chunks(graph_of):
    """The one-edge patterns came from one np.unique(axis=0) over every row entry (370 MB
    for a 2M-edge graph whose oriented view takes 16 MB), beside rows never sized: the
    pairs are now read in chunks, and the call is sized and refused in one line."""
    from graphsys import open_graph
    from graphsys.errors import GraphsysError
    from graphsys.mining import fsm
    from graphsys.storage.adjacency_index import build_index
    from graphsys.views import view
    from graphsys.views.orient import build_bytes

    src, dst = random_edges(40, 150, 8)
    g = graph_of(src, dst, 40)
    labels = np.arange(40) % 3
    oriented = view(g, "oriented")
    rows = fsm._rows(g, oriented, None, None, None)
    node_labels = labels[oriented.order]
    assert fsm._edge_kinds(oriented, node_labels, rows, chunk=7) == \
        fsm._edge_kinds(oriented, node_labels, rows)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    want = [f.to_dict() for f in mining.frequent_subgraphs(g, labels, 3, max_edges=2)]
    tight = build_bytes(g) + 1
    with pytest.raises(GraphsysError, match=r"^building frequent subgraph mining's "
                                            r"symmetric rows in RAM needs about"):
        mining.frequent_subgraphs(g, labels, 3, max_edges=2, memory_limit=tight)
    assert [f.to_dict() for f in mining.frequent_subgraphs(
        g, labels, 3, max_edges=2, memory_limit=1 << 26)] == want
