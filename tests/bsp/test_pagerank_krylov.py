"""PageRank's Krylov path (Chebyshev steps on undirected graphs, BiCGSTAB on directed ones,
finished by power steps) against networkx and a direct sparse solve, and its stopping
rule: the returned ranks are a power iterate whose last L1 change was below ``tol``."""

from __future__ import annotations

import networkx as nx
import numba
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import graphsys
from graphsys import bsp
from graphsys.bsp.algorithms import pagerank_krylov
from graphsys.bsp.kernels_pagerank_krylov import chebyshev_weights


@pytest.fixture
def small_krylov(monkeypatch):
    """The Krylov path for the small graphs of these tests (it starts at 4096 nodes)."""
    monkeypatch.setattr(pagerank_krylov, "KRYLOV_MIN_NODES", 1)


def make(tmp_path, n, m, *, undirected, seed=0, loops=True, name="g", band=8):
    """``m`` random edges between nodes at most ``band`` apart on a ring of ``n`` (slow to
    mix, as road and social graphs are: the power iteration contracts by about the
    damping), or anywhere (``band=None``: a random graph, quick to mix); self-loops,
    multi-edges, isolated and dangling nodes."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (rng.integers(0, n, m) if band is None else
           (src + rng.integers(-band, band + 1, m)) % n)
    if not loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    return graphsys.from_numpy(src, dst, tmp_path / name, num_nodes=n, undirected=undirected,
                               partitions=2)


def stored_matrix(g) -> sp.csr_matrix:
    """W (N, N): W[v, u] = the stored edges u -> v (multi-edges counted), internal ids."""
    n = g.num_nodes()
    rows, cols = [], []
    for s, d, _, _ in g.iter_edges():
        rows.append(np.asarray(d))
        cols.append(np.asarray(s))
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, n))


def exact(W, damping=0.85, p=None) -> np.ndarray:
    """PageRank (dangling mass spread like the teleport) by a direct solve of
    (I - damping W D^-1) z = p, normalised."""
    n = W.shape[0]
    deg = np.asarray(W.sum(axis=0)).ravel()
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1.0), 0.0)
    p = np.full(n, 1.0 / n) if p is None else p / p.sum()
    z = sla.spsolve((sp.identity(n, format="csc") - damping * (W @ sp.diags(inv))).tocsc(), p)
    return z / z.sum()


def power_residual(W, x, damping=0.85, p=None) -> float:
    """||T(x) - x||_1 for one power iteration T of networkx's definition."""
    n = W.shape[0]
    deg = np.asarray(W.sum(axis=0)).ravel()
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1.0), 0.0)
    p = np.full(n, 1.0 / n) if p is None else p / p.sum()
    new = damping * (W @ (x * inv) + x[deg == 0].sum() * p) + (1 - damping) * p
    return float(np.abs(new - x).sum())


@pytest.mark.parametrize("undirected,solver", [(True, "chebyshev"), (False, "BiCGSTAB")])
@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_matches_direct_solve_and_stops_within_tol(tmp_path, small_krylov, undirected,
                                                   solver, tol):
    """Self-loops, multi-edges, isolated and dangling nodes; the run's answer is within
    the power iteration's bound of the exact one, and one more power iteration would
    change it by less than damping * tol (its last change was below tol)."""
    g = make(tmp_path, 600, 1500, undirected=undirected)
    res = bsp.pagerank(g, tol=tol, max_iters=1000)
    assert res.stats.method.startswith(f"fused-pagerank ({solver}")
    assert res.stats.converged
    W = stored_matrix(g)
    assert np.abs(res.values - exact(W)).sum() < tol * 0.85 / 0.15
    assert power_residual(W, res.values) < 0.85 * tol
    assert res.values.sum() == pytest.approx(1.0, abs=1e-12)
    power_steps = [s for s in res.stats.supersteps if s.direction == "pull"]
    assert len(power_steps) >= 1 and res.stats.supersteps[-1].direction == "pull"


@pytest.mark.parametrize("undirected", [True, False])
def test_matches_networkx_and_the_power_path(tmp_path, small_krylov, monkeypatch,
                                             undirected):
    g = make(tmp_path, 800, 3000, undirected=undirected, loops=False, seed=3)
    res = bsp.pagerank(g, tol=1e-10, max_iters=1000)
    ids = g.node_ids()
    G = nx.MultiGraph() if undirected else nx.MultiDiGraph()  # multi-edges counted
    G.add_nodes_from(range(g.num_nodes()))
    for s, d, _, _ in g.iter_edges():
        once = s < d if undirected else slice(None)  # an undirected edge is stored twice
        G.add_edges_from(zip(ids[s[once]].tolist(), ids[d[once]].tolist()))
    ref = nx.pagerank(G, tol=1e-15, max_iter=10_000)
    assert np.abs(res.values - np.array([ref[i] for i in ids.tolist()])).sum() < 1e-9
    monkeypatch.setattr(pagerank_krylov, "KRYLOV_MIN_NODES", 10**9)
    power = bsp.pagerank(g, tol=1e-10, max_iters=1000)
    assert "chebyshev" not in power.stats.method and "BiCGSTAB" not in power.stats.method
    assert np.abs(res.values - power.values).sum() < 1e-9
    # fewer products: under half on the undirected graph
    products = sum(s.edges_scanned for s in res.stats.supersteps)
    assert products < (0.5 if undirected else 1.0) * sum(
        s.edges_scanned for s in power.stats.supersteps)


@pytest.mark.parametrize("undirected", [True, False])
def test_personalized(tmp_path, small_krylov, undirected):
    g = make(tmp_path, 500, 1200, undirected=undirected, seed=5)
    sources, weights = [3, 40, 41], [1.0, 2.0, 0.5]
    res = bsp.personalized_pagerank(g, sources, weights=weights, tol=1e-10, max_iters=1000)
    assert "chebyshev" in res.stats.method or "BiCGSTAB" in res.stats.method
    p = np.zeros(g.num_nodes())
    p[g.to_internal(sources)] = weights
    W = stored_matrix(g)
    assert np.abs(res.values - exact(W, p=p)).sum() < 1e-9
    assert power_residual(W, res.values, p=p) < 0.85 * 1e-10


@pytest.mark.parametrize("undirected", [True, False])
def test_quickly_mixing_graph_keeps_jacobi_steps(tmp_path, small_krylov, undirected):
    """A random graph: the Jacobi steps contract faster than Chebyshev would; they go on,
    and the answer is the same."""
    g = make(tmp_path, 800, 6000, undirected=undirected, band=None, loops=False, seed=2)
    res = bsp.pagerank(g, tol=1e-10, max_iters=1000)
    assert res.stats.method.startswith("fused-pagerank (jacobi")
    assert {s.direction for s in res.stats.supersteps} == {"jacobi", "pull"}
    assert np.abs(res.values - exact(stored_matrix(g))).sum() < 1e-9


def test_sparse_graph_renumbered(tmp_path, small_krylov):
    """Fewer than 4 in-edges per vertex: breadth-first order, as the power path; a path
    graph plus chords, undirected."""
    n = 3000
    src = np.concatenate([np.arange(n - 1), np.arange(0, n - 50, 50)])
    dst = np.concatenate([np.arange(1, n), np.arange(25, n - 25, 50)])
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=n, undirected=True)
    res = bsp.pagerank(g, tol=1e-10, damping=0.9, max_iters=1000)
    assert res.stats.method.startswith("fused-pagerank (chebyshev, bfs order, ell")
    assert np.abs(res.values - exact(stored_matrix(g), damping=0.9)).sum() < 1e-9


def test_budget_counts_products(tmp_path, small_krylov):
    """max_iters caps the products, the solver's and the power steps' together; the run
    says it did not converge."""
    g = make(tmp_path, 600, 1500, undirected=False)
    res = bsp.pagerank(g, tol=1e-14, max_iters=9)
    m = g.num_edges()
    assert sum(s.edges_scanned for s in res.stats.supersteps) <= 9 * m
    assert not res.stats.converged
    assert res.values.sum() == pytest.approx(1.0, abs=1e-12)


def test_few_iterations_keep_the_power_iteration(tmp_path, small_krylov):
    g = make(tmp_path, 600, 1500, undirected=True)
    res = bsp.pagerank(g, tol=1e-14, max_iters=pagerank_krylov.KRYLOV_MIN_ITERS - 1)
    assert "chebyshev" not in res.stats.method
    assert len(res.stats.supersteps) == pagerank_krylov.KRYLOV_MIN_ITERS - 1


def test_warm_start(tmp_path, small_krylov):
    """``init=`` starts the solver from the given ranks: from the answer, it stops at once."""
    g = make(tmp_path, 600, 1500, undirected=True)
    first = bsp.pagerank(g, tol=1e-10, max_iters=1000)
    again = bsp.pagerank(g, tol=1e-10, max_iters=1000, init=first)
    assert len(again.stats.supersteps) <= 3
    assert np.abs(again.values - first.values).sum() < 1e-9


def test_breakdown_falls_back_to_power_steps(tmp_path, small_krylov, monkeypatch):
    g = make(tmp_path, 600, 1500, undirected=False)
    monkeypatch.setattr(pagerank_krylov, "bicgstab_iteration",
                        lambda *a: (a[-1], np.inf, 0.0, 0.0, 1))
    res = bsp.pagerank(g, tol=1e-10, max_iters=1000)
    assert res.stats.method.endswith("after a breakdown)")
    assert res.stats.converged
    assert np.abs(res.values - exact(stored_matrix(g))).sum() < 1e-9


@pytest.mark.parametrize("undirected", [True, False])
def test_nearly_all_isolated(tmp_path, small_krylov, undirected):
    g = graphsys.from_numpy(np.array([0]), np.array([1]), tmp_path / "g", num_nodes=50,
                            undirected=undirected)
    res = bsp.pagerank(g, tol=1e-12)
    assert res.stats.converged
    assert np.abs(res.values - exact(stored_matrix(g))).sum() < 1e-10


def test_thread_count_does_not_change_the_answer(tmp_path):
    """From 32,768 rows the kernels split the rows into fixed chunks: the same sums on one
    thread as on two (the graph is past KRYLOV_MIN_NODES: no patch)."""
    g = make(tmp_path, 40_000, 160_000, undirected=False, seed=9)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = bsp.pagerank(g, tol=1e-10, max_iters=1000)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = bsp.pagerank(g, tol=1e-10, max_iters=1000)
    finally:
        numba.set_num_threads(before)
    assert "BiCGSTAB" in one.stats.method
    assert np.array_equal(one.values, two.values)


def test_chebyshev_weights():
    w = chebyshev_weights(0.85, 60)
    assert w[0] == 1.0 and w[1] == pytest.approx(1 / (1 - 0.85**2 / 2))
    assert w[-1] == pytest.approx(2 / (1 + np.sqrt(1 - 0.85**2)), rel=1e-12)


def test_layouts_beyond_the_rows_are_sized_against_the_ram(tmp_path, small_krylov, monkeypatch):
    """The rows of an in-memory PageRank were sized (4 bytes per edge), then the solve's
    ELL layout and vectors (or the fused loop's breadth-first ELL copy) built unchecked:
    about three times as much on a graph of 5,000 nodes. Each layout is now sized before
    its build against the RAM available and refused in one line, naming the push index
    where a push over it replaces the layout, else the run out of core; with the index
    stored the same budget runs, to ranks a power iteration in scipy leaves unchanged."""
    from graphsys import memory
    from graphsys.errors import GraphsysError
    from graphsys.storage.adjacency_index import build_index

    g = make(tmp_path, 5000, 80_000, undirected=False, band=None)
    rows = g.csr(weights=False).nbytes
    monkeypatch.setattr(memory, "available_memory", lambda: 2 * rows)  # the rows fit
    with pytest.raises(GraphsysError) as exc:
        bsp.pagerank(g, store_index=False)
    said = str(exc.value)
    assert said.startswith("building the ELL layout and vectors of PageRank's linear solve "
                           "in RAM needs about ") and "\n" not in said
    assert said.endswith(f"mapped instead: graphsys index {g.path} --push")
    build_index(g, ("push",), memory_limit=1 << 30)
    g = graphsys.open_graph(g.path)
    res = bsp.pagerank(g, tol=1e-10, store_index=False)
    assert "push index" in res.stats.method
    assert res.values.sum() == pytest.approx(1.0)
    assert power_residual(stored_matrix(g), res.values) < 1e-9
    sparse = make(tmp_path, 3000, 6000, undirected=False, name="sparse")  # 2 in-edges each
    rows = sparse.csr().nbytes
    monkeypatch.setattr(memory, "available_memory", lambda: 3 * rows)
    with pytest.raises(GraphsysError, match=r"^building PageRank's breadth-first ELL layout "
                                            r"in RAM .* no stored index can serve it: run "
                                            r"it out of core"):
        bsp.pagerank(sparse, store_index=False, max_iters=5)  # the fused loop's layout
