"""The one graph view layer: each kind equal to an independent reference, mapped or built;
one budget rule with one refusal; one cache per opened graph, shared by the engines."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import graphsys
from graphsys import measures, mining, open_graph, views
from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.adjacency_index import build_index
from tests.mining.conftest import random_edges


def _dense(rows, n: int) -> np.ndarray:
    """The 0/1 matrix of CSR rows (repeats collapsed)."""
    m = sp.csr_matrix((np.ones(len(rows.indices)), np.asarray(rows.indices, np.int64),
                       rows.indptr), shape=(n, n)).toarray()
    return (m > 0).astype(int)


def _reference(g, src, dst) -> np.ndarray:
    """The directed 0/1 matrix over internal ids, from the original edges."""
    n = g.num_nodes()
    a = np.zeros((n, n), int)
    a[g.to_internal(src), g.to_internal(dst)] = 1
    return a


@pytest.mark.parametrize("indexed", [False, True])
def test_each_kind_equals_the_reference(graph_of, indexed):
    src, dst = random_edges(25, 90, 3)
    g = graph_of(src, dst, 25)
    if indexed:
        build_index(g, ("csr", "csc", "sym"))
        g = open_graph(g.path)
    a = _reference(g, src, dst)
    n = g.num_nodes()
    assert (_dense(views.view(g, "out"), n) == a).all()
    assert (_dense(views.view(g, "in"), n) == a.T).all()
    sym = views.view(g, "sym")
    assert (_dense(sym, n) == ((a + a.T) > 0)).all()
    rows = [sym.indices[sym.indptr[u]:sym.indptr[u + 1]] for u in range(n)]
    assert all((np.diff(r) > 0).all() for r in rows)  # ascending, each neighbour once
    dag = views.view(g, "oriented")
    simple = nx.Graph(zip(src.tolist(), dst.tolist()))
    simple.remove_edges_from(nx.selfloop_edges(simple))
    assert dag.num_edges == simple.number_of_edges()
    want = dict(simple.degree())
    assert {int(k): int(d) for k, d in zip(g.to_original(dag.order), dag.degree)
            if int(k) in want} == want


def test_weights_of_the_out_view(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3, weight=np.array([0.5, 1.5, 2.5]))
    out = views.view(g, "out", weights=True)
    assert sorted(out.weight.tolist()) == [0.5, 1.5, 2.5]
    assert views.view(g, "out").weight is None


def test_sym_weights_are_the_same_mapped_or_built(graph_of):
    """An undirected deduplicated edge set's CSR index serves the ``sym`` rows; its weights
    (each stored direction once) were read as the merged entries, half of what the build
    and the ``sym`` index sum: 1 and 3 for the edges 0-1 (1.0) and 1-2 (3.0) after
    ``graphsys index``, 2 and 6 before it and with ``--undirected``."""
    from graphsys.sampling.adjacency import homogeneous_adjacency

    g = graph_of([0, 1], [1, 2], 3, weight=np.array([1.0, 3.0]), undirected=True,
                 dedupe=True, partitions=1)
    want = [2.0, 2.0, 6.0, 6.0]
    assert g.view("sym", weights=True).weight.tolist() == want
    for kinds in (("csr",), ("sym",)):
        build_index(g, kinds)
        g = open_graph(g.path)
        assert g.view("sym", weights=True).weight.tolist() == want, kinds
        assert homogeneous_adjacency(g).weight.tolist() == want, kinds


def test_the_samplers_symmetric_rows_merge_the_relations_of_a_pair(tmp_path):
    """The CSR index of an undirected deduplicated edge set of two relations holds a pair
    once per relation; the samplers' symmetric rows read it as they were (node 0: [1, 1]),
    where the ``sym`` view merges them (node 0: [1])."""
    import pyarrow as pa

    from graphsys.sampling.adjacency import homogeneous_adjacency
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    edges = pa.table({"src": [0, 0, 1], "dst": [1, 1, 2], "rel": ["a", "b", "a"]})
    ingest_sources([EdgeSource(table=edges, src_col="src", dst_col="dst", rel_col="rel")],
                   tmp_path / "g", IngestOptions(undirected=True, dedupe=True))
    build_index(open_graph(tmp_path / "g"), ("csr",))
    adj = homogeneous_adjacency(open_graph(tmp_path / "g"))
    assert (adj.indptr.tolist(), adj.indices.tolist()) == ([0, 1, 3, 4], [1, 0, 2, 1])


def test_a_build_over_the_budget_is_refused_in_one_line(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    # the oriented view from a sym index would not fit 10 bytes either: no index named
    for kind, flag in (("out", "--csr"), ("in", "--csc"), ("sym", "--undirected"),
                       ("oriented", "no stored index can serve it")):
        with pytest.raises(GraphsysError) as err:
            views.view(g, kind, memory_limit=10)
        message = str(err.value)
        assert "\n" not in message
        assert message.startswith("building ") and "more than the 10 bytes of memory_limit" \
            in message
        assert flag in message and (kind == "oriented") != (f"graphsys index {g.path}"
                                                            in message)
    assert views.held_bytes(g) == 0
    with pytest.raises(ParameterError, match="memory_limit"):
        views.view(g, "out", memory_limit=0)
    with pytest.raises(ParameterError, match="kind"):
        views.view(g, "both")


def test_a_mapped_view_needs_no_budget(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    build_index(g, ("csr", "sym"))
    g = open_graph(g.path)
    assert views.view(g, "out", memory_limit=1).indptr.tolist() == [0, 1, 2, 3]
    assert views.view(g, "sym", memory_limit=1).num_nodes == 3
    assert views.held_bytes(g) == 0


def test_a_time_view_refusal_says_it_maps_no_index(tmp_path):
    import pyarrow as pa

    edges = pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "timestamp": [10, 20, 30]})
    graphsys.from_arrow(edges, tmp_path / "g", edge_columns=["timestamp"])
    view = open_graph(tmp_path / "g", until=25)
    with pytest.raises(GraphsysError, match="ingest the view as a graph of its own"):
        views.view(view, "sym", memory_limit=10)
    assert views.view(view, "sym").indices.tolist() == [1, 0, 2, 1]


def test_built_views_are_kept_once_per_opened_graph(graph_of, monkeypatch):
    src, dst = random_edges(20, 60, 5)
    g = graph_of(src, dst, 20)
    out = views.view(g, "out")
    assert views.view(g, "out") is out and views.held_bytes(g) > 0
    assert views.view(open_graph(g.path), "out") is not out  # another opened graph
    # oriented from the kept sym rows (the cheapest neighbour), not from the buckets
    calls = []
    monkeypatch.setattr(views, "oriented", lambda *a, **k: calls.append(1))
    sym = views.view(g, "sym")
    dag = views.view(g, "oriented")
    assert calls == [] and dag.num_edges == (len(sym.indices) - np.count_nonzero(
        np.repeat(np.arange(20), np.diff(sym.indptr)) == sym.indices)) // 2
    views.forget(g)
    assert views.held_bytes(g) == 0 and views.view(g, "out") is not out


def test_the_engines_share_the_one_cache(graph_of):
    """The measures' view and mining's oriented graph sit in the same cache of the opened
    graph: forgetting it drops both, and the answers stay those of networkx."""
    from graphsys.measures.view import undirected_view

    src, dst = random_edges(20, 70, 8)
    g = graph_of(src, dst, 20)
    simple = nx.Graph(zip(src.tolist(), dst.tolist()))
    simple.remove_edges_from(nx.selfloop_edges(simple))
    first = undirected_view(g)
    assert undirected_view(g) is first
    assert mining.triangle_count(g) == sum(nx.triangles(simple).values()) // 3
    held = views.held_bytes(g)
    assert held > 0
    views.forget(g)
    assert views.held_bytes(g) == 0 and undirected_view(g) is not first
    u, v = int(src[0]), int(dst[1])
    assert sorted(measures.common_neighbors(g, u, v).tolist()) == sorted(
        nx.common_neighbors(simple, u, v))


def test_a_graph_of_several_entity_types_is_refused_in_one_line(tmp_path):
    import pyarrow as pa

    from graphsys.measures.view import undirected_view
    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

    (tmp_path / "e.tsv").write_text("u1\ti1\nu2\ti1\n")
    ingest_sources([EdgeSource([tmp_path / "e.tsv"], relation="rated", header=False)],
                   tmp_path / "g", IngestOptions(relation_types=[
                       RelationType("rated", "user", "item")]),
                   nodes=[NodeSource(pa.table({"id": ["u1", "u2"]}), "user"),
                          NodeSource(pa.table({"id": ["i1"]}), "item")])
    g = open_graph(tmp_path / "g")
    for call in (lambda: views.view(g, "sym"), lambda: views.view(g, "oriented"),
                 lambda: undirected_view(g), lambda: mining.triangle_count(g)):
        with pytest.raises(GraphsysError, match=r"needs a graph of one entity type; .* has "
                                                r"2 \("):
            call()


@pytest.mark.parametrize("relations,indexed", [(3, False), (1, False), (1, True)])
def test_the_typed_view_equals_a_brute_force_build(tmp_path, relations, indexed):
    """Each relation's out and in rows (type-local rows, global neighbours) against the
    original edge list: several relations built, one sliced from the out/in rows (mapped
    from the csr/csc indexes, or built)."""
    import pyarrow as pa

    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    rels = [RelationType("rates", "user", "item"), RelationType("follows", "user", "user"),
            RelationType("similar", "item", "item")][:relations]
    rng = np.random.default_rng(7)
    size = {"user": 20, "item": 15}
    edges = [(k, int(rng.integers(0, size[rels[k].lhs])), int(rng.integers(
        0, size[rels[k].rhs]))) for k in rng.integers(0, relations, 300)]
    table = pa.table({"src": [s for _, s, _ in edges], "dst": [d for _, _, d in edges],
                      "rel": [rels[k].name for k, _, _ in edges]})
    ingest_sources([EdgeSource(table=table, src_col="src", dst_col="dst", rel_col="rel")],
                   tmp_path / "g", IngestOptions(relation_types=rels, partitions=2))
    g = open_graph(tmp_path / "g")
    if indexed:
        build_index(g, ("csr", "csc"))
        g = open_graph(tmp_path / "g")
    typed = g.view("typed")
    toff = g.type_offsets
    for k, r in enumerate(rels):
        for rows, row_t, col_t, flip in ((typed.csr[k], r.lhs, r.rhs, False),
                                         (typed.csc[k], r.rhs, r.lhs, True)):
            want = [[] for _ in range(g.num_nodes(row_t))]
            for kk, s, d in edges:
                if kk == k:
                    a, b = (d, s) if flip else (s, d)
                    want[int(g.to_internal(a, row_t)[0])].append(
                        toff[col_t] + int(g.to_internal(b, col_t)[0]))
            got = [rows.indices[rows.indptr[v]:rows.indptr[v + 1]].tolist()
                   for v in range(len(want))]
            assert got == [sorted(w) for w in want]  # ascending, parallel edges kept
    if indexed:
        assert np.shares_memory(typed.csc[0].indices, g.adjacency_index(kind="csc").indices)
    assert (g.view("typed") is typed) == (relations > 1)  # several: built once and kept


def test_an_oriented_build_refusal_names_what_the_sym_index_does_for_the_call(graph_of):
    """Without a ``sym`` index, a refused clique or motif count said "build its index ...
    and triangles run out of core": cliques do not run out of core, and with the index
    their ordering (and the degeneracy view beside it) may still be over the budget. Now
    a triangle count names the index and its out-of-core run; any other call names the
    index only where its build from the index fits the budget, with that size."""
    from graphsys.mining.clique import DEGENERACY_BYTES_PER_NODE, DEGENERACY_ENTRIES_PER_EDGE
    from graphsys.views.orient import BYTES_PER_EDGE, BYTES_PER_NODE, build_bytes

    def refusal(call, *args, **options) -> str:
        with pytest.raises(GraphsysError) as exc:
            call(*args, **options)
        return str(exc.value)

    for n, m in ((60, 300), (10, 1000)):  # the index too large for cliques / small enough
        g = graph_of(*random_edges(n, m, 5), n)
        cmd = f"graphsys index {g.path} --undirected"
        tight = build_bytes(g) - 1  # the build from the buckets does not fit
        with_index = (BYTES_PER_EDGE + DEGENERACY_ENTRIES_PER_EDGE * 4) * m \
            + (BYTES_PER_NODE + DEGENERACY_BYTES_PER_NODE) * n
        said = refusal(mining.clique_count, g, 3, memory_limit=tight)
        assert "triangles" not in said
        if with_index > tight:
            assert said.endswith("no stored index can serve it: raise memory_limit or use a "
                                 "machine with more RAM")
        else:
            assert said.endswith(f"(the call then needs about {with_index / 1000:.1f} KB): "
                                 f"{cmd}")
        assert "triangles" not in refusal(mining.count, g, "square", memory_limit=tight)
        assert refusal(mining.triangle_count, g, memory_limit=100).endswith(
            f"and triangles run out of core: {cmd}")
    build_index(g, ("sym",))  # the index named: the clique count now fits
    assert mining.clique_count(open_graph(g.path), 3, memory_limit=tight) == \
        mining.clique_count(g, 3)
