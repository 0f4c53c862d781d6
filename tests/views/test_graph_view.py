"""``Graph.view(kind)``, the public entry of the view layer: each kind equal to scipy's
construction on a small graph and on a real one, kept once per opened graph, refused over
the budget in one line; the engines' rows (BSP, samplers) come from the same layer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys import open_graph, views
from graphsys.errors import GraphsysError, ParameterError
from graphsys.sampling.adjacency import from_coo, homogeneous_adjacency
from graphsys.storage.adjacency_index import build_index
from graphsys.views.rows import rows
from tests.mining.conftest import random_edges

KINDS = ("out", "in", "sym", "oriented")


def _edges(g) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every stored edge in internal ids, and its weight (None when unweighted)."""
    parts = list(g.iter_edges())
    s = np.concatenate([p[0] for p in parts])
    d = np.concatenate([p[1] for p in parts])
    w = None if parts[0][3] is None else np.concatenate([p[3] for p in parts])
    return s, d, w


def _matrix(indptr, indices, n: int) -> sp.csr_matrix:
    """The rows with each entry counted (parallel entries summed)."""
    m = sp.csr_matrix((np.ones(len(indices)), np.asarray(indices, np.int64),
                       np.asarray(indptr, np.int64)), shape=(n, n))
    m.sum_duplicates()
    return m


def _check_kinds(g) -> None:
    """Each kind of ``g.view`` against scipy's construction from the stored edges."""
    s, d, _ = _edges(g)
    n = g.num_nodes()
    a = sp.csr_matrix((np.ones(len(s)), (s, d)), shape=(n, n))  # parallel edges counted
    out, inn, sym, dag = (g.view(kind) for kind in KINDS)
    assert (_matrix(out.indptr, out.indices, n) != a).nnz == 0
    assert (_matrix(inn.indptr, inn.indices, n) != a.T.tocsr()).nnz == 0
    pattern = ((a + a.T) > 0).astype(np.float64).tocsr()
    pattern.sort_indices()
    assert np.array_equal(sym.indptr, pattern.indptr)
    assert np.array_equal(sym.indices, pattern.indices)  # ascending, each neighbour once
    # oriented: the simple pattern without self-loops, each edge in the row of its lower
    # rank (degree order, ties by id)
    simple = pattern - sp.diags(pattern.diagonal())
    simple.eliminate_zeros()
    degree = np.diff(simple.indptr)
    assert np.array_equal(dag.order, np.argsort(degree, kind="stable"))
    assert np.array_equal(dag.degree, degree[dag.order])
    rank = np.empty(n, np.int64)
    rank[dag.order] = np.arange(n)
    coo = sp.triu(simple).tocoo()
    lo, hi = np.minimum(rank[coo.row], rank[coo.col]), np.maximum(rank[coo.row], rank[coo.col])
    want = sp.csr_matrix((np.ones(len(lo)), (lo, hi)), shape=(n, n))
    want.sort_indices()
    assert np.array_equal(dag.indptr, want.indptr)
    assert np.array_equal(dag.indices, want.indices)


@pytest.mark.parametrize("indexed", [False, True])
def test_each_kind_equals_scipy(graph_of, indexed):
    src, dst = random_edges(30, 140, 11)
    g = graph_of(src, dst, 30)
    if indexed:
        build_index(g, ("csr", "csc", "sym"))
        g = open_graph(g.path)
    _check_kinds(g)


def test_each_kind_equals_scipy_on_a_real_graph(mirror, tmp_path):
    from graphsys.datasets import load_dataset

    if not (mirror / "snap" / "ca-GrQc.txt.gz").exists():
        pytest.skip("ca-GrQc not in the dataset mirror")
    g = load_dataset("ca-grqc", tmp_path / "g", partitions=3, cache=tmp_path / "cache",
                     mirror=mirror)
    _check_kinds(g)


def test_a_second_call_returns_the_kept_view(graph_of):
    g = graph_of(*random_edges(20, 60, 2), 20)
    first = {kind: g.view(kind) for kind in KINDS}
    assert all(g.view(kind) is first[kind] for kind in KINDS)
    assert g.view("out") is views.view(g, "out")  # one cache, whichever entry is called
    assert views.held_bytes(g) > 0
    other = open_graph(g.path)  # one cache per opened graph
    assert all(other.view(kind) is not first[kind] for kind in KINDS)


def test_over_the_budget_one_line_names_the_index_command(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    for kind, flag in (("out", "--csr"), ("in", "--csc"), ("sym", "--undirected"),
                       ("oriented", None)):
        with pytest.raises(GraphsysError) as err:
            g.view(kind, memory_limit=16)
        message = str(err.value)
        assert "\n" not in message and "more than the 16 bytes of memory_limit" in message
        if flag is None:  # an oriented build from the sym index would not fit either
            assert "graphsys index" not in message and "raise memory_limit" in message
        else:
            assert f"graphsys index {g.path}" in message and flag in message
    assert views.held_bytes(g) == 0


def test_an_unknown_kind_is_refused_in_one_line(graph_of):
    g = graph_of([0, 1], [1, 2], 3)
    with pytest.raises(GraphsysError, match=r"unknown graph view 'both' \(known: in, "
                                            r"oriented, out, sym, temporal, typed\)"):
        g.view("both")


@pytest.mark.parametrize("kind,options", [
    ("oriented", {"weights": True}), ("typed", {"weights": True}),
    ("out", {"directions": True}), ("sym", {"sort": False}), ("temporal", {"beside": 8})])
def test_an_option_of_another_kind_is_refused_in_one_line(graph_of, kind, options):
    """``view("oriented", weights=True)`` returned the view without weights, silently."""
    g = graph_of([0, 1], [1, 2], 3)
    with pytest.raises(ParameterError, match=rf"{next(iter(options))} applies to kind .* "
                                             rf"only, not '{kind}'"):
        g.view(kind, **options)


def test_a_view_flag_that_is_no_bool_is_refused_in_one_line(graph_of):
    """``view("out", weights="no")`` was read as weights=True; ``sort="no"`` of an oriented
    view was read as sorted."""
    g = graph_of([0, 1], [1, 2], 3)
    for kind, name in (("out", "weights"), ("oriented", "directions"), ("oriented", "sort")):
        with pytest.raises(ParameterError, match=f"^{name} must be True or False"):
            views.view(g, kind, **{name: "no"})
    assert views.view(g, "out", weights=np.False_) is views.view(g, "out")


def test_a_negative_beside_is_refused_in_one_line(graph_of):
    """``beside=-5`` let a kept oriented view be used 5 bytes past the budget."""
    g = graph_of([0, 1], [1, 2], 3)
    for bad in (-5, 1.5, True):
        with pytest.raises(ParameterError, match="beside must be a non-negative integer"):
            g.view("oriented", beside=bad)


def test_the_bsp_rows_come_from_the_view_layer_and_stay_the_runs(graph_of):
    """The BSP engine's rows are the view layer's build (int32 ids, as an index holds
    them), handed over unkept and writable: the engine renumbers them in place."""
    from graphsys.bsp.edges import build_adjacency

    g = graph_of(*random_edges(25, 80, 6), 25, weight=np.linspace(0.5, 2.0, 80))
    for kind, name in (("csr", "out"), ("csc", "in")):
        indptr, indices, weight = build_adjacency(g, "default", kind, True)
        kept = g.view(name, weights=True)
        assert indices.dtype == np.int32 and kept.indices.dtype == np.int32
        assert np.array_equal(indptr, kept.indptr) and np.array_equal(indices, kept.indices)
        assert np.array_equal(weight, kept.weight)
        assert indices.flags.writeable and indices is not kept.indices
    views.forget(g)
    rows(g, "default", "out", False)
    assert views.held_bytes(g) == 0


def test_the_samplers_symmetric_view_is_the_sym_view(graph_of):
    """The samplers' symmetric adjacency of a one-type graph is the kept ``sym`` view,
    with the weights of the merged edges summed as a COO build sums them."""
    src, dst = random_edges(25, 90, 7)
    w = np.linspace(0.25, 3.0, 90).astype(np.float32)
    g = graph_of(src, dst, 25, weight=w)
    s, d, sw = _edges(g)
    want = from_coo(np.concatenate([s, d]), np.concatenate([d, s]), 25, 25,
                    np.concatenate([sw, sw]))
    got = homogeneous_adjacency(g, symmetric=True)
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices,
                                                                       want.indices)
    np.testing.assert_allclose(got.weight, want.weight, rtol=1e-6)
    assert homogeneous_adjacency(g, symmetric=True).indices is got.indices  # kept
    assert got.indices is g.view("sym", weights=True).indices


def test_the_temporal_view_holds_every_nodes_events_in_time_order(tmp_path):
    import pyarrow as pa

    import graphsys

    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 12, 60), rng.integers(0, 12, 60)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    stamps = rng.permutation(len(src)) * 10
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": stamps}),
                            tmp_path / "g", edge_columns=["timestamp"], partitions=2)
    s, d, _ = _edges(g)
    t = np.concatenate(list(g.edge_column("timestamp")))
    adj = g.view("temporal")
    assert g.view("temporal") is adj and views.held_bytes(g) > 0
    for v in range(g.num_nodes()):
        mine = np.flatnonzero((s == v) | (d == v))
        mine = mine[np.argsort(t[mine], kind="stable")]
        lo, hi = adj.indptr[v], adj.indptr[v + 1]
        assert adj.eid[lo:hi].tolist() == mine.tolist()
        assert adj.time[lo:hi].tolist() == t[mine].tolist()
        assert adj.indices[lo:hi].tolist() == np.where(s[mine] == v, d[mine], s[mine]).tolist()
    with pytest.raises(GraphsysError) as err:
        open_graph(g.path).view("temporal", memory_limit=16)
    assert "\n" not in str(err.value) and f"graphsys index {g.path} --temporal" in str(err.value)
