"""PageRank's fused in-memory loop (and its breadth-first renumbering) against the engine's
superstep loop."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys import bsp, open_graph
from graphsys.bsp.algorithms.pagerank import PageRankRows
from graphsys.bsp.kernels_pagerank import bfs_order, renumber
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest

from .conftest import GRAPH_KEYS


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_fused_loop_matches_supersteps(graphs, key):
    g = graphs[key].graph
    for kwargs in ({"tol": 1e-10}, {"tol": 1e-30, "max_iters": 4}):
        fused = bsp.pagerank(g, **kwargs)
        loop = bsp.pagerank(g, fuse=False, **kwargs)
        np.testing.assert_allclose(fused.values, loop.values, rtol=1e-12, atol=1e-15)
        assert fused.stats.method.startswith("fused-pagerank") and loop.stats.method == "supersteps"
        assert fused.stats.num_supersteps == loop.stats.num_supersteps
        assert fused.stats.converged == loop.stats.converged
        assert all(s.fused and s.direction == "pull" for s in fused.stats.supersteps)


def test_personalized_and_vector_programs(graphs):
    g = graphs["directed-p3"].graph
    ppr = bsp.personalized_pagerank(g, [0, 5], tol=1e-10)
    loop = bsp.personalized_pagerank(g, [0, 5], tol=1e-10, fuse=False)
    np.testing.assert_allclose(ppr.values, loop.values, rtol=1e-12, atol=1e-15)
    assert ppr.stats.method.startswith("fused-pagerank")
    rows = bsp.run(g, PageRankRows(tol=1e-10), max_iters=100)
    assert rows.stats.method == "supersteps"  # a vector program keeps the engine's loop


def test_bfs_order_and_renumber():
    rng = np.random.default_rng(1)
    n, m = 300, 500
    a = sp.csr_matrix((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))),
                      shape=(n, n))
    a.sum_duplicates()
    ip, idx = a.indptr.astype(np.int64), a.indices.astype(np.int32)
    order = bfs_order(ip, idx)
    np.testing.assert_array_equal(np.sort(order), np.arange(n))  # a permutation
    new_ip, new_idx = renumber(ip, idx, order)
    ref = a[order][:, order].tocsr()
    ref.sort_indices()
    ref.data[:] = 1.0  # structure only (summed duplicates hold 2)
    got = sp.csr_matrix((np.ones(len(new_idx)), new_idx, new_ip), shape=(n, n))
    got.sort_indices()
    assert (got != ref).nnz == 0


def test_sparse_graph_runs_in_bfs_order(tmp_path):
    rng = np.random.default_rng(2)
    n, m = 400, 700  # under LOCALITY_MAX_DEGREE edges per vertex
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{s}\t{d}\n" for s, d in zip(rng.integers(0, n, m),
                                                       rng.integers(0, n, m))))
    ingest([EdgeSource([f])], tmp_path / "g", IngestOptions(num_partitions=3))
    g = open_graph(tmp_path / "g")
    fused, loop = bsp.pagerank(g, tol=1e-12), bsp.pagerank(g, tol=1e-12, fuse=False)
    assert fused.stats.method == "fused-pagerank (bfs order)"
    np.testing.assert_allclose(fused.values, loop.values, rtol=1e-10, atol=1e-15)
    assert fused.stats.num_supersteps == loop.stats.num_supersteps


def test_hub_sorted_graphs_keep_the_engine_loop(graphs, monkeypatch):
    from graphsys.bsp import edges

    monkeypatch.setattr(edges, "HUB_SORT_BYTES", 0)  # every rank vector "exceeds" the cache
    g = graphs["directed-p3"].graph
    res = bsp.pagerank(g, tol=1e-10)
    assert res.stats.method == "supersteps"
    np.testing.assert_allclose(res.values, bsp.pagerank(g, tol=1e-10, fuse=False).values,
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("with_p", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parallel_step_matches_numpy(with_p, dtype):
    """The chunked parallel step (from FUSED_PARALLEL_MIN_ROWS targets, skewed in-degrees,
    empty rows, dangling vertices) against one NumPy iteration; the sums do not depend on
    the thread count."""
    import numba

    from graphsys.bsp.kernels_pagerank import FUSED_PARALLEL_MIN_ROWS, pagerank_step

    rng = np.random.default_rng(3)
    n = FUSED_PARALLEL_MIN_ROWS + 5_003
    m = 6 * n
    dst = np.minimum(rng.zipf(1.6, m) - 1, n - 1)  # hub rows hold long runs
    src = rng.integers(0, n, m)
    csc = sp.csr_matrix((np.ones(m), (dst, src)), shape=(n, n))
    csc.data[:] = 1.0  # one stored entry per (target, source): the kernel reads no values
    ip, idx = csc.indptr.astype(np.int64), csc.indices.astype(np.int32)
    outdeg = np.bincount(idx, minlength=n).astype(np.float64)
    inv_deg = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
    rank0 = rng.random(n)
    p = rng.random(n) / n if with_p else np.zeros(0)
    send = (rank0 * inv_deg).astype(dtype)
    pulled = csc @ send.astype(np.float64)
    want = 0.85 * pulled + (0.2 * p if with_p else 0.15 / n)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        try:
            rank, new_send = rank0.copy(), np.empty_like(send)
            delta, dangling = pagerank_step(ip, idx, send, new_send, rank, inv_deg, p, 0.85,
                                            0.15 / n, 0.2)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        results.append((delta, dangling))
        rtol = 1e-6 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(rank, want, rtol=rtol)
        np.testing.assert_allclose(new_send, (rank * inv_deg).astype(dtype), rtol=rtol)
        assert delta == pytest.approx(np.abs(want - rank0).sum(), rel=1e-9)
        assert dangling == pytest.approx(want[outdeg == 0].sum(), rel=1e-9)
    assert results[0] == results[-1]
