"""Eigenvector and Katz centrality and square clustering behind NetworkX's signatures, over
graphsys's kernels (:mod:`graphsys.kernels.centrality`), with no BSP run (and no torch
import, but for the strong connectivity test of a directed graph's
``eigenvector_centrality_numpy``).

Eigenvector centrality iterates NetworkX's ``x <- (A^T + I) x``, divided by its Euclidean
norm, from ``nstart`` divided by its sum (all ones by default), until the L1 change is below
``N * tol``, else ``PowerIterationFailedConvergence`` after ``max_iter`` iterations. Katz
centrality iterates ``x <- alpha A^T x + beta`` from ``nstart`` (0 by default) with the same
test, and divides the answer by its norm with ``normalized``. ``A^T x`` is one weighted pull
over the in-adjacency (a directed graph's in-edges; an undirected graph's neighbours, a
self-loop once, as NetworkX's ``G[n]`` holds it). The ``_numpy`` variants (NetworkX's ARPACK
eigenvector, its dense linear solve) run the same iterations to a tolerance near float64's
precision; where they do not converge the call is declined (NetworkX runs it). Arguments
graphsys does not take (``nstart`` not over exactly ``G``'s nodes, non-numeric vectors,
weights not stored exactly as float32) are declined by the checks
(:mod:`graphsys.nx_backend.checks`) or here."""

from __future__ import annotations

import math

import numpy as np

from graphsys.kernels.centrality import pull_product, square_counts
from graphsys.nx_backend.algorithms import _nx

#: The ``_numpy`` variants iterate until the L1 change is below ``N`` times this (times the
#: largest magnitude, for Katz's unnormalised iterate)...
TIGHT_TOL = 1e-15
#: ... for at most this many iterations, else the call is declined.
TIGHT_MAX_ITER = 10_000


def _operator(G, weight):
    """``x -> A^T x`` over ``G``'s in-adjacency, weighted when ``weight`` names the stored
    weights."""
    n = len(G)
    if G.null:
        return lambda x: np.zeros(n)
    indptr, indices = G.adjacency(transpose=True)
    w = np.zeros(0, np.float64)
    if G.weighted(weight):
        if not G.exact_weights:
            raise NotImplementedError("graphsys: these weights need float64 (graphsys "
                                      "stores float32 weights)")
        c = (G.graph.csc if G.directed else G.graph.csr)(weights=True)
        indptr, indices = np.asarray(c.indptr, np.int64), np.asarray(c.indices, np.int64)
        w = np.asarray(c.weight, np.float64)

    def product(x):
        y = np.empty(n, np.float64)
        pull_product(indptr, indices, w, np.ascontiguousarray(x, np.float64), y)
        return y

    return product


def _vector(G, values: dict) -> np.ndarray:
    return np.array([values[k] for k in G.keys], np.float64)


def _norm(x: np.ndarray) -> float:
    return math.hypot(*x.tolist())


def _eigen_iterate(G, product, x, max_iter, tol) -> np.ndarray | None:
    """NetworkX's power iteration on ``A^T + I`` from ``x``: the vector, or None where the
    L1 change stayed at or above ``N * tol`` for ``max_iter`` iterations."""
    n = len(G)
    for _ in range(max_iter):
        y = x + product(x)
        y /= _norm(y) or 1
        if np.abs(y - x).sum() < n * tol:
            return y
        x = y
    return None


def eigenvector_centrality(G, max_iter=100, tol=1.0e-6, nstart=None, weight=None):
    """``nx.eigenvector_centrality``: NetworkX's power iteration (see the module)."""
    nx = _nx()
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept("cannot compute centrality for the null graph")
    start = np.ones(len(G)) if nstart is None else _vector(G, nstart)
    if not start.any():
        raise nx.NetworkXError("initial vector cannot have all zero values")
    x = _eigen_iterate(G, _operator(G, weight), start / start.sum(), max_iter, tol)
    if x is None:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return G.node_dict(x)


def eigenvector_centrality_numpy(G, weight=None, max_iter=50, tol=0):
    """``nx.eigenvector_centrality_numpy``: the eigenvector NetworkX's ARPACK call finds
    (of the largest eigenvalue of ``A^T``, positive sum, unit norm), by the power
    iteration on ``A^T + I`` to :data:`TIGHT_TOL` (``AmbiguousSolution`` for a graph that
    is not (strongly) connected, as NetworkX's; a largest eigenvalue of 0, every weight 0,
    is declined: every vector is then an eigenvector, and NetworkX's ARPACK raises).
    ``max_iter`` is NetworkX's ARPACK's: below 1 declined (NetworkX's ``ValueError``), above
    a C int a ``ValueError`` (:func:`~graphsys.nx_backend.algorithms.check_arpack_iterations`)."""
    from graphsys.nx_backend import algorithms

    nx = _nx()
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept("cannot compute centrality for the null graph")
    connected = (algorithms.is_strongly_connected(G) if G.directed
                 else algorithms.is_connected(G))
    if not connected:
        raise nx.AmbiguousSolution("`eigenvector_centrality_numpy` does not give "
                                   "consistent results for disconnected graphs")
    algorithms.check_arpack_iterations(max_iter)
    product = _operator(G, weight)
    x = _eigen_iterate(G, product, np.full(len(G), 1.0 / len(G)), TIGHT_MAX_ITER, TIGHT_TOL)
    if x is None:
        raise NotImplementedError("graphsys: the power iteration did not converge "
                                  "(NetworkX's ARPACK may)")
    if not product(x).any():  # eigenvalue 0 (every weight 0): any vector, ARPACK refuses
        raise NotImplementedError("graphsys: the largest eigenvalue is 0 (no eigenvector "
                                  "is the centrality; NetworkX's ARPACK refuses)")
    return G.node_dict(x / (np.sign(x.sum()) * np.linalg.norm(x)))


def _beta(G, beta) -> np.ndarray:
    """NetworkX's ``beta``: a number for every node, or a dict over exactly ``G``'s nodes."""
    try:
        return np.full(len(G), float(beta))
    except (TypeError, ValueError, AttributeError) as err:
        if set(beta) != set(G.keys):
            raise _nx().NetworkXError("beta dictionary must have a value for every "
                                      "node") from err
        return _vector(G, beta)


def _katz_iterate(G, weight, alpha, b, x, max_iter, tol,
                  relative: bool = False) -> np.ndarray | None:
    """NetworkX's Katz iteration from ``x``: the vector, or None where the L1 change
    stayed at or above ``N * tol`` (times the iterate's largest magnitude, at least 1,
    with ``relative``) for ``max_iter`` iterations."""
    product = _operator(G, weight)
    n = len(G)
    for _ in range(max_iter):
        with np.errstate(over="ignore", invalid="ignore"):
            y = alpha * product(x) + b
            scale = max(1.0, float(np.abs(y).max())) if relative else 1.0
            if np.abs(y - x).sum() < n * tol * scale:
                return y
        if not np.isfinite(y).all():  # diverged: NetworkX's sums never converge either
            return None
        x = y
    return None


def katz_centrality(G, alpha=0.1, beta=1.0, max_iter=1000, tol=1.0e-6, nstart=None,
                    normalized=True, weight=None):
    """``nx.katz_centrality``: NetworkX's iteration (see the module)."""
    if len(G) == 0:
        return {}
    b = _beta(G, beta)
    start = np.zeros(len(G)) if nstart is None else _vector(G, nstart)
    x = _katz_iterate(G, weight, alpha, b, start, max_iter, tol)
    if x is None:
        raise _nx().PowerIterationFailedConvergence(max_iter)
    if normalized:
        x = x * (1.0 / (_norm(x) or 1.0))
    return G.node_dict(x)


def katz_centrality_numpy(G, alpha=0.1, beta=1.0, normalized=True, weight=None):
    """``nx.katz_centrality_numpy``: the solution of ``(I - alpha A^T) x = beta`` NetworkX
    solves densely, by the Katz iteration to :data:`TIGHT_TOL` (declined where it does not
    converge: ``alpha`` at or above the inverse of the largest eigenvalue), divided by its
    norm signed as its sum with ``normalized``."""
    if len(G) == 0:
        return {}
    if isinstance(beta, dict):
        b = _beta(G, beta)
    else:
        try:
            b = np.full(len(G), float(beta))
        except (TypeError, ValueError, AttributeError) as err:
            raise _nx().NetworkXError("beta must be a number") from err
    x = _katz_iterate(G, weight, alpha, b, np.zeros(len(G)), TIGHT_MAX_ITER,
                      TIGHT_TOL, relative=True)
    if x is None:
        raise NotImplementedError("graphsys: the Katz series does not converge for this "
                                  "alpha (NetworkX solves the system)")
    if normalized:
        x = x / (np.sign(x.sum()) * np.linalg.norm(x))
    return G.node_dict(x)


def square_clustering(G, nodes=None):
    """``nx.square_clustering``: each node's squares over NetworkX's potential squares
    (:func:`graphsys.kernels.centrality.square_counts`; of a directed graph, over the
    successors, NetworkX's neighbours there), the integer 0 where there is none; of one
    node, or a dict over ``nodes`` (every node by default)."""
    from graphsys.nx_backend.measures import _ids

    ids = np.asarray(_ids(G, nodes), np.int64)
    squares = np.zeros(len(ids), np.int64)
    potential = np.zeros(len(ids), np.int64)
    if not G.null and len(ids):
        square_counts(*G.adjacency(), *G.adjacency(transpose=True), G.directed, ids,
                      squares, potential)
    values = [s / p if p > 0 else 0 for s, p in zip(squares.tolist(), potential.tolist())]
    if nodes is not None and nodes in G:
        return values[0]
    return {G.keys[i]: v for i, v in zip(ids.tolist(), values)}
