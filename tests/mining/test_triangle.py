"""Triangles, clustering, transitivity and the triad census against networkx, on random
graphs of every size up to 12 nodes (parallel edges, both directions, self-loops)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsys import mining, open_graph
from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.adjacency_index import build_index
from tests.mining.conftest import directed_graph, random_edges, simple_graph

SIZES = range(1, 13)


@pytest.fixture(params=["lowest", "middle"])
def kernel(request, monkeypatch):
    """Both triangle kernels: from the lowest vertex, from the middle one (the cost model
    picks one per graph; the answers must not depend on it)."""
    from graphsys.mining import outofcore

    monkeypatch.setattr(outofcore, "from_middle", lambda *a: request.param == "middle")
    return request.param


def check_triangles(g, G, **kwargs) -> None:
    want = nx.triangles(G)
    got = mining.triangles(g, **kwargs).to_dict()
    assert got == want
    assert mining.triangle_count(g, **kwargs) == sum(want.values()) // 3
    clus = mining.clustering(g, **kwargs).to_dict()
    ref = nx.clustering(G)
    assert clus.keys() == ref.keys()
    np.testing.assert_allclose([clus[v] for v in ref], list(ref.values()), atol=1e-12)
    assert mining.transitivity(g, **kwargs) == pytest.approx(nx.transitivity(G), abs=1e-12)
    assert mining.average_clustering(g, **kwargs) == pytest.approx(
        nx.average_clustering(G), abs=1e-12)


@pytest.mark.parametrize("n", SIZES)
def test_every_size_against_networkx(graph_of, n, kernel):
    for seed, density in ((n, 1.0), (n + 100, 2.5)):
        src, dst = random_edges(n, int(density * n) + 1, seed)
        g = graph_of(src, dst, n)
        check_triangles(g, simple_graph(src, dst, n))
        census = mining.triad_census(g)
        assert census == nx.triadic_census(directed_graph(src, dst, n)) if n >= 3 else True
        assert sum(census.values()) == n * (n - 1) * (n - 2) // 6


@settings(max_examples=15, deadline=None)
@given(n=st.integers(3, 12), m=st.integers(0, 60), seed=st.integers(0, 2**31),
       undirected=st.booleans())
def test_random_graphs(tmp_path_factory, n, m, seed, undirected):
    from tests.mining.conftest import store

    src, dst = random_edges(n, m, seed)
    g = store(tmp_path_factory.mktemp("g") / "g", src, dst, n, undirected=undirected)
    check_triangles(g, simple_graph(src, dst, n))
    D = simple_graph(src, dst, n).to_directed() if undirected else directed_graph(src, dst, n)
    assert mining.triad_census(g) == nx.triadic_census(D)


def test_complete_graph_census(graph_of):
    n = 6
    src, dst = np.triu_indices(n, 1)
    g = graph_of(src, dst, n, undirected=True)
    census = mining.triad_census(g)
    assert census["300"] == 20 and sum(census.values()) == 20
    assert mining.triangle_count(g) == 20
    assert mining.transitivity(g) == 1.0


def test_sym_index_and_buckets_agree(graph_of, kernel):
    src, dst = random_edges(12, 40, 7)
    g = graph_of(src, dst, 12)
    before = mining.triangles(g).values.copy()
    build_index(g, ("sym",))
    from graphsys.views import oriented

    g = open_graph(g.path)  # a Graph maps an index once: reopen to see the new one
    view = oriented(g)
    assert view.source == "sym index"
    np.testing.assert_array_equal(mining.triangles(g).values, before)


def test_out_of_core_blocks(graph_of, kernel):
    """Row blocks of every size, down to one row: the same counts."""
    from graphsys.mining.outofcore import triangles_by_blocks
    from graphsys.mining.parallel import Ranks

    n = 12
    src, dst = random_edges(n, 50, 3)
    g = graph_of(src, dst, n)
    build_index(g, ("sym",))
    G = simple_graph(src, dst, n)
    want = nx.triangles(G)
    for entries in (1, 2, 5, 1000):
        total, counts, degree = triangles_by_blocks(g, "default", per_vertex=True,
                                                      memory_limit=None, threads=2,
                                                      ranks=Ranks(), block_entries=entries)
        assert total == sum(want.values()) // 3
        assert dict(zip(g.node_ids().tolist(), counts.tolist())) == want
        assert dict(zip(g.node_ids().tolist(), degree.tolist())) == dict(G.degree)
    check_triangles(g, G, mode="out-of-core")


def test_out_of_core_tags_match_a_lookup(graph_of, monkeypatch):
    """Each outer entry's inner block, tagged once, is the block that holds its vertex
    (numpy's lookup); untagged (the range test alone), the counts are the same."""
    from graphsys.mining import outofcore
    from graphsys.mining.parallel import Ranks

    n = 12
    src, dst = random_edges(n, 50, 5)
    g = graph_of(src, dst, n)
    build_index(g, ("sym",))
    order = np.random.default_rng(0).permutation(n).astype(np.int64)
    aptr, aidx = np.array([0, 3, 3, 7]), np.array([1, 4, 11, 0, 5, 7, 9], np.int32)
    inner = [(0, 4), (4, 5), (5, 12)]
    starts = np.array([0, 4, 5])
    want = np.searchsorted(starts, order[aidx], side="right") - 1
    assert outofcore.tag_entries((aptr, aidx), order, inner).tolist() == want.tolist()
    assert len(outofcore.tag_entries((aptr, aidx), order, inner[:1])) == 0
    monkeypatch.setattr(outofcore, "from_middle", lambda *a: True)
    want = sum(nx.triangles(simple_graph(src, dst, n)).values()) // 3
    for most in (0, 255):
        monkeypatch.setattr(outofcore, "MAX_TAGGED_BLOCKS", most)
        for entries in (2, 5):
            total, _, _ = outofcore.triangles_by_blocks(
                g, "default", per_vertex=False, memory_limit=None, threads=2, ranks=Ranks(),
                block_entries=entries)
            assert total == want


def test_parallel_passes_on_a_small_graph(graph_of, kernel, monkeypatch):
    """The passes a small graph runs in one thread (the one-pass orientation, the count),
    forced parallel: the same answers."""
    from graphsys.mining import outofcore
    from graphsys.views import orient

    for module in (orient, outofcore):
        monkeypatch.setattr(module, "SERIAL_WORK", 0)
    monkeypatch.setattr(outofcore, "TRIANGLE_SERIAL_WORK", 0)
    src, dst = random_edges(12, 40, 11)
    g = graph_of(src, dst, 12)
    build_index(g, ("sym",))
    check_triangles(open_graph(g.path), simple_graph(src, dst, 12), threads=2)


def test_one_pass_orientation_refuses_an_asymmetric_index():
    """The one-pass orientation writes rows back to back: an index whose rows are not
    symmetric is refused in one line, not read past its end or counted wrong."""
    from graphsys.mining.outofcore import degree_key, orient_serial

    indptr = np.array([0, 2, 3, 4])  # 0: 1 2; 1: 0; 2: 1 (0 - 2 and 2 - 1 one-sided)
    indices = np.array([1, 2, 0, 1], np.int32)
    key, _ = degree_key(indptr)
    with pytest.raises(GraphsysError, match="not symmetric"):
        orient_serial(indptr, indices, key, np.empty(3, np.int64), np.dtype(np.int32))
    indptr, indices = np.array([0, 2, 4, 6]), np.array([1, 2, 0, 2, 0, 1], np.int32)
    degree = np.empty(3, np.int64)
    dptr, didx = orient_serial(indptr, indices, degree_key(indptr)[0], degree,
                               np.dtype(np.int32))
    assert dptr.tolist() == [0, 2, 3, 3] and didx.tolist() == [1, 2, 2]
    assert degree.tolist() == [2, 2, 2]


def test_out_of_core_needs_the_index(graph_of):
    g = graph_of([0, 1], [1, 2], 3)
    with pytest.raises(GraphsysError, match="--undirected"):
        mining.triangle_count(g, mode="out-of-core")


def test_budget_refusal_names_the_index_command(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    with pytest.raises(GraphsysError, match=r"needs about \d+ bytes, more than the 10 "
                                            r"bytes of memory_limit.*graphsys index .* "
                                            r"--undirected"):
        mining.triangle_count(g, memory_limit=10)


def test_budget_refusals_print_sizes_that_show(graph_of):
    """Issue 71: "needs about 0.00 GB, more than the 0.00 GB" - sizes in units that show
    them."""
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    build_index(g, ("sym",))
    with pytest.raises(GraphsysError, match=r"needs at least [\d.]+ MB of memory_limit for 3 "
                                            r"nodes, got 1 byte$"):
        mining.triangle_count(g, mode="out-of-core", memory_limit=1)


def test_a_time_view_says_why_it_maps_no_index(tmp_path):
    """Issue 71: out of core, a time view said the graph had no sym index (and named the
    command that builds it) when the stored graph had one: a view maps no stored index."""
    import pyarrow as pa

    import graphsys

    src, dst = [0, 1, 2, 0, 2, 3], [1, 2, 0, 3, 3, 1]
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": [1, 1, 1, 2, 2, 3]}),
                            tmp_path / "g", edge_columns=["timestamp"])
    build_index(g, ("sym",))
    view = open_graph(g.path, until=2)
    for call in (lambda: mining.triangle_count(view, mode="out-of-core"),
                 lambda: mining.triangle_count(view, memory_limit=1)):
        with pytest.raises(GraphsysError) as exc:
            call()
        msg = str(exc.value)
        assert "graphsys index" not in msg and "which the graph has not" not in msg
        assert "a view until 2 maps none of the indexes" in msg
    G = nx.Graph(list(zip(src[:5], dst[:5])))
    assert mining.triangle_count(view, mode="memory") == sum(nx.triangles(G).values()) // 3


def test_bad_parameters(graph_of):
    g = graph_of([0, 1, 2], [1, 2, 0], 3)
    with pytest.raises(ParameterError, match="mode"):
        mining.triangle_count(g, mode="gpu")
    with pytest.raises(ParameterError, match="threads"):
        mining.triangle_count(g, threads=0)
    with pytest.raises(ParameterError, match="memory_limit"):
        mining.triangle_count(g, memory_limit=-1)
    with pytest.raises(ParameterError, match="graph"):
        mining.triangle_count(42)


def test_a_repeated_count_moves_to_the_middle_kernel(graph_of, monkeypatch):
    """A graph first oriented for the kernel from the lowest vertex (the cheaper build and
    count together) is counted again from the middle vertex where that count alone is
    cheaper: the second count replaces the kept structure, later counts reuse it, and the
    answers do not change."""
    from graphsys import views
    from graphsys.mining import outofcore

    monkeypatch.setattr(outofcore, "from_middle", lambda d, o, build=True: not build)
    src, dst = random_edges(40, 200, 5)
    g = graph_of(src, dst, 40)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    G = simple_graph(src, dst, 40)
    assert mining.triangle_count(g) == sum(nx.triangles(G).values()) // 3
    first = views.held_bytes(g)
    check_triangles(g, G)
    assert views.held_bytes(g) > first
    calls = []
    monkeypatch.setattr(outofcore, "ranked_whole", lambda *a: calls.append(a))
    monkeypatch.setattr(outofcore, "orient_whole", lambda *a: calls.append(a))
    check_triangles(g, G)
    assert not calls


@pytest.mark.parametrize("sym", [False, True])
def test_a_repeated_count_derives_its_figures_once(graph_of, monkeypatch, sym):
    """A graph counted again reads what its first counts derived from the kept structure
    (the kernel the cost model picked, the work per root, the degrees by id and the
    triples): the cost model runs at most twice per structure (the build's question and
    the repeated count's), whatever the number of counts, and every answer stays
    networkx's."""
    from graphsys.mining import outofcore

    calls = []
    real = outofcore.from_middle
    monkeypatch.setattr(outofcore, "from_middle",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    src, dst = random_edges(60, 300, 9)
    g = graph_of(src, dst, 60)
    if sym:
        build_index(g, ("sym",))
        g = open_graph(g.path)
    G = simple_graph(src, dst, 60)
    for _ in range(3):
        check_triangles(g, G)
        stats = mining.triangle_stats(g)
        assert stats.degree.to_dict() == dict(G.degree)
        assert stats.transitivity == pytest.approx(nx.transitivity(G), abs=1e-12)
    assert 1 <= len(calls) <= 2


def test_the_kernels_count_per_vertex_alone_as_when_shared(graph_of, kernel):
    """Each triangle kernel counts per vertex the same whether one thread counts alone
    (plain adds at every probe, no branch) or the counts are shared (atomic adds per
    triangle): networkx's triangles, over the rows of ranks (values are row ids, no map)
    as over rows of ids."""
    from graphsys.mining import kernels, outofcore

    n = 30
    src, dst = random_edges(n, 220, 4)
    g = graph_of(src, dst, n)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    sym = g.adjacency_index(None, "sym")
    whole = outofcore.orient_whole(sym.indptr, sym.indices, 1)
    assert (whole.order is not None) == (kernel == "middle")
    want = nx.triangles(simple_graph(src, dst, n))
    aptr, aidx = whole.rows
    identity = np.zeros(0, np.int64)
    for alone in (True, False):
        counts = np.zeros(n, np.int64)
        marks = kernels.mark_array(1, n)[0]
        if whole.order is None:
            total = kernels.triangles_lowest_rows(aptr, aidx, 0, aptr, aidx, 0, n, identity,
                                                  0, n, marks, True, counts, alone)
        else:
            iptr, ipos, irow, _, iend = whole.inlists
            total = kernels.triangles_middle_rows(aptr, aidx, 0, aptr, aidx, 0, iptr, ipos,
                                                  irow, iend, identity, 0, n, marks, True,
                                                  counts, alone)
            by_id = np.empty_like(counts)
            by_id[whole.order] = counts
            counts = by_id
        assert total == sum(want.values()) // 3 and not marks.any()
        assert dict(zip(g.node_ids().tolist(), counts.tolist())) == want


def test_the_ranked_build():
    """The rows of ranks fill in ascending order with their in-lists (position, row end,
    row; an entry last in its row is left out) and work; an index whose rows are not
    symmetric is refused in one line, not written past a row."""
    from graphsys.mining.outofcore import rank_order, ranked_whole

    indptr, indices = np.array([0, 2, 4, 6]), np.array([1, 2, 0, 2, 0, 1], np.int32)
    order, rank = rank_order(np.diff(indptr), np.int64)
    whole = ranked_whole(indptr, indices, order, rank, np.array([2, 2, 2]),
                         np.array([2, 1, 0]))
    assert [a.tolist() for a in whole.rows] == [[0, 2, 3, 3], [1, 2, 2]]
    # only the entry before another in its row is in an in-list: 1 at position 0 of row 0
    assert [a.tolist() for a in whole.inlists] == [[0, 0, 1, 1], [0], [0], [2, 2, 0], [2]]
    indptr, indices = np.array([0, 2, 3, 4]), np.array([1, 2, 0, 1], np.int32)
    order, rank = rank_order(np.diff(indptr), np.int64)
    with pytest.raises(GraphsysError, match="not symmetric"):
        ranked_whole(indptr, indices, order, rank, np.array([2, 1, 1]), np.array([0, 1, 0]))


def test_the_rank_order_sorts_by_counting_as_argsort_does():
    from graphsys.mining.outofcore import rank_order

    rng = np.random.default_rng(3)
    for n, high in ((0, 1), (1, 1), (500, 9), (500, 500)):
        length = rng.integers(0, high, n)
        for dtype in (np.int64, np.int32):
            order, rank = rank_order(length, dtype)
            assert order.tolist() == np.argsort(length, kind="stable").tolist()
            assert rank.dtype == dtype and (rank[order] == np.arange(n)).all()


@pytest.mark.parametrize("ranked", [True, False])
def test_a_block_of_oriented_rows_is_the_views_build(ranked):
    """The out-of-core count loads its blocks with the oriented view's own row build
    (graphsys.views.orient's, by vertex id over a block): each block row is the vertex's
    higher neighbours, their ranks ascending or their ids as the index holds them, and the
    blocks together are the whole graph's rows, also in parallel passes."""
    from graphsys.mining.outofcore import load_block
    from graphsys.views.orient import _fill_higher

    rng = np.random.default_rng(5)
    n = 300
    dense = np.zeros((n, n), bool)
    src, dst = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    dense[src, dst] = dense[dst, src] = True
    np.fill_diagonal(dense, False)
    indptr = np.concatenate([[0], np.cumsum(dense.sum(1))]).astype(np.int64)
    indices = np.nonzero(dense)[1].astype(np.int32)
    rank = rng.permutation(n).astype(np.int64)
    want = [sorted(rank[v] for v in indices[indptr[u]:indptr[u + 1]] if rank[v] > rank[u])
            if ranked else [v for v in indices[indptr[u]:indptr[u + 1]] if rank[v] > rank[u]]
            for u in range(n)]
    dptr = np.concatenate([[0], np.cumsum([len(r) for r in want])]).astype(np.int64)
    for lo, hi in ((0, n), (0, 1), (17, 200), (299, 300)):
        bptr, bidx = load_block(indptr, indices, rank, dptr, lo, hi, np.int64, ranked)
        assert [bidx[bptr[i]:bptr[i + 1]].tolist() for i in range(hi - lo)] == want[lo:hi]
    whole = np.empty(int(dptr[-1]), np.int64)
    _fill_higher(indptr, indices, rank, dptr, whole, ranked, ids=not ranked, block=(0, n))
    assert whole.tolist() == [x for row in want for x in row]


def test_progress_bool_or_callable_and_one_execution(graph_of, monkeypatch, capsys):
    """``progress``: True shows the block pairs of an out-of-core count, a callable gets a
    Step per pair; ``execution=`` stands for the keywords, refused with them."""
    from graphsys import Execution, progress
    from graphsys.progress import Step

    monkeypatch.setattr(progress, "interval", lambda: 0.0)
    src, dst = random_edges(12, 50, 3)
    g = graph_of(src, dst, 12)
    build_index(g, ("sym",))
    g = open_graph(g.path)
    want = mining.triangle_count(g, mode="memory")
    assert mining.triangle_count(g, mode="out-of-core", progress=True) == want
    assert "triangles out of core: " in capsys.readouterr().err
    steps = []
    assert mining.triangle_count(g, mode="out-of-core", progress=steps.append) == want
    assert steps and all(isinstance(s, Step) and s.unit == "block pair" for s in steps)
    assert steps[-1].done == steps[-1].total
    run = Execution(mode="out-of-core", threads=1)
    assert mining.triangle_stats(g, execution=run).count == want
    with pytest.raises(ParameterError, match="execution given with mode"):
        mining.triangle_stats(g, mode="memory", execution=run)
    with pytest.raises(ParameterError, match="triangle counting runs on the CPU"):
        mining.triangle_stats(g, execution=Execution(device="cuda"))
    with pytest.raises(ParameterError, match="^progress must be"):
        mining.triangle_count(g, progress="yes")
