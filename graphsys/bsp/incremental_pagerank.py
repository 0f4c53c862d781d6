r"""PageRank and personalized PageRank after edges were appended, deleted or re-weighted, by
pushing the residual the change creates instead of iterating over the whole graph again
(:mod:`graphsys.kernels.pagerank_push`; Ohsaka et al., KDD 2015; Zhang et al., KDD 2016);
the guide is docs/growing.md. A run given a previous result (``init``) records how it
started in ``result.stats.start`` and says it in ``result.stats.method``:

* ``delta`` when the changed pairs and new edges are at most :data:`DELTA_MAX_FRACTION` of
  the edges read, in memory on the CPU, and every previous edge set has a stored CSR index
  (mapped, not built). The previous ranks :math:`x` become :math:`y = c x` with
  :math:`c = (1-\alpha) \sum_{old} q / s` (:math:`s`: the previous teleport-and-dangling
  share), so that :math:`r(y) = c R` with :math:`R` the previous run's residual. The
  change alters :math:`r` only at the out-neighbours of sources whose out-edges changed
  (with either sign: deleted weight makes it negative), at the new edges' targets and at
  new nodes; that change, computed exactly from the stored CSR plus a second CSR of what
  the change adds to it, is pushed until :math:`\lVert L(r)\rVert_1` (with
  :math:`L(v) = v - (\sum v) p`) is below half of what ``tol`` leaves after
  :math:`c \lVert R\rVert_1`. The result's bound ``stats.residual`` is below ``tol``, the
  stopping rule of a run from scratch; a chain of delta runs halves the budget left each
  time, and below :data:`MIN_BUDGET` of ``tol`` the run starts warm instead. The push is
  taken only where its estimated cost (:func:`_plan`, :func:`_growth`) is at most
  :data:`PUSH_SHARE` of the warm start's, both counted in edges read, and hands its ranks
  to the power iteration once its counted work would pass the warm start's; the cheap
  facts decide first (the changed share from the manifest, the budget, the nodes the first
  residual can reach from the CSR's rows of the changed sources).
* ``warm`` elsewhere (more changed, a first residual reaching more than
  :data:`LOCAL_MAX_SHARE` of the nodes, a costlier push, no stored CSR, another device or
  mode, a time view, change sets that do not change every edge set alike, a re-added
  edge, a previous run that did not converge or has no tolerance): the power iteration
  from the previous ranks (:func:`graphsys.bsp.incremental.pagerank_warm_start`), one
  power step on where the decision computed the change's residual.

Deleted nodes stay, isolated, so ids do not move; a node that lost its last out-edge
becomes dangling.

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

A deletion next: the path loses its edge 100 -> 101, node 100 its only out-edge.

>>> from graphsys.storage.changes import delete_edges
>>> before, _ = after.to_table(), build_index(g, ("csr",), edge_sets=["day2"])
>>> _ = delete_edges(d / "g", [100], [101])
>>> g = graphsys.open_graph(d / "g")
>>> cut = bsp.pagerank(g, tol=1e-10, init=before)
>>> cut.stats.start, cut.stats.method.startswith("delta push (0 new edges, 1 deleted pairs")
('delta', True)
>>> scratch = bsp.pagerank(g, tol=1e-10, max_iters=300)
>>> bool(np.abs(cut.values - scratch.values).sum() < 1e-9)
True
"""

from __future__ import annotations

import time

import numba
import numpy as np

from graphsys.bsp import incremental_changes as changes
from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.incremental import Previous, pagerank_warm_start
from graphsys.bsp.stats import SuperstepStats
from graphsys.errors import FormatError
from graphsys.kernels.arrays import read_only
from graphsys.kernels.pagerank_push import ball_sizes, edge_change_residual, push
from graphsys.views.rows import from_pairs

#: The largest share of the edges read that may be new for a delta push; above it the warm
#: start (docs/growing.md has the measurements behind it)
DELTA_MAX_FRACTION = 0.01
#: What a unit of the push's work (an edge scanned, a node a round reads) costs, in edges
#: one thread of a superstep streams (times the threads: the push runs on one)
PUSH_WORK_COST = 8.0
#: What a warm start pays before its first superstep, in supersteps: it builds the changed
#: view's layout, where the push maps the stored CSR
WARM_SETUP_SUPERSTEPS = 30.0
#: The push's work over the out-degree volume of the nodes its first residual reaches times
#: its rounds to the power ``d`` (how the ball around those nodes grows with the hops:
#: about 2 on a grid, 1 on a path); where the ball outgrows :data:`SPREAD_EDGES` the
#: rounds cost a pass over the edges each
PUSH_SPREAD = 1.2
#: The ball's growth ``d`` is ``log2`` of its size at this many hops over its size at half
#: as many, around up to 16 of the nodes the first residual reaches
SPREAD_DEPTH = 16
#: The most edges the search for ``d`` reads
SPREAD_EDGES = 1 << 16
#: The push is taken where its estimated cost is at most this share of the warm start's
#: (the estimate is good to about a factor two); once under way it stops at the whole
PUSH_SHARE = 0.5
#: The largest share of the nodes the new edges' first residual may reach for the push to
#: go on; beyond it the change is not local (new edges at hubs of a fast-mixing graph) and
#: the run takes the warm start
LOCAL_MAX_SHARE = 0.02
#: The least share of ``tol`` a delta push may be left (after the previous run's bound)
MIN_BUDGET = 1e-3


def pagerank_from(spec, graph, previous: Previous, *, source=None, params=None,
                  max_iters: int | None = None, **kwargs) -> Result:
    """PageRank (or personalized PageRank) from ``previous``'s ranks on the graph changed
    since (edges appended, deleted or re-weighted): a delta push or a warm start, as the
    module docstring says; ``result.stats.start`` records which."""
    program = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"),
                        **(params or {}))
    old = previous.values[previous.known]
    if not np.all(np.isfinite(old)) or (old < 0).any():
        raise FormatError(f"{previous.source}: ranks must be finite and non-negative")
    es = graph.edge_set(kwargs.get("edge_set"))
    sets = getattr(graph, "stored", graph).manifest.edge_sets
    # appended edges and the pairs of change sets, from the manifest (nothing read yet)
    share = sum(sets[m].num_edges for m in previous.new_edge_sets) / max(es.num_edges, 1)
    why = _no_delta(graph, es, previous, kwargs)
    if why is None and share > DELTA_MAX_FRACTION:
        why = (f"new and changed edges {share:.2%} of those read, above the delta push's "
               f"{DELTA_MAX_FRACTION:.0%}")
    change, start = None, None
    if why is None:  # the one reader of a change (WCC/BFS/SSSP repairs read it too)
        change = changes.read_edges_as_stored(graph, previous, kwargs.get("edge_set"))
        why = change if isinstance(change, str) else None
    if why is None:
        result = _delta(spec, graph, previous, program, change, max_iters, kwargs)
        if isinstance(result, Result):
            return result
        # the change reaches too many nodes to push, or too little of tol is left
        why, start = result
        why = why or f"the previous run's bound leaves less than {MIN_BUDGET:g} of tol"
    # where the push does not apply or pay: the power iteration from the previous ranks
    # (or one superstep on, where the decision computed the first residual)
    result = pagerank_warm_start(spec, graph, previous, source=source, params=params,
                                 max_iters=max_iters, start=start, **kwargs)
    result.stats.method += f" ({why})"
    return result


def _no_delta(graph, es, previous: Previous, kwargs) -> str | None:
    """Why a delta push does not apply (None: it does)."""
    why = changes.repair_applies(kwargs, "a delta push")
    if why is not None:
        return why
    if getattr(graph, "stored", None) is not None:
        return "a delta push reads no time view"
    if not previous.converged or previous.tol is None:
        return "the previous run did not converge to a recorded tolerance"
    if not previous.known.any():
        return "the previous result lists no node"
    sets = graph.manifest.edge_sets
    old = [m for m in es.parts if m not in previous.new_edge_sets and not sets[m].change]
    # from the manifest: the index is mapped (and checked) where the push reads it
    missing = [m for m in old if "csr" not in graph.manifest.indexes.get(m, {})]
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


def _row_entries(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, position) int64 of every CSR entry of ``rows``."""
    start, count = indptr[rows].astype(np.int64), np.diff(indptr)[rows].astype(np.int64)
    first = np.repeat(np.cumsum(count) - count, count)
    return np.repeat(rows, count), np.repeat(start, count) + np.arange(count.sum()) - first


def _weight_at(key: np.ndarray, keys: np.ndarray, weights: np.ndarray,
               otherwise: np.ndarray) -> np.ndarray:
    """The weight ``keys`` (sorted) give each ``key``, ``otherwise`` where none does."""
    if not len(keys):
        return otherwise
    pos = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
    return np.where(keys[pos] == key, weights[pos].astype(np.float64), otherwise)


def _edits(n: int, adj, csr_w, change, weighted: bool):
    """The edges whose weight differs from the stored CSR's before or after ``change``
    (``src, dst, before, after`` of
    :func:`~graphsys.kernels.pagerank_push.edge_change_residual`: the deleted and
    re-weighted stored edges, then the appended ones) and the exact (weighted) out-degree
    float64 (N,) before and after the change."""
    keys = [change.deleted] + ([change.updated, change.before_updated] if weighted else [])
    rows = np.unique(np.concatenate(keys) // n)
    u, pos = _row_entries(adj.indptr, rows)
    key = u * n + adj.indices[pos].astype(np.int64)
    raw = np.ones(len(pos)) if csr_w is None else csr_w[pos].astype(np.float64)
    then, now = raw, raw
    if weighted:
        then = _weight_at(key, change.before_updated, change.before_updated_weight, raw)
        now = _weight_at(key, change.updated, change.updated_weight, raw)
    gone_before = np.isin(key, np.setdiff1d(change.deleted, change.changed_deleted))
    before = np.where(gone_before, 0.0, then) - raw
    after = np.where(np.isin(key, change.deleted), 0.0, now) - raw
    appended = np.ones(len(change.src)) if not weighted or change.weight is None \
        else change.weight.astype(np.float64)
    if weighted and (not np.all(np.isfinite(appended)) or (appended < 0).any()):
        raise FormatError("edge weights must be finite and non-negative (weighted "
                          "PageRank)")
    # the rows a change touches summed again exactly (a deleted last edge leaves 0, not
    # the rounding of a difference of running sums)
    stored = _out_degree(adj.indptr, csr_w)
    degree = [stored.copy(), stored.copy()]
    for k, d in enumerate((before, after)):
        degree[k][rows] = np.bincount(u, raw + d, minlength=n)[rows]
    degree[1] += np.bincount(change.src, appended, minlength=n)
    edit = (before != 0) | (after != 0)
    return (np.concatenate([u[edit], change.src]),
            np.concatenate([key[edit] % n, change.dst]),
            np.concatenate([before[edit], np.zeros(len(appended))]),
            np.concatenate([after[edit], appended])), degree[0], degree[1]


def _delta(spec, graph, previous: Previous, program, change, max_iters, kwargs
           ) -> Result | tuple[str | None, np.ndarray | None]:
    """The delta push (module docstring), or where it does not pay ``(why, start)``: why
    (None when the budget left is too small) and the ranks one power step from the
    previous ones where the residual was computed (else None): the warm start's start."""
    t0 = time.perf_counter()
    n, a, tol, weighted = graph.num_nodes(), program.damping, program.tol, program.weighted
    carried = previous.residual if previous.residual is not None else a * previous.tol
    if (tol - carried) / 2.0 < MIN_BUDGET * tol:  # c / sum(y) is about 1
        return None, None
    adj = graph.csr(change.old, weights=weighted)
    most = _reach(n, adj.indptr, adj.indices, change, previous.known, weighted,
                  LOCAL_MAX_SHARE * n)
    if most > LOCAL_MAX_SHARE * n:
        return _too_wide(most / n, "at least "), None
    csr_w = adj.weight if weighted and adj.weight is not None else None
    (src, dst, before, after), deg_old, deg_new = _edits(n, adj, csr_w, change, weighted)
    inv_old = _inverse(deg_old)
    inv_new = inv_old.copy()
    moved = np.flatnonzero(deg_new != deg_old)
    inv_new[moved] = _inverse(deg_new[moved])
    q, known = _teleport(program, n), previous.known
    x = previous.values[known] / previous.values[known].sum()
    dangling = float(x[deg_old[known] == 0].sum())
    c = (1.0 - a) * q[known].sum() / (a * dangling + 1.0 - a)
    y = np.zeros(n)
    y[known] = c * x
    r = np.zeros(n)
    r[~known] = (1.0 - a) * q[~known]
    # read-only views of the old edges, mapped or built: one signature of each kernel
    # (and of every array the kernels only read: change rows mapped or built alike)
    old_ip, old_ix, old_w = read_only(adj.indptr, adj.indices,
                                      np.zeros(0, np.float32) if csr_w is None else csr_w)
    inv_old, inv_new, src, dst, before, after = read_only(inv_old, inv_new, src, dst, before,
                                                          after)
    edge_change_residual(old_ip, old_ix, old_w, y, inv_old, inv_new,
                         *read_only(np.unique(src)), src, dst, before, after, a, r)
    reached = np.flatnonzero(r)
    if len(reached) > LOCAL_MAX_SHARE * n:
        return _too_wide(len(reached) / n), _stepped(y, r)
    budget = _plan(old_ip, old_ix, r, reached, float(y.sum()), a, tol, c * carried,
                   graph.edge_set(kwargs.get("edge_set")).num_edges)
    if isinstance(budget, str):
        return budget, _stepped(y, r)
    # the graph after the change: the stored CSR plus what the change adds to it
    ip2, ix2, w2 = from_pairs(n, src, dst.astype(np.int64), after)
    setup = time.perf_counter() - t0
    rounds, pushes, work, norm, total, done = push(
        old_ip, old_ix, old_w, *read_only(ip2, ix2, w2), inv_new, a,
        *read_only(np.zeros(0) if program._teleport is None else q), y, r,
        float(y.sum()), tol / 2.0, c * carried / 2.0, budget)
    step = SuperstepStats(superstep=0, active=int(pushes), direction="push",
                          edges_scanned=int(work), messages_sent=int(work), fused=True)
    method = f"delta push ({_what(change)}, {int(pushes):,} pushes in {int(rounds)} rounds)"
    if not done:  # the residual spread too far: the power iteration from here
        program.initial = y / total
        result = run_program(graph, program, max_iters=spec.max_iters(graph, max_iters),
                             **kwargs)
        result.stats.method += (f", after a {method} stopped at {int(work):,} of its "
                                f"{budget:,} work (a warm start's estimated cost)")
        result.stats.start = "delta"
        return result
    return Result(values=y / total, graph=graph, stats=changes.run_stats(
        program.name, graph, kwargs, t0, setup, step, method, weighted=weighted,
        start="delta", residual=(norm + c * carried) / total))


def _too_wide(share: float, bound: str = "") -> str:
    return (f"the change's residual reaches {bound}{share:.1%} of the nodes, above the "
            f"delta push's {LOCAL_MAX_SHARE:.0%}")


def _reach(n: int, indptr, indices, change, known, weighted: bool, limit: float) -> int:
    """The most nodes the change's first residual can reach: the previous edges'
    out-neighbours of every source whose out-edges changed, the targets of the appended
    edges and the new nodes; counted until more than ``limit`` (then a count above it, not
    the whole): the sources' rows are read largest first, in slices of doubling volume,
    so a change at hubs stops after a few of them."""
    keys = [change.changed_deleted] + ([change.changed_updated] if weighted else [])
    sources = np.unique(np.concatenate([k // n for k in keys] + [change.src]))
    mark = ~known
    mark[change.dst] = True
    count = int(np.count_nonzero(mark))
    sizes = (indptr[sources + 1] - indptr[sources]).astype(np.int64)
    order = np.argsort(-sizes, kind="stable")
    volume = np.cumsum(sizes[order])
    lo, cap = 0, max(limit, 1.0)
    while lo < len(order) and count <= limit:
        hi = max(lo + 1, int(np.searchsorted(volume, cap, side="right")))
        mark[indices[_row_entries(indptr, sources[order[lo:hi]])[1]]] = True
        count, lo, cap = int(np.count_nonzero(mark)), hi, 2.0 * cap
    return count


def _stepped(y: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The ranks one power step from ``y`` (its first residual ``r`` added), normalised."""
    start = np.maximum(y + r, 0.0)
    return start / start.sum()


def _plan(indptr, indices, r, reached, total: float, damping: float, tol: float,
          carried: float, edges: int) -> int | str:
    """The push's work budget, or why a warm start costs less (the module docstring's cost
    model). ``r``: the first residual (unnormalised, ``reached`` its nonzero nodes),
    ``total``: the unnormalised ranks' sum, ``carried``: the previous run's bound scaled
    as they are, ``edges``: the edges a superstep reads."""
    rate = -np.log(min(max(damping, 1e-12), 1.0 - 1e-12))  # the norm's decay a round
    norm = float(np.abs(r).sum())
    goal = (tol * total - carried) / 2.0  # the norm the push must reach (push's target)
    rounds = np.log(max(norm / goal, 1.0)) / rate
    # the warm start: its layout, then supersteps until the change falls below tol
    steps = 1.0 + np.log(max((norm + carried) / (tol * total), 1.0)) / rate
    warm = edges * (WARM_SETUP_SUPERSTEPS + steps)
    volume = float((indptr[reached + 1] - indptr[reached]).sum())
    estimate = (edges + 2.0 * len(r)) * rounds  # a pass over the edges a round
    cost = PUSH_WORK_COST * numba.get_num_threads()
    # the ball search only where its answer can decide: the growth d is at least 0, so
    # (from one round up) the estimate is at least the smaller of the two without it
    if cost * estimate > PUSH_SHARE * warm and (
            rounds < 1.0 or cost * PUSH_SPREAD * volume <= PUSH_SHARE * warm):
        d = _growth(indptr, indices, reached)
        if np.isfinite(d):
            estimate = min(PUSH_SPREAD * volume * rounds ** d, estimate)
    elif cost * estimate > PUSH_SHARE * warm:
        estimate = min(PUSH_SPREAD * volume, estimate)
    if cost * estimate > PUSH_SHARE * warm:
        return (f"pushing the change's residual, about {estimate:,.0f} work over "
                f"{rounds:.0f} rounds, would cost more than {PUSH_SHARE:g} of a warm "
                f"start's layout and about {steps:.0f} supersteps")
    return int(min(warm / cost, 2.0 ** 62)) if cost > 0 else 2 ** 62


def _growth(indptr, indices, reached) -> float:
    """How the ball of out-hops around (up to 16 of) ``reached`` grows: ``log2`` of its
    size at :data:`SPREAD_DEPTH` hops over its size at half as many (about 2 on a grid, 1
    on a path, 0 where it stops growing); infinite where the search reads more than
    :data:`SPREAD_EDGES` edges first (a fast-mixing graph)."""
    if not len(reached):
        return 0.0
    sample = reached[::max(1, len(reached) // 16)][:16].astype(np.int64)
    sizes = ball_sizes(indptr, indices, sample, SPREAD_DEPTH, SPREAD_EDGES)
    if sizes[-1] < 0:
        return np.inf
    return max(0.0, float(np.log2(sizes[-1] / sizes[SPREAD_DEPTH // 2])))


def _what(change) -> str:
    """The change in words, for ``stats.method``."""
    words = [f"{len(change.src):,} new edges"]
    if len(change.changed_deleted):
        words.append(f"{len(change.changed_deleted):,} deleted pairs")
    if len(change.changed_updated):
        words.append(f"{len(change.changed_updated):,} re-weighted")
    return ", ".join(words)
