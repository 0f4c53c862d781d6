"""PageRank's fused in-memory loop in each of its layouts (destination-blocked push, ELL
slots in breadth-first order, the CSC pull of a mapped index) against the engine's superstep
loop, and the layouts against brute force."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys import bsp, open_graph
from graphsys.bsp.algorithms.pagerank import PageRankRows
from graphsys.bsp.kernels_pagerank import bfs_order, renumber
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

from .conftest import GRAPH_KEYS

#: the module (the package's ``pagerank`` name is the front-end function)
pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")


@pytest.fixture(params=["default", "push"])
def layout(request, monkeypatch):
    """The fused loop's layout choice as made by the graph, or the push layout forced (the
    test graphs' rank vectors fit any L2)."""
    if request.param == "push":
        _force_push(monkeypatch)
    return request.param


def _force_push(monkeypatch):
    """Every graph with 4+ in-edges per vertex switches to the push layout (any iteration
    left pays)."""
    monkeypatch.setattr(pagerank_module, "PUSH_MIN_BYTES", 0)
    monkeypatch.setattr(pagerank_module, "PUSH_BREAK_EVEN_ITERATIONS", 1)


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_fused_loop_matches_supersteps(graphs, key, layout):
    g = graphs[key].graph
    for kwargs in ({"tol": 1e-10}, {"tol": 1e-30, "max_iters": 4}):
        fused = bsp.pagerank(g, **kwargs, weighted=False)
        loop = bsp.pagerank(g, fuse=False, **kwargs, weighted=False)
        np.testing.assert_allclose(fused.values, loop.values, rtol=1e-12, atol=1e-15)
        assert fused.stats.method.startswith("fused-pagerank") and loop.stats.method == "supersteps"
        assert fused.stats.num_supersteps == loop.stats.num_supersteps
        assert fused.stats.converged == loop.stats.converged
        assert all(s.fused for s in fused.stats.supersteps)
        pushed = [s.direction == "push" for s in fused.stats.supersteps]
        if "push blocks" in fused.stats.method:  # pulled until the forecast, then pushed
            after = pagerank_module.PUSH_FORECAST_AFTER
            assert not any(pushed[:after]) and all(pushed[after:]) and len(pushed) > after
        else:
            assert not any(pushed)


def test_personalized_and_vector_programs(graphs, layout):
    g = graphs["undirected-p3"].graph
    ppr = bsp.personalized_pagerank(g, [0, 5], tol=1e-10, weighted=False)
    loop = bsp.personalized_pagerank(g, [0, 5], tol=1e-10, fuse=False, weighted=False)
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
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=3))
    g = open_graph(tmp_path / "g")
    fused = bsp.pagerank(g, tol=1e-12, weighted=False)
    loop = bsp.pagerank(g, tol=1e-12, fuse=False, weighted=False)
    assert fused.stats.method == "fused-pagerank (bfs order, ell)"
    np.testing.assert_allclose(fused.values, loop.values, rtol=1e-10, atol=1e-15)
    assert fused.stats.num_supersteps == loop.stats.num_supersteps


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p1"])
def test_hub_sorted_graphs_pull_fused_in_hub_order(graphs, key, monkeypatch):
    """Where the engine hub-sorts, the fused loop pulls in hub order: the same ranks and
    iterations as the engine's hub-sorted passes and as the plain pull."""
    from graphsys.bsp import edges

    g = graphs[key].graph
    plain = bsp.pagerank(g, tol=1e-10, weighted=False)
    monkeypatch.setattr(edges, "HUB_SORT_BYTES", 0)  # every rank vector "exceeds" the cache
    res = bsp.pagerank(g, tol=1e-10, weighted=False)
    assert res.stats.method == "fused-pagerank (hub order)"
    loop = bsp.pagerank(g, tol=1e-10, fuse=False, weighted=False)
    for other in (loop, plain):
        np.testing.assert_allclose(res.values, other.values, rtol=1e-12, atol=1e-15)
        assert res.stats.num_supersteps == other.stats.num_supersteps


def _skewed_csc(n: int, per_vertex: int, seed: int):
    """A CSC (int64 indptr, int32 indices) with hub rows (Zipf targets), empty rows and
    dangling vertices, one entry per (target, source), and its out-degrees (float64)."""
    rng = np.random.default_rng(seed)
    m = per_vertex * n
    dst = np.minimum(rng.zipf(1.6, m) - 1, n - 1)  # hub rows hold long runs
    src = np.minimum(rng.zipf(1.3, m) - 1, n - 1)  # heavy sources: runs in every block
    csc = sp.csr_matrix((np.ones(m), (dst, src)), shape=(n, n))
    csc.data[:] = 1.0  # one stored entry per (target, source): the kernels read no values
    ip, idx = csc.indptr.astype(np.int64), csc.indices.astype(np.int32)
    return csc, ip, idx, np.bincount(idx, minlength=n).astype(np.float64)


def _layout(kind, ip, idx, outdeg, n):
    """(step, layout args, order new -> old or None, padding) of one fused layout."""
    from graphsys.bsp.kernels_pagerank import (
        FUSED_CHUNKS,
        ell_layout,
        pagerank_ell_step,
        pagerank_push_step,
        pagerank_step,
    )
    from graphsys.storage.push_layout import push_layout, sums_length

    if kind == "csc":
        return pagerank_step, (ip, idx, np.zeros(0, idx.dtype)), None, None, 0
    if kind == "hub":  # sources (and the sent values) renumbered by frequency; rows not
        order = np.argsort(-np.bincount(idx, minlength=n), kind="stable")
        slot = np.empty(n, idx.dtype)
        slot[order] = np.arange(n, dtype=idx.dtype)
        return pagerank_step, (ip, slot[idx], slot), None, order, 0
    if kind == "ell":
        return pagerank_ell_step, ell_layout(ip, idx), None, None, 1
    order = np.argsort(-outdeg, kind="stable")
    layout = push_layout(ip, idx, order, outdeg.astype(np.int64), FUSED_CHUNKS)
    return pagerank_push_step, layout + (np.zeros(sums_length(n, layout[0])),), order, None, 0


@pytest.mark.parametrize("kind", ["csc", "hub", "ell", "push"])
@pytest.mark.parametrize("with_p", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parallel_step_matches_numpy(kind, with_p, dtype):
    """Each layout's parallel step (from FUSED_PARALLEL_MIN_ROWS targets, skewed in- and
    out-degrees, empty rows, dangling vertices) against one NumPy iteration; the sums do not
    depend on the thread count. ``perm``: the rows' numbering; ``sent_order``: the sent
    values' (hub order renumbers only those)."""
    import numba

    from graphsys.bsp.kernels_pagerank import FUSED_PARALLEL_MIN_ROWS

    n = FUSED_PARALLEL_MIN_ROWS + 5_003
    csc, ip, idx, outdeg = _skewed_csc(n, 6, 3)
    step, layout, order, hub_order, pad = _layout(kind, ip, idx, outdeg, n)
    perm = np.arange(n) if order is None else order
    sent_order = perm if hub_order is None else hub_order
    rng = np.random.default_rng(4)
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
            rank = rank0[perm].copy()
            sent = np.zeros(n + pad, dtype)
            sent[:n] = send[sent_order]
            new_send = np.zeros_like(sent)
            delta, dangling = step(*layout, sent, new_send, rank, inv_deg[perm],
                                   p[perm] if with_p else p, 0.85, 0.15 / n, 0.2)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        results.append((delta, dangling))
        rtol = 1e-6 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(rank, want[perm], rtol=rtol)
        sent_rank = rank if hub_order is None else rank[hub_order]
        np.testing.assert_allclose(new_send[:n], (sent_rank * inv_deg[sent_order]).astype(dtype),
                                   rtol=rtol)
        assert not new_send[n:].any()  # the padding source sends nothing
        if kind == "push":
            assert not layout[-1].any()  # the block sums are left zero
        assert delta == pytest.approx(np.abs(want - rank0).sum(), rel=1e-9)
        assert dangling == pytest.approx(want[outdeg == 0].sum(), rel=1e-9)
    assert results[0] == results[-1]


def slot_sources(bounds, edge_ptr, step, dst, runs, heavy):
    """Decode a layout's slots (NumPy): returns
    ``(source, target)``, int64 (S,) each: every slot's source and target (new ids), the
    target -1 on padding slots."""
    source = np.empty(len(step), np.int64)
    target = np.full(len(step), -1, np.int64)
    for b in range(len(bounds) - 1):
        row = runs[b * (heavy + 1):(b + 1) * (heavy + 1)]
        for s in range(heavy):
            source[row[s]:row[s + 1]] = s
        light = slice(row[heavy], edge_ptr[b + 1])
        source[light] = heavy + np.cumsum(step[light], dtype=np.int64)
        block = slice(edge_ptr[b], edge_ptr[b + 1])
        offsets = dst[block].astype(np.int64)
        size = bounds[b + 1] - bounds[b]
        target[block] = np.where(offsets < size, bounds[b] + offsets, -1)
    return source, target


def test_push_layout_against_brute_force():
    """Blocks cover the targets in order, hold the edges of the renumbered graph with each
    block's edges sorted by source, stay within PUSH_BLOCK_MAX_NODES vertices, and the heavy
    sources' runs point at exactly their edges; padding slots only where a gap between
    light sources exceeds PUSH_STEP_MAX, as few as it takes."""
    from graphsys.storage.push_layout import (
        PUSH_BLOCK_MAX_NODES,
        PUSH_HEAVY_RUN,
        PUSH_STEP_MAX,
        push_layout,
    )

    n = PUSH_BLOCK_MAX_NODES + 9_000  # at least two blocks by the vertex cap alone
    _, ip, idx, outdeg = _skewed_csc(n, 3, 5)
    order = np.argsort(-outdeg, kind="stable")
    layout = push_layout(ip, idx, order, outdeg.astype(np.int64), 4)
    bounds, edge_ptr, step, dst, runs, heavy = layout
    source, target = slot_sources(*layout)
    nb = len(bounds) - 1
    assert bounds[0] == 0 and bounds[-1] == n and nb >= 4
    assert np.diff(bounds).max() <= PUSH_BLOCK_MAX_NODES and np.diff(bounds).min() > 0
    new_id = np.empty(n, np.int64)
    new_id[order] = np.arange(n)
    want_t = new_id[np.repeat(np.arange(n), np.diff(ip))]  # renumbered (target, source)
    want_s = new_id[idx]
    real = target >= 0
    padding = 0
    for b in range(nb):
        e = slice(edge_ptr[b], edge_ptr[b + 1])
        assert (np.diff(source[e]) >= 0).all()  # sorted by source
        assert (dst[e] <= bounds[b + 1] - bounds[b]).all()  # a target or the spare sum
        row = runs[b * (heavy + 1):(b + 1) * (heavy + 1)]
        for s_ in range(heavy):  # heavy source s_'s run holds its edges of the block
            assert (source[row[s_]:row[s_ + 1]] == s_).all() and real[row[s_]:row[s_ + 1]].all()
        assert (source[row[heavy]:edge_ptr[b + 1]] >= heavy).all()
        assert row[0] == edge_ptr[b]
        light = np.unique(source[row[heavy]:edge_ptr[b + 1]][real[row[heavy]:edge_ptr[b + 1]]])
        gaps = np.diff(np.concatenate([[heavy], light]))
        want_pads = int(((gaps[gaps > PUSH_STEP_MAX] - 1) // PUSH_STEP_MAX).sum())
        assert int((~real[e]).sum()) == want_pads
        padding += want_pads
    assert len(step) == len(idx) + padding
    key = lambda t, s_: np.sort(t * n + s_)  # noqa: E731
    np.testing.assert_array_equal(key(target[real], source[real]), key(want_t, want_s))
    new_out = outdeg[order]
    assert heavy > 0 and (new_out[:heavy] >= PUSH_HEAVY_RUN * nb).all()
    assert heavy == n or new_out[heavy] < PUSH_HEAVY_RUN * nb


def test_push_lanes_balance_the_blocks_work():
    """Each block goes to the lane with the least work so far: the lanes' work differs by
    at most one block's, and hub blocks (many edges, few targets) alternate rather than
    fill the first lane."""
    from graphsys.bsp.kernels_pagerank import PUSH_VERTEX_COST, push_lanes

    bounds = np.array([0, 10, 20, 30, 40, 20_040, 40_040, 60_040])
    edge_ptr = np.array([0, 900, 1_800, 2_700, 3_600, 3_700, 3_800, 3_900]) * 100
    work = np.diff(edge_ptr) + PUSH_VERTEX_COST * np.diff(bounds)
    for lanes in (1, 2, 3):
        lane_of = push_lanes(bounds, edge_ptr, lanes)
        load = np.bincount(lane_of, weights=work, minlength=lanes)
        assert load.max() - load.min() <= work.max() and set(lane_of) == set(range(lanes))
    np.testing.assert_array_equal(push_lanes(bounds, edge_ptr, 2), [0, 1, 0, 1, 0, 1, 0])


def test_push_step_over_padding_slots_matches_scipy():
    """Many small blocks (few edges each, sources far apart, so many padding slots), one
    thread: one push step against scipy's mat-vec; the spare sums are left zero."""
    import scipy.sparse as sp

    from graphsys.bsp.kernels_pagerank import pagerank_push_step
    from graphsys.storage.push_layout import degree_order, push_layout, sums_length

    rng = np.random.default_rng(8)
    n, m = 3_000, 2_500
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=n))])
    indices = src[np.argsort(dst, kind="stable")].astype(np.int32)
    outdeg = np.bincount(src, minlength=n)
    order = degree_order(outdeg)
    layout = push_layout(indptr, indices, order, outdeg, 400)
    assert len(layout[2]) > m  # padding slots
    inv_deg = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
    rank0 = rng.random(n)
    want = 0.85 * (sp.csr_matrix((np.ones(m), (dst, src)), shape=(n, n)) @ (rank0 * inv_deg))
    want += 0.15 / n
    rank, new_send = rank0[order].copy(), np.zeros(n)
    acc = np.zeros(sums_length(n, layout[0]))
    delta, _ = pagerank_push_step(*layout, acc, (rank0 * inv_deg)[order], new_send, rank,
                                  inv_deg[order], np.zeros(0), 0.85, 0.15 / n, 0.15)
    np.testing.assert_allclose(rank, want[order], rtol=1e-12)
    assert delta == pytest.approx(np.abs(want - rank0).sum(), rel=1e-9)
    assert not acc.any()
    # slots read 8 at a time from aligned words: a layout whose arrays start off a word
    # boundary (copied aligned first) sums the same
    bounds, edge_ptr, step, dst, runs, heavy = layout
    odd_step = np.empty(len(step) + 1, np.uint8)[1:]
    odd_step[:] = step
    odd_dst = np.empty(2 * len(dst) + 1, np.uint8)[1:].view(np.uint16)
    odd_dst[:] = dst
    again = rank0[order].copy()
    pagerank_push_step(bounds, edge_ptr, odd_step, odd_dst, runs, heavy, acc,
                       (rank0 * inv_deg)[order], np.zeros(n), again, inv_deg[order],
                       np.zeros(0), 0.85, 0.15 / n, 0.15)
    np.testing.assert_array_equal(again, rank)
    with pytest.raises(ValueError, match="a spare one per block"):
        pagerank_push_step(*layout, np.zeros(n), (rank0 * inv_deg)[order], new_send, rank,
                           inv_deg[order], np.zeros(0), 0.85, 0.15 / n, 0.15)


def test_ell_layout_keeps_every_row_in_order():
    """Slots then overflow give back each CSC row in order; padding is N."""
    from graphsys.bsp.kernels_pagerank import ELL_SLOTS, ell_layout

    n = 500
    _, ip, idx, _ = _skewed_csc(n, 3, 6)  # hub rows overflow, many rows are empty
    slots, over_ptr, overflow = ell_layout(ip, idx)
    assert (np.diff(over_ptr) > 0).any() and (np.diff(ip) == 0).any()
    for v in range(n):
        row = slots[v * ELL_SLOTS:(v + 1) * ELL_SLOTS]
        got = np.concatenate([row[row < n], overflow[over_ptr[v]:over_ptr[v + 1]]])
        np.testing.assert_array_equal(got, idx[ip[v]:ip[v + 1]])
        assert (row[:min(ELL_SLOTS, ip[v + 1] - ip[v])] < n).all()


def test_mapped_index_is_pulled_as_stored(graphs, tmp_path, monkeypatch):
    """With a stored CSC the fused loop pulls the mapped index (no copy), not the push
    layout; same ranks."""
    import shutil

    from graphsys.storage.adjacency_index import build_index

    _force_push(monkeypatch)
    src = graphs["undirected-p3"]  # 4+ in-edges per vertex: the push layout without index
    assert "push blocks" in bsp.pagerank(src.graph, tol=1e-10, weighted=False).stats.method
    path = tmp_path / "indexed"
    shutil.copytree(src.path, path)
    build_index(open_graph(path))
    g = open_graph(path)
    res = bsp.pagerank(g, tol=1e-10, weighted=False)
    assert res.stats.method == "fused-pagerank"
    np.testing.assert_allclose(res.values,
                               bsp.pagerank(src.graph, tol=1e-10, weighted=False).values,
                               rtol=1e-12, atol=1e-15)


def test_push_layout_only_where_its_build_pays(graphs, monkeypatch):
    """The switch to the push layout needs PUSH_BREAK_EVEN_ITERATIONS forecast after
    PUSH_FORECAST_AFTER (a count, not a timing): a run capped short keeps the pull, a long
    one switches, and the same call makes the same choice (bit-identical ranks)."""
    monkeypatch.setattr(pagerank_module, "PUSH_MIN_BYTES", 0)
    g = graphs["undirected-p3"].graph
    after = pagerank_module.PUSH_FORECAST_AFTER
    monkeypatch.setattr(pagerank_module, "PUSH_BREAK_EVEN_ITERATIONS", 10_000)  # never pays
    assert bsp.pagerank(g, tol=1e-14, max_iters=1000,
                        weighted=False).stats.method == "fused-pagerank"
    monkeypatch.setattr(pagerank_module, "PUSH_BREAK_EVEN_ITERATIONS", 5)
    short = bsp.pagerank(g, tol=1e-14, max_iters=after + 4, weighted=False)  # at most 4 left
    assert short.stats.method == "fused-pagerank"
    runs = [bsp.pagerank(g, tol=1e-14, max_iters=1000, weighted=False) for _ in range(2)]
    assert all("push blocks" in r.stats.method for r in runs)
    np.testing.assert_array_equal(runs[0].values, runs[1].values)


def test_push_needs_the_sent_values_in_half_the_cache(graphs, monkeypatch):
    """Sent values over PUSH_MAX_BYTES keep the pull however long the run: a push sweeps
    them once per destination block."""
    _force_push(monkeypatch)
    g = graphs["undirected-p3"].graph
    sent_bytes = 8 * g.num_nodes()
    monkeypatch.setattr(pagerank_module, "PUSH_MAX_BYTES", sent_bytes - 1)
    assert bsp.pagerank(g, tol=1e-14, max_iters=1000,
                        weighted=False).stats.method == "fused-pagerank"
    monkeypatch.setattr(pagerank_module, "PUSH_MAX_BYTES", sent_bytes)
    assert "push blocks" in bsp.pagerank(g, tol=1e-14, max_iters=1000, weighted=False).stats.method


@pytest.mark.parametrize("deltas, tol, cap, want", [
    ([1.0, 0.5], 0.5 ** 11, 100, 10),     # halving: ten more to fall below tol
    ([1.0, 0.5], 0.5 ** 11, 4, 4),        # capped by the iterations allowed
    ([1.0, 1e-9], 1e-6, 100, 0),          # already below tol
    ([1.0, 2.0], 1e-6, 50, 50),           # growing: no forecast, the cap
    ([0.0, 0.0], 1e-30, 7, 0),
])
def test_iterations_left(deltas, tol, cap, want):
    assert pagerank_module.iterations_left(deltas, tol, cap) == want



def test_push_switch_keeps_pulling_where_its_layout_does_not_fit(graphs, monkeypatch):
    """The forecast switch built the push layout (3 bytes a slot, 9 a vertex per thread)
    whatever the RAM available; it now sizes it first (layout_bytes) against the RAM
    available, and a run where it does not fit keeps pulling, to the same ranks (the
    switch only saves time)."""
    import numba

    from graphsys.storage.push_layout import layout_bytes, min_blocks

    _force_push(monkeypatch)
    g = graphs["undirected-p3"].graph
    pushed = bsp.pagerank(g, tol=1e-14, max_iters=1000, weighted=False)
    assert "push blocks" in pushed.stats.method
    asked = []
    monkeypatch.setattr(pagerank_module, "over_budget",
                        lambda need: asked.append(need) or "over the RAM available")
    pulled = bsp.pagerank(g, tol=1e-14, max_iters=1000, weighted=False)
    assert pulled.stats.method == "fused-pagerank"
    n = g.num_nodes()
    assert asked == [layout_bytes(n, g.num_edges(), min_blocks(n), numba.get_num_threads())
                     + 48 * (n + 1)]
    np.testing.assert_allclose(pulled.values, pushed.values, rtol=1e-9, atol=1e-14)
