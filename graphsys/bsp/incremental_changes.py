"""WCC, BFS and SSSP after edges were deleted, re-weighted and appended, from the previous
result and the changed edges (:mod:`graphsys.kernels.repair`), reading only the part of the
graph the change reaches.

A run given a previous result (``init``, :mod:`graphsys.bsp.incremental`) of a graph that
since gained *change sets* (:mod:`graphsys.storage.changes`) reads the graph after the
change as the adjacency of the edge sets the previous result read (their stored CSR/CSC
index, mapped, where ``graphsys index --csr --csc`` built one; else built from their
buckets) with the pairs the change sets delete skipped and those they re-weight given their
new weight, plus the edges appended since (read through the change sets after them). BFS
and SSSP on one CPU in memory take this path after a pure append too.

* **WCC**: only an old component that lost an edge can split; in each, a search grows from
  every end of a deleted edge (the one that has scanned least first), searches that meet
  merge, and it stops once at most one of them is still growing
  (:func:`graphsys.kernels.repair.wcc_race`); the other components are kept whole and
  the appended edges are then unioned (the union-find of
  :func:`graphsys.bsp.incremental.components_from`).
* **BFS, SSSP**: the targets of deleted and re-weighted edges that lost the in-edge their
  distance came from are invalidated, and so are the nodes whose distance came from them;
  these take the best distance their valid in-neighbours offer, and a Dijkstra-ordered
  relaxation from them and from the sources of new and re-weighted edges reaches the fixed
  point (KickStarter's trimming; :func:`graphsys.kernels.repair.distance_repair`).

A run starts from scratch instead, and says why in ``result.stats.method``, with
``result.stats.start == "scratch"`` (a repair has ``"repair"``): where the changed edges
(appended, deleted and re-weighted pairs) are more than :data:`REPAIR_MAX_FRACTION` of the
edges read, on another device, mode or backend, on a time view, where a change set since
the previous result does not change every edge set it read alike, or where the repair
scans more than :data:`REPAIR_MAX_SWEEPS` times the edges read. The answers are a run from
scratch's: labels are each component's smallest internal id, distances exact.

Appends and deletions may alternate: a change set the previous result read does not target
the edge sets appended after it, so where such an edge set holds a pair it deletes or
re-weights (an edge re-added), those edges are read as appended ones (restored over the
pairs the adjacency of the older edge sets drops or re-weights) and the WCC search reads
their pairs as present (:func:`_readded`). PageRank's push and k-core's update, which
count parallel edges, take another start there (:func:`read_edges_as_stored`).

Examples
--------
>>> import tempfile, pathlib, numpy as np, graphsys
>>> from graphsys import bsp
>>> from graphsys.storage.changes import delete_edges
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> g = graphsys.from_numpy(np.arange(100), np.arange(1, 101), d / "g")   # a path
>>> before = {"wcc": bsp.wcc(g).to_table(), "bfs": bsp.bfs(g, 0).to_table()}
>>> _ = delete_edges(d / "g", [60], [61])                                # cut it in two
>>> g = graphsys.open_graph(d / "g")
>>> after = bsp.wcc(g, init=before["wcc"])
>>> after.stats.start, after.stats.method
('repair', 'repaired (1 deleted pairs, 2 ends searched, 0 new edges unioned)')
>>> bool((after.values == bsp.wcc(g).values).all()), len(set(after.values))
(True, 2)
>>> levels = bsp.bfs(g, 0, init=before["bfs"])      # 40 nodes no longer reached
>>> levels.stats.method
'repaired (1 deleted pairs, 0 re-weighted, 0 new edges; 40 invalidated, 0 relaxed)'
>>> levels.value(61), bool((levels.values == bsp.bfs(g, 0).values).all())
(inf, True)
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.stats import RunStats, SuperstepStats
from graphsys.errors import FormatError, GraphsysError
from graphsys.execution import Execution
from graphsys.kernels import repair
from graphsys.kernels.arrays import read_only
from graphsys.storage import index_merge
from graphsys.storage.csr import index_file, map_index, mapped_index
from graphsys.storage.edge_changes import apply, global_keys, load_bucket
from graphsys.views.rows import from_pairs

#: The largest share of the edges read that may have changed (appended, deleted or
#: re-weighted pairs) for a repair; above it a run from scratch
REPAIR_MAX_FRACTION = 0.05
#: A repair that scans more than this many times both ends of every edge read (a search
#: along out- and in-edges sees each edge from both ends) stops and runs from scratch
REPAIR_MAX_SWEEPS = 1


class Costly(str):
    """Why a repair does not pay (more changed, or it reached too far): a run from scratch
    answers, where another reason leaves an append's start to the engine."""


@dataclass
class Change:
    """What changed between the edges a previous result read and those a run reads.

    Attributes
    ----------
    old : list of str
        The edge sets (not change sets) the previous result read.
    src, dst : numpy.ndarray
        int64 global ids of the edges appended since, as the run reads them.
    weight : numpy.ndarray or None
        float32 weights of those (None: unweighted).
    deleted, updated : numpy.ndarray
        Sorted int64 keys ``u * N + v`` of the pairs every change set (the previous
        result's too) deletes / re-weights in ``old``; ``updated_weight`` float32 the last
        weight of each.
    changed_deleted, changed_updated : numpy.ndarray
        The keys among those of the change sets since the previous result.
    pairs : int
        Pairs the change sets since the previous result list.
    before_updated, before_updated_weight : numpy.ndarray
        The same as ``updated``/``updated_weight`` over the change sets the previous
        result read: the weights in force before the change.
    before_deleted : numpy.ndarray
        The same as ``deleted`` over the change sets the previous result read.
    readded : int
        The last of ``src``/``dst`` that are not appended since but edges of ``old`` that a
        change set the previous result read lists without targeting them (appended after
        it: ``deleted`` and ``updated`` hold their pairs, so the adjacency of ``old`` read
        through them lacks these edges or gives them another weight, and they are added
        back as if appended; exact for a repair, not for a push counting edges).
    """

    old: list
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    deleted: np.ndarray
    updated: np.ndarray
    updated_weight: np.ndarray
    changed_deleted: np.ndarray
    changed_updated: np.ndarray
    pairs: int
    before_updated: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64))
    before_updated_weight: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.float32))
    before_deleted: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64))
    readded: int = 0


def _appended(graph, names: list, changes: list) -> tuple[np.ndarray, ...]:
    """The edges of the appended edge sets ``names`` through the change sets ``changes``
    after them: (src, dst, weight or None), global ids."""
    off = np.asarray(graph.partition_offsets(), np.int64)
    sets = graph.manifest.edge_sets
    src, dst, wts = [], [], []
    weighted = all(sets[m].has_weight for m in names)
    for m in names:
        for i, j in sorted(sets[m].buckets):
            bucket = [load_bucket(graph, c, i, j) for c in changes
                      if (i, j) in sets[c].buckets and m in sets[c].change.targets]
            for eb in graph.bucket(i, j, m).batches():
                eb = apply(eb, m, bucket)
                src.append(off[i] + np.asarray(eb.src, np.int64))
                dst.append(off[j] + np.asarray(eb.dst, np.int64))
                if weighted:
                    wts.append(np.asarray(eb.weight, np.float32))
    empty = np.zeros(0, np.int64)
    return (np.concatenate(src) if src else empty, np.concatenate(dst) if dst else empty,
            (np.concatenate(wts) if wts else np.zeros(0, np.float32)) if weighted else None)


def read_change(graph, previous, edge_set=None) -> Change | str:
    """The :class:`Change` since ``previous``; a string saying why a repair does not apply
    instead."""
    if getattr(graph, "stored", None) is not None:
        return "a time view is run from scratch"
    if graph.num_nodes() >= 1 << 31:
        return "a repair reads graphs of fewer than 2**31 nodes"
    sets = graph.manifest.edge_sets
    parts = graph.edge_set(edge_set).parts
    new = set(previous.new_edge_sets)
    old = [m for m in parts if m not in new and not sets[m].change]
    changes = [m for m in parts if sets[m].change]  # in manifest order: the order they apply
    if any(m not in sets[c].change.targets for c in changes if c in new for m in old):
        return "a change set since the previous result does not change every edge set " \
               "read before alike"
    appended = [m for m in parts if m in new and not sets[m].change]
    after = [c for c in changes if c in new]
    src, dst, weight = _appended(graph, appended, after)
    readded = _readded(graph, old, changes, new)
    if readded is not None:
        src, dst = np.concatenate([src, readded[0]]), np.concatenate([dst, readded[1]])
        weight = None if weight is None or readded[2] is None else np.concatenate(
            [weight, readded[2]])
    deleted, since, gone = [], {"delete": [], "update": []}, []
    every, before = ([], []), ([], [])  # updates: all, those the previous result read
    pairs = 0
    for c in changes:
        keys, w = global_keys(graph, c)  # kept by the Graph: a view's index reads them
        if w is None:
            deleted.append(keys)
            if c not in new:
                gone.append(keys)
        else:
            for into in (every, before) if c not in new else (every,):
                into[0].append(keys)
                into[1].append(w)
        if c in new:
            since["delete" if w is None else "update"].append(keys)
            pairs += len(keys)
    dk = np.unique(np.concatenate(deleted)) if deleted else np.zeros(0, np.int64)
    return Change(old, src, dst, weight, dk, *_last_weights(*every), *(
        np.unique(np.concatenate(since[k])) if since[k] else np.zeros(0, np.int64)
        for k in ("delete", "update")), pairs, *_last_weights(*before),
        np.unique(np.concatenate(gone)) if gone else np.zeros(0, np.int64),
        0 if readded is None else len(readded[0]))


def _readded(graph, old: list, changes: list, new: set) -> tuple | None:
    """The edges of the edge sets ``old`` appended after a change set the previous result
    read (so not among its targets) whose pairs that change set lists (an edge re-added
    after its deletion, or of a pair re-weighted before): (src, dst, weight or None), read
    through the change sets that target them; None where no such change set precedes an
    edge set of ``old``. The adjacency of ``old`` is read through the change pair by pair,
    so these edges are read from it deleted or re-weighted as their pair is; they join the
    appended edges, which restores them."""
    sets, n = graph.manifest.edge_sets, graph.num_nodes()
    found = [], [], []
    for m in old:
        missed = [c for c in changes if c not in new and m not in sets[c].change.targets]
        if not missed:
            continue
        keys = np.unique(np.concatenate([global_keys(graph, c)[0] for c in missed]))
        s, d, w = _appended(graph, [m], changes)
        hit = np.isin(s * n + d, keys)
        for into, x in zip(found, (s, d, w)):
            into.append(None if x is None else x[hit])
    if not found[0]:
        return None
    w = None if any(x is None for x in found[2]) else np.concatenate(found[2])
    return np.concatenate(found[0]), np.concatenate(found[1]), w


def read_edges_as_stored(graph, previous, edge_set=None) -> Change | str:
    """:func:`read_change` for a reader of the adjacency before the change edge by edge (a
    push counting parallel edges, core numbers): a string where edges were re-added after a
    change set the previous result read (``Change.readded``)."""
    change = read_change(graph, previous, edge_set)
    if not isinstance(change, str) and change.readded:
        return (f"{change.readded:,} edges appended after a change set the previous result "
                f"read list its pairs")
    return change


def _last_weights(keys: list, weights: list) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sorted keys and the last weight given each."""
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    k, w = np.concatenate(keys)[::-1], np.concatenate(weights)[::-1]
    uniq, first = np.unique(k, return_index=True)
    return uniq, w[first]


def _old_adjacency(graph, old: list, kind: str, weighted: bool):
    """The edges ``old`` read as ``kind`` (``csr``, ``csc``): ``(indptr, indices, weights
    or empty)`` and the numbering ``lay`` of :mod:`graphsys.kernels.repair`. One edge set
    with a stored index is mapped as built (an index built before an append is not
    renumbered: the kernels translate the ids they touch); otherwise
    :meth:`~graphsys.storage.graph.Graph.csr` / ``csc`` (a merged or built adjacency), its
    neighbour ids of a stored index's dtype. Either way the arrays are read-only (views),
    so that one compiled signature of the repair kernels serves both."""
    empty = np.zeros(0, np.int64)
    info = graph.manifest.indexes.get(old[0], {}).get(kind) if len(old) == 1 else None
    mapped = None
    if info is not None and (not info.layout or tuple(info.layout) == index_merge.layout(
            graph.manifest)):  # in the graph's numbering: mapped and checked once per Graph
        mapped = mapped_index(graph, old[0], kind)
    elif info is not None:
        for column in info.columns():
            graph.check_hash(index_file(old[0], kind, column))
        mapped = map_index(graph, old[0], kind, renumber=False)
    if mapped is None:
        adj = graph.csr(old, weights=weighted) if kind == "csr" else graph.csc(
            old, weights=weighted)
        indptr, indices, weight, lay = adj.indptr, adj.indices, adj.weight, (empty,) * 3
    else:
        indptr, indices, weight = mapped.indptr, mapped.indices, mapped.weight
        lay = _layout(tuple(mapped.info.layout), index_merge.layout(graph.manifest))
    w = weight if weighted and weight is not None else np.zeros(0, np.float32)
    return (*read_only(indptr, indices, w), lay)


def _layout(old: tuple, new: tuple) -> tuple:
    """``(old_start, new_start, old_size)`` of each partition block, or empty arrays where
    the numbering has not moved."""
    if not old or old == new:
        return (np.zeros(0, np.int64),) * 3
    size = np.asarray(old, np.int64)
    starts = [np.concatenate([[0], np.cumsum(x, dtype=np.int64)[:-1]]).astype(np.int64)
              for x in (size, np.asarray(new, np.int64))]
    return starts[0], starts[1], size


def _flags(n: int, *key_sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding a key of ``key_sets``: (by source, by target) bool (N,)."""
    out, into = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
    for keys in key_sets:
        out[keys // n] = True
        into[keys % n] = True
    return out, into


def repair_applies(kwargs: dict, what: str = "a repair") -> str | None:
    """Why ``what`` does not apply to a run of these engine options (their ``execution``;
    None: it does)."""
    ex = kwargs.get("execution") or Execution()
    if str(ex.device) != "cpu" or ex.distributed:
        return f"{what} runs on one CPU"
    if ex.mode not in ("auto", "memory") or ex.backend not in ("auto", "numba"):
        return f"{what} runs in memory with numba"
    return None


def decide(graph, previous, kwargs) -> Change | str:
    """The change to repair from, or why the run starts from scratch (module docstring)."""
    why = repair_applies(kwargs)
    if why is not None:
        return why
    change = read_change(graph, previous, kwargs.get("edge_set"))
    if isinstance(change, str):
        return change
    read = max(graph.edge_set(kwargs.get("edge_set")).num_edges, 1)
    share = (len(change.src) + change.pairs) / read
    if share > REPAIR_MAX_FRACTION:
        return Costly(f"changed edges {share:.2%} of those read, above the repair's "
                      f"{REPAIR_MAX_FRACTION:.0%}")
    return change


def from_scratch(spec, graph, why: str, *, source=None, params=None, max_iters=None,
                 **kwargs) -> Result:
    """The run from scratch that replaces a repair, saying why."""
    program = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"),
                        **(params or {}))
    result = run_program(graph, program, max_iters=spec.max_iters(graph, max_iters), **kwargs)
    result.stats.method += f" (from scratch: {why})"
    result.stats.start = "scratch"
    return result


def _stats(spec, graph, kwargs, t0, setup, step, method, weighted=False) -> RunStats:
    step.seconds["edges"] = time.perf_counter() - t0 - setup
    return RunStats(algorithm=spec.name, mode="memory", device="cpu", backend="numba",
                    world_size=1, num_nodes=graph.num_nodes(),
                    num_edges=graph.edge_set(kwargs.get("edge_set")).num_edges,
                    setup_seconds=setup, seconds=time.perf_counter() - t0, converged=True,
                    method=method, supersteps=[step], weighted=weighted, start="repair")


def components_repaired(spec, graph, previous, labels, change: Change, kwargs, union_find
                        ) -> Result | str:
    """WCC after ``change`` from the old ``labels`` int64 (one per listed node, each below
    their count); a string saying why not when the search reaches too far. ``union_find``:
    :mod:`graphsys.bsp.incremental`'s kernels ``(union(parent, src, dst), roots(parent,
    out), trees(ids, labels, parent, first))``."""
    union, roots, trees = union_find
    t0 = time.perf_counter()
    n = graph.num_nodes()
    known = np.flatnonzero(previous.known)
    comp = np.full(n, -1, np.int64)
    comp[known] = labels
    ends = np.concatenate([change.changed_deleted // n, change.changed_deleted % n])
    u, v = change.changed_deleted // n, change.changed_deleted % n
    same = (u != v) & (comp[u] >= 0) & (comp[u] == comp[v])  # only an old edge can split
    seeds = np.unique(np.concatenate([u[same], v[same]])) if len(ends) else ends
    limit = _limit(graph, kwargs)
    work = 0
    key = comp
    if len(seeds):
        oip, oix, _, lay = _old_adjacency(graph, change.old, "csr", False)
        iip, iix, _, _ = _old_adjacency(graph, change.old, "csc", False)
        # the search reads the pairs there are now: a re-added edge's pair is one
        r = len(change.src) - change.readded
        gone = np.setdiff1d(change.deleted, change.src[r:] * n + change.dst[r:]) \
            if change.readded else change.deleted
        dout, din = _flags(n, gone)
        setup = time.perf_counter() - t0
        key, work, done = repair.wcc_race(n, oip, oix, iip, iix, lay, gone, dout, din, comp,
                                          len(known), seeds, limit)
        if not done:
            return Costly(f"the split search scanned more than {REPAIR_MAX_SWEEPS}x both "
                          f"ends of the edges")
    else:
        setup = time.perf_counter() - t0
    parent = np.arange(n, dtype=np.int64)
    has = np.flatnonzero(key >= 0)  # ascending: each tree rooted at its smallest node
    trees(has, key[has], parent, np.full(int(key.max(initial=-1)) + 1, -1, np.int64))
    merged = int(union(parent, change.src, change.dst))
    label = np.empty(n, np.int64)
    roots(parent, label)
    step = SuperstepStats(superstep=0, active=len(seeds), direction="repair",
                          edges_scanned=int(work) + len(change.src),
                          messages_sent=len(change.src), messages_combined=merged, fused=True)
    method = (f"repaired ({len(change.changed_deleted):,} deleted pairs, {len(seeds):,} "
              f"ends searched, {len(change.src):,} new edges unioned)")
    return Result(values=label.astype(np.float64),
                  stats=_stats(spec, graph, kwargs, t0, setup, step, method), graph=graph)


def _limit(graph, kwargs) -> int:
    """The most edge ends a repair scans before it stops."""
    return 2 * REPAIR_MAX_SWEEPS * graph.edge_set(kwargs.get("edge_set")).num_edges


def distances_repaired(spec, graph, previous, base, values, change: Change, kwargs
                       ) -> Result | str:
    """BFS levels or SSSP distances after ``change`` from ``values`` float64 (N,) (inf at
    new nodes; a copy, changed in place); a string saying why not when the repair reaches
    too far."""
    t0 = time.perf_counter()
    n = graph.num_nodes()
    use_w = base.message == "add_weight"
    weighted = use_w and graph.edge_set(kwargs.get("edge_set")).has_weight
    for w in (change.weight if weighted else None, change.updated_weight if weighted
              else None):
        if w is not None and len(w) and (np.isnan(w).any() or (w < 0).any()):
            raise GraphsysError("sssp: a negative (or NaN) edge weight among the changed "
                                "edges")
    oip, oix, ow, lay = _old_adjacency(graph, change.old, "csr", weighted)
    iip, iix, iw, _ = _old_adjacency(graph, change.old, "csc", weighted)
    w_new = change.weight if weighted and change.weight is not None else np.zeros(
        0, np.float32)
    nip, nix, nw = from_pairs(n, change.src, change.dst, w_new)
    mip, mix, mw = from_pairs(n, change.dst, change.src, w_new)
    uk = change.updated if weighted else np.zeros(0, np.int64)
    uw = change.updated_weight if weighted else np.zeros(0, np.float32)
    dout, din = _flags(n, change.deleted, uk)
    checks = _checks(change, n, values, base.relax_offset + (use_w and not weighted), weighted)
    es, ed, estep = _relaxed_edges(change, n, base, use_w, weighted)
    setup = time.perf_counter() - t0
    limit = _limit(graph, kwargs)
    gone, relaxed, work, done = repair.distance_repair(
        n, values, float(base.relax_offset), use_w, oip, oix, ow, nip, nix, nw, iip, iix, iw,
        mip, mix, mw, lay, change.deleted, uk, uw, dout, din, checks, es, ed, estep,
        int(base.source), limit)
    if not done:
        return Costly(f"the repair scanned more than {REPAIR_MAX_SWEEPS}x both ends of the "
                      f"edges")
    step = SuperstepStats(superstep=0, active=int(relaxed), direction="repair",
                          edges_scanned=int(work), messages_sent=int(work),
                          messages_combined=int(gone), fused=True)
    method = (f"repaired ({len(change.changed_deleted):,} deleted pairs, "
              f"{len(change.changed_updated):,} re-weighted, {len(change.src):,} new "
              f"edges; {int(gone):,} invalidated, {int(relaxed):,} relaxed)")
    return Result(values=values, stats=_stats(spec, graph, kwargs, t0, setup, step, method,
                                              weighted), graph=graph)


def _checks(change: Change, n: int, d: np.ndarray, least: float, weighted: bool
            ) -> np.ndarray:
    """The targets of the deleted (and, ``weighted``, re-weighted) pairs whose distance the
    pair may have given: ``d[u] + least <= d[v]``, ``least`` the least step along an edge
    (weights are non-negative). The others keep an intact in-edge that gives it (``d`` was
    a fixed point); a node that loses one later is pushed again as a dependant."""
    keys = np.concatenate([change.changed_deleted, change.changed_updated]) if weighted \
        else change.changed_deleted
    u, v = keys // n, keys % n
    return np.unique(v[d[u] + least <= d[v]])


def _relaxed_edges(change: Change, n: int, base, use_w: bool, weighted: bool):
    """The edges a distance repair relaxes once: the appended ones and (weighted) the
    re-weighted pairs still there; (src, dst, step float64)."""
    w = change.weight.astype(np.float64) if weighted and change.weight is not None \
        else np.ones(len(change.src))
    step = base.relax_offset + (w if use_w else np.zeros(len(w)))
    src, dst = change.src, change.dst
    if weighted and len(change.changed_updated):
        keys = change.changed_updated[~np.isin(change.changed_updated, change.deleted)]
        uw = change.updated_weight[np.searchsorted(change.updated, keys)]
        src, dst = np.concatenate([src, keys // n]), np.concatenate([dst, keys % n])
        step = np.concatenate([step, base.relax_offset + uw.astype(np.float64)])
    return src, dst, np.asarray(step, np.float64)


def check_values(previous, what: str) -> None:
    """A one-line FormatError unless the previous distances are non-negative or inf."""
    old = previous.values[previous.known]
    if (np.isnan(old) | (old < 0)).any():
        raise FormatError(f"{previous.source}: {what} must be non-negative or inf")
