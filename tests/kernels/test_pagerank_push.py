"""The push kernels against scipy: the residual a change of edges creates (added edges, and
removed ones with the opposite sign) equals the rank equation's residual on the changed
graph, and pushing it ends at the solution of that graph."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys.kernels.pagerank_push import ball_sizes, edge_change_residual, push

ALPHA = 0.85


def _graph(seed: int, n: int, m: int):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n - 5, m)  # 5+ dangling nodes
    return src, dst


def _csr(src, dst, n, w=None):
    """A scipy CSR keeping multi-edges as entries of their own (as graphsys's CSR)."""
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    data = np.ones(len(src)) if w is None else np.asarray(w, np.float64)[order]
    return sp.csr_matrix((data, dst[order], indptr), shape=(n, n))


def _inv(a):
    deg = np.asarray(a.sum(axis=1)).ravel()
    return np.divide(1.0, deg, out=np.zeros(len(deg)), where=deg > 0)


def _residual(a, y, q):
    """(1 - alpha) q + alpha A^T D^-1 y - y."""
    return (1 - ALPHA) * q + ALPHA * (a.T @ (y * _inv(a))) - y


def _solve(a, q):
    n = a.shape[0]
    m = sp.identity(n) - ALPHA * (a.T @ sp.diags(_inv(a)))
    return sp.linalg.spsolve(m.tocsc(), (1 - ALPHA) * q)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sign", [1, -1])
def test_change_residual_equals_the_residual_on_the_changed_graph(weighted, sign):
    n = 60
    src, dst = _graph(1, n, 300)
    rng = np.random.default_rng(2)
    w = rng.integers(1, 5, len(src)).astype(np.float64) if weighted else None
    if sign > 0:  # 12 edges added, some from dangling nodes
        cs, cd = rng.integers(0, n, 12), rng.integers(0, n, 12)
        cw = rng.integers(1, 5, 12).astype(np.float64) if weighted else None
        before = _csr(src, dst, n, w)
        after = _csr(np.r_[src, cs], np.r_[dst, cd], n,
                     None if w is None else np.r_[w, cw])
    else:  # 12 stored edges removed (the CSR is the graph before the change)
        pick = rng.choice(len(src), 12, replace=False)
        keep = np.setdiff1d(np.arange(len(src)), pick)
        cs, cd, cw = src[pick], dst[pick], None if w is None else w[pick]
        before = _csr(src, dst, n, w)
        after = _csr(src[keep], dst[keep], n, None if w is None else w[keep])
    q = np.ones(n)
    y = _solve(before, q)
    r = _residual(before, y, q)
    changed = np.unique(cs).astype(np.int64)
    edge_change_residual(before.indptr.astype(np.int64), before.indices.astype(np.int64),
                         before.data.astype(np.float32) if weighted else np.zeros(0, np.float32),
                         y, _inv(before), _inv(after), changed, cs.astype(np.int64),
                         cd.astype(np.int64), np.zeros(len(cs)),
                         sign * (cw if weighted else np.ones(len(cs))), ALPHA, r)
    np.testing.assert_allclose(r, _residual(after, y, q), atol=1e-12)


@pytest.mark.parametrize("personalized", [False, True])
def test_push_ends_at_the_solution(personalized):
    n = 80
    src, dst = _graph(3, n, 400)
    a = _csr(src, dst, n)
    q = np.zeros(n) if personalized else np.ones(n)
    if personalized:
        q[[3, 7]] = [1.0, 2.0]
    y, r = np.zeros(n), (1 - ALPHA) * q  # from y = 0 the residual is the teleport
    empty = np.zeros(n + 1, np.int64)
    tol = 1e-10
    rounds, pushes, work, norm, total, done = push(
        a.indptr.astype(np.int64), a.indices.astype(np.int64), np.zeros(0, np.float32),
        empty, np.zeros(0, np.int64), np.zeros(0, np.float32), _inv(a), ALPHA,
        q if personalized else np.zeros(0), y, r, 0.0, tol, 0.0, 10**9)
    assert done and pushes > 0 and norm < tol * total
    np.testing.assert_allclose(total, y.sum())
    exact = _solve(a, q)
    # the normalised ranks are those of the exact solution, to the tolerance
    assert np.abs(y / total - exact / exact.sum()).sum() < 10 * tol
    # the residual the kernel leaves is the rank equation's
    np.testing.assert_allclose(r, _residual(a, y, q), atol=1e-10)


def test_push_stops_at_its_work_limit_with_a_consistent_pair():
    n = 80
    src, dst = _graph(4, n, 400)
    a = _csr(src, dst, n)
    q = np.ones(n)
    y, r = np.zeros(n), (1 - ALPHA) * q
    out = push(a.indptr.astype(np.int64), a.indices.astype(np.int64), np.zeros(0, np.float32),
               np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32),
               _inv(a), ALPHA, np.zeros(0), y, r, 0.0, 1e-12, 0.0, 100)
    assert out[-1] is False or out[-1] == 0
    np.testing.assert_allclose(r, _residual(a, y, q), atol=1e-12)


def test_push_stops_early_where_the_rounds_it_still_needs_pass_the_limit():
    """A push whose remaining rounds (at ``damping`` a round, each as much work as its
    last) would take it past ``max_work`` stops before it, its pair consistent; unlimited,
    the same push needs more than ``max_work``."""
    side = 30  # a grid both ways: the residual spreads slowly
    ids = np.arange(side * side).reshape(side, side)
    a, b = [ids[:, :-1], ids[:-1]], [ids[:, 1:], ids[1:]]
    src = np.concatenate([x.ravel() for x in a + b])
    dst = np.concatenate([x.ravel() for x in b + a])
    n = side * side
    g = _csr(src, dst, n)
    q = np.ones(n)

    def run(limit):
        y, r = np.zeros(n), (1 - ALPHA) * q
        out = push(g.indptr.astype(np.int64), g.indices.astype(np.int64),
                   np.zeros(0, np.float32), np.zeros(n + 1, np.int64), np.zeros(0, np.int64),
                   np.zeros(0, np.float32), _inv(g), ALPHA, np.zeros(0), y, r, 0.0, 1e-12,
                   0.0, limit)
        return out, y, r

    full, _, _ = run(10**12)
    assert full[-1] and full[2] > 100_000
    (rounds, pushes, work, norm, total, done), y, r = run(100_000)
    assert not done and 0 < work < 50_000  # well before the limit
    np.testing.assert_allclose(r, _residual(g, y, q), atol=1e-12)


def test_ball_sizes_on_a_path_and_a_grid_and_the_edge_limit():
    path = _csr(np.arange(99), np.arange(1, 100), 100)
    sizes = ball_sizes(path.indptr.astype(np.int64), path.indices.astype(np.int64),
                       np.array([10, 50], np.int64), 8, 10**6)
    assert sizes.tolist() == [2, 4, 6, 8, 10, 12, 14, 16, 18]
    side = 21
    ids = np.arange(side * side).reshape(side, side)
    a, b = [ids[:, :-1], ids[:-1]], [ids[:, 1:], ids[1:]]
    g = _csr(np.concatenate([x.ravel() for x in a + b]),
             np.concatenate([x.ravel() for x in b + a]), side * side)
    centre = np.array([ids[10, 10]], np.int64)
    sizes = ball_sizes(g.indptr.astype(np.int64), g.indices.astype(np.int64), centre, 6, 10**6)
    assert sizes.tolist() == [2 * h * h + 2 * h + 1 for h in range(7)]  # a diamond
    capped = ball_sizes(g.indptr.astype(np.int64), g.indices.astype(np.int64), centre, 6, 20)
    assert capped[0] == 1 and capped[-1] == -1


def test_push_stops_where_the_bound_carried_leaves_no_target():
    """``extra`` at or above ``target * sum(y)``: no norm can meet the target, and a
    residual pushed to nothing (every node here loops on itself: the residual shrinks by
    ``damping`` a push, down to denormals and 0) went on forever with an unlimited
    ``max_work`` (a delta push chain whose previous bound had spent the tolerance, with
    the work cost set to 0, hung). It stops at once, unconverged, its pair consistent."""
    n = 4
    a = _csr(np.arange(n), np.arange(n), n)
    q = np.ones(n)
    y, r = np.zeros(n), (1 - ALPHA) * q
    rounds, pushes, work, norm, total, done = push(
        a.indptr.astype(np.int64), a.indices.astype(np.int64), np.zeros(0, np.float32),
        np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32), _inv(a),
        ALPHA, np.zeros(0), y, r, 0.0, 1e-12, 1.0, 2**62)
    assert not done and (rounds, pushes) == (0, 0)
    np.testing.assert_allclose(r, _residual(a, y, q), atol=1e-12)
