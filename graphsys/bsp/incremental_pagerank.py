r"""PageRank and personalized PageRank after edges were appended, by pushing the residual
the new edges create instead of iterating over the whole graph again
(:mod:`graphsys.kernels.pagerank_push`; Ohsaka et al., KDD 2015; Zhang et al., KDD 2016).

A run given a previous result (``init``, :mod:`graphsys.bsp.incremental`) chooses how to
start, records it in ``result.stats.start`` and says it in ``result.stats.method``:

* ``delta`` when the new edges are at most :data:`DELTA_MAX_FRACTION` of the edges read,
  in memory on the CPU, and every edge set of the previous edges has a stored CSR index
  (``graphsys index --csr``: their out-edges are mapped, not built). The previous ranks
  :math:`x` (summing to 1) become the unnormalised values :math:`y = c x` with
  :math:`c = (1-\alpha) \sum_{old} q / s`, where
  :math:`s = \alpha \sum_{u\ \mathrm{dangling}} x_u + 1 - \alpha` is the previous graph's
  teleport-and-dangling share: then :math:`r(y) = c R` with :math:`R` the previous run's own
  residual (the change one more power step would have made). The new edges change
  :math:`r` only at the targets of the out-edges of their sources (whose out-degree
  changed), at their own targets and at the new nodes (:math:`(1-\alpha) q_v`); that change
  is computed exactly from the out-edges of the previous edge sets and the new edges, and
  pushed until :math:`\lVert L(r)\rVert_1` is below half of what ``tol`` leaves of
  :math:`\sum y` after :math:`c \lVert R\rVert_1`. The ranks are :math:`y / \sum y`,
  whose residual is :math:`L(r) / \sum y` with :math:`L(v) = v - (\sum v) p`; so the result's
  bound (``stats.residual``, recorded in its provenance) is that norm plus
  :math:`c \lVert R\rVert_1 / \sum y`, below ``tol``: the stopping rule of a run from
  scratch (whose bound is ``damping * tol``). A chain of delta runs halves the budget left
  each time; below :data:`MIN_BUDGET` of ``tol`` the run takes a warm start instead. A push
  that scans more than :data:`PUSH_MAX_SWEEPS` times the edges hands its ranks to the power
  iteration (a warm start from them).
* ``warm`` elsewhere (more changed; the new edges' first residual reaches more than
  :data:`LOCAL_MAX_SHARE` of the nodes; the previous edges have no stored CSR index;
  another device or mode; a previous run that did not converge or has no tolerance): the
  power iteration started from the previous ranks
  (:func:`graphsys.bsp.incremental.pagerank_warm_start`).

Edges are only added here. A removed edge is the same residual with the opposite sign
(:func:`graphsys.kernels.pagerank_push.edge_change_residual` takes a sign per edge), over the
out-edges of the graph before the change.

Examples
--------
>>> import tempfile, pathlib, numpy as np, graphsys
>>> from graphsys import bsp
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> g = graphsys.from_numpy(np.arange(200), np.arange(1, 201), d / "g")  # a path
>>> before = bsp.pagerank(g, tol=1e-10, max_iters=300).to_table()
>>> from graphsys.storage.adjacency_index import build_index
>>> _ = build_index(g, ("csr",))               # graphsys index --csr: mapped, not built
>>> _ = (d / "day2.tsv").write_text("200\t201\n")  # one more edge, to a new node
>>> _ = graphsys.ingest(d / "day2.tsv", d / "g", append=True, edge_set="day2")
>>> g = graphsys.open_graph(d / "g")
>>> after = bsp.pagerank(g, tol=1e-10, init=before)
>>> after.stats.start, after.stats.method, bool(after.stats.residual < 1e-10)
('delta', 'delta push (1 new edges, 1 pushes in 1 rounds)', True)
>>> scratch = bsp.pagerank(g, tol=1e-10, max_iters=300)
>>> bool(np.abs(after.values - scratch.values).sum() < 1e-9)
True
"""

from __future__ import annotations

import time

import numpy as np

from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.incremental import Previous, pagerank_warm_start
from graphsys.bsp.stats import RunStats, SuperstepStats
from graphsys.errors import FormatError
from graphsys.kernels.pagerank_push import edge_change_residual, push

#: The largest share of the edges read that may be new for a delta push; above it the warm
#: start (docs/growing.md has the measurements behind it)
DELTA_MAX_FRACTION = 0.01
#: A push that scans more than this many times the edges read stops and hands its ranks to
#: the power iteration: where the change reaches a slowly mixing part of the graph (its
#: residual then decays by only ``damping`` per push of every node holding it), pushing
#: costs more than the iteration
PUSH_MAX_SWEEPS = 2
#: The largest share of the nodes the new edges' first residual may reach for the push to
#: go on; beyond it the change is not local (new edges at hubs of a fast-mixing graph: on an
#: R-MAT of 2M edges a 0.1 % append reached half the nodes, and pushing to ``tol`` cost more
#: than the ten supersteps of a run from scratch), and the run takes the warm start
LOCAL_MAX_SHARE = 0.02
#: The least share of ``tol`` a delta push may be left (after the previous run's bound)
MIN_BUDGET = 1e-3


def pagerank_from(spec, graph, previous: Previous, *, source=None, params=None,
                  max_iters: int | None = None, **kwargs) -> Result:
    """PageRank (or personalized PageRank) from ``previous``'s ranks on the graph grown
    since: a delta push or a warm start, as the module docstring says;
    ``result.stats.start`` records which."""
    program = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"),
                        **(params or {}))
    old = previous.values[previous.known]
    if not np.all(np.isfinite(old)) or (old < 0).any():
        raise FormatError(f"{previous.source}: ranks must be finite and non-negative")
    es = graph.edge_set(kwargs.get("edge_set"))
    new = (graph.edge_set(list(previous.new_edge_sets)).num_edges
           if previous.new_edge_sets else 0)
    share = new / max(es.num_edges, 1)
    why = _no_delta(graph, es, previous, kwargs)
    if why is None and share > DELTA_MAX_FRACTION:
        why = (f"new edges {share:.2%} of those read, above the delta push's "
               f"{DELTA_MAX_FRACTION:.0%}")
    if why is None:
        result = _delta(spec, graph, previous, program, max_iters, kwargs)
        if isinstance(result, Result):
            return result
        # the change reaches too many nodes to push, or too little of tol is left
        why = result or f"the previous run's bound leaves less than {MIN_BUDGET:g} of tol"
    # where the push does not apply or pay: the power iteration from the previous ranks,
    # which also keeps the previous run's mode (a run that streamed streams again instead
    # of building the grown graph's layout)
    result = pagerank_warm_start(spec, graph, previous, source=source, params=params,
                                 max_iters=max_iters, **kwargs)
    result.stats.method += f" ({why})"
    return result


def _no_delta(graph, es, previous: Previous, kwargs) -> str | None:
    """Why a delta push does not apply (None: it does)."""
    if str(kwargs.get("device", "cpu")) != "cpu" or kwargs.get("distributed"):
        return "a delta push runs on one CPU"
    if kwargs.get("mode", "auto") not in ("auto", "memory") \
            or kwargs.get("backend", "auto") not in ("auto", "numba"):
        return "a delta push runs in memory with numba"
    if not previous.converged or previous.tol is None:
        return "the previous run did not converge to a recorded tolerance"
    if not previous.known.any():
        return "the previous result lists no node"
    old = [m for m in es.parts if m not in previous.new_edge_sets]
    missing = [m for m in old if graph.adjacency_index(m, "csr") is None]
    if missing or not old:
        return (f"the delta push reads the stored CSR index of the previous edges "
                f"(graphsys index --csr --edge-set {','.join(missing) or '...'} "
                f"{graph.path})")
    return None


def _teleport(program, n: int) -> np.ndarray:
    """The teleport weights ``q`` float64 (N,): 1 on every node, or the personalization."""
    p = program._teleport
    return np.ones(n) if p is None else np.asarray(p, np.float64)


def _inverse(deg: np.ndarray) -> np.ndarray:
    """1 / deg, 0 where deg is 0."""
    return np.divide(1.0, deg, out=np.zeros(len(deg)), where=deg > 0)


def _out_degree(indptr: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """(Weighted) out-degree float64 (N,) of a CSR."""
    if weights is None:
        return np.diff(indptr).astype(np.float64)
    total = np.concatenate([[0.0], np.cumsum(weights, dtype=np.float64)])
    return total[indptr[1:]] - total[indptr[:-1]]


def _new_csr(graph, previous: Previous, weighted: bool):
    """The new edges as (src, dst, weight or empty) and their CSR (indptr, indices,
    weights or empty) over all N nodes."""
    n = graph.num_nodes()
    parts = [(s, d, w) for s, d, _, w in graph.iter_edges(list(previous.new_edge_sets))] \
        if previous.new_edge_sets else []
    src = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    dst = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    w = np.zeros(0, np.float32)
    if weighted and parts:
        w = np.concatenate([p[2] if p[2] is not None else np.ones(len(p[0]), np.float32)
                            for p in parts])
        if not np.all(np.isfinite(w)) or (w < 0).any():
            raise FormatError("edge weights must be finite and non-negative (weighted "
                              "PageRank)")
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return (src, dst, w), (indptr, dst[order], w[order] if len(w) else w)


def _delta(spec, graph, previous: Previous, program, max_iters, kwargs
           ) -> Result | str | None:
    """The delta push (module docstring); None when the budget left is too small, or why
    pushing would cost more than the warm start (the first residual reaches more than
    :data:`LOCAL_MAX_SHARE` of the nodes)."""
    t0 = time.perf_counter()
    n, a, tol = graph.num_nodes(), program.damping, program.tol
    old_sets = [m for m in graph.edge_set(kwargs.get("edge_set")).parts
                if m not in previous.new_edge_sets]
    weighted = program.weighted
    adj = graph.csr(old_sets, weights=weighted)
    old_w = adj.weight if weighted and adj.weight is not None else None
    (src, dst, w), (ip2, ix2, w2) = _new_csr(graph, previous, weighted)
    deg_old = _out_degree(adj.indptr, old_w)
    deg_new = deg_old + (_out_degree(ip2, w2) if len(w2) else np.diff(ip2))
    inv_old, inv_new = _inverse(deg_old), _inverse(deg_new)
    q, known = _teleport(program, n), previous.known
    x = previous.values[known] / previous.values[known].sum()
    dangling = float(x[deg_old[known] == 0].sum())
    c = (1.0 - a) * q[known].sum() / (a * dangling + 1.0 - a)
    carried = previous.residual if previous.residual is not None else a * previous.tol
    if (tol - carried) / 2.0 < MIN_BUDGET * tol:  # c / sum(y) is about 1
        return None
    y = np.zeros(n)
    y[known] = c * x
    r = np.zeros(n)
    r[~known] = (1.0 - a) * q[~known]
    changed = np.unique(src)
    changed = changed[inv_old[changed] != inv_new[changed]].astype(np.int64)
    edge_change_residual(adj.indptr, adj.indices, _or_empty(old_w), y, inv_old, inv_new,
                         changed, src, dst, w, np.ones(len(src), np.int8), a, r)
    reached = np.count_nonzero(r)
    if reached > LOCAL_MAX_SHARE * n:
        return (f"the new edges' residual reaches {reached / n:.1%} of the nodes, above "
                f"the delta push's {LOCAL_MAX_SHARE:.0%}")
    setup = time.perf_counter() - t0
    limit = PUSH_MAX_SWEEPS * (int(adj.indptr[-1]) + len(src))
    rounds, pushes, work, norm, total, done = push(
        adj.indptr, adj.indices, _or_empty(old_w), ip2, ix2, w2, inv_new, a,
        np.zeros(0) if program._teleport is None else q, y, r,
        float(y.sum()), tol / 2.0, c * carried / 2.0, limit)
    step = SuperstepStats(superstep=0, active=int(pushes), direction="push",
                          edges_scanned=int(work), messages_sent=int(work), fused=True)
    step.seconds["edges"] = time.perf_counter() - t0 - setup
    method = (f"delta push ({len(src):,} new edges, {int(pushes):,} pushes in "
              f"{int(rounds)} rounds)")
    if not done:  # the residual spread too far: the power iteration from here
        program.initial = y / total
        result = run_program(graph, program, max_iters=spec.max_iters(graph, max_iters),
                             **kwargs)
        result.stats.method += f", after a {method} stopped at {int(work):,} edges"
        result.stats.start = "delta"
        return result
    stats = RunStats(algorithm=program.name, mode="memory", device="cpu", backend="numba",
                     world_size=1, num_nodes=n, num_edges=int(adj.indptr[-1]) + len(src),
                     setup_seconds=setup, seconds=time.perf_counter() - t0, converged=True,
                     method=method, supersteps=[step], weighted=weighted, start="delta",
                     residual=(norm + c * carried) / total)
    return Result(values=y / total, stats=stats, graph=graph)


def _or_empty(weights: np.ndarray | None) -> np.ndarray:
    return np.zeros(0, np.float32) if weights is None else weights
