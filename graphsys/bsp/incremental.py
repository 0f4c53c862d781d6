"""Runs that start from a stored result of the same algorithm on an earlier version of the
graph: after edges were appended (:mod:`graphsys.storage.append`), PageRank starts from the
old ranks, weakly connected components merge the old components along the new edges only,
and BFS/SSSP lower the old distances from where the new edges improve them.

Every result written by ``graphsys run --out`` or :meth:`Result.to_table
<graphsys.bsp.result.Result.to_table>` carries its provenance in the table's schema
metadata (``graphsys.result``): the algorithm, its source and parameters, and each edge
set it read with the digest of its buckets. A run given ``init=PREV`` (``graphsys run
--init PREV.parquet``) starts from PREV when PREV is a result of the same algorithm (and
source) on an *earlier version of the edges it reads*: every edge set PREV read is among
those the run reads, with the same buckets; the edge sets it did not read are the new
edges. Anything else is refused in one line saying what differs. Nodes are matched by
original id, so the old nodes keep their values wherever an append moved their internal
ids; nodes PREV does not list are the new nodes. The provenance also records whether PREV's
run converged: WCC, BFS and SSSP repair PREV from the new edges alone, which is right only
from a fixed point, so they refuse a PREV that stopped at ``max_iters`` (``graphsys run
--allow-unconverged``) or does not say (written before results recorded it); PageRank
iterates to ``tol`` from any start and takes it.

After deletions and weight updates (change sets, :mod:`graphsys.storage.changes`, among
the edge sets PREV did not read), WCC, BFS and SSSP repair PREV where the changed edges
reach it (:mod:`graphsys.bsp.incremental_changes`, which also says when they run from
scratch instead); PageRank and personalized PageRank push the residual of the change or
start warm (:mod:`graphsys.bsp.incremental_pagerank`); k-core updates PREV's core numbers
one changed edge at a time (:mod:`graphsys.bsp.incremental_cores`, after appends too); the
other algorithms refuse such a PREV in one line.

* **PageRank, personalized PageRank** (:func:`pagerank_warm_start`, where
  :func:`graphsys.bsp.incremental_pagerank.pagerank_from` does not push the residual of
  the new edges or run from scratch): the power iteration starts
  from PREV's ranks (new nodes at the smallest old rank, the share of a node without
  in-edges, then scaled to sum 1) instead of the uniform vector, and stops by the same
  rule (L1 change below ``tol``), so the result is the fixed point to the same tolerance
  as a run from scratch, in fewer iterations when the ranks moved little. The kernels
  are the cold run's; the run expects at most PREV's superstep count (recorded in its
  provenance), so ``mode="auto"`` streams the edges instead of building the in-memory
  adjacency when that count is small (:func:`graphsys.bsp.engine.choose_mode`).
* **WCC** (:func:`components_from`): edges are only added, so components only merge. Each
  old component becomes one union-find tree rooted at its smallest (new) internal id,
  every new node its own tree; the new edges alone are then unioned, the larger root under
  the smaller, so every root is its component's smallest id: the label a run from scratch
  gives. The old edges are not read; the cost is O(N) plus the new edges.
* **BFS, SSSP** (:func:`distances_from`): an added edge ``u -> v`` can only lower
  distances, and only through it, so the distances are a fixed point again once every
  vertex lowered by ``d(u) + w(u, v) < d(v)`` has relaxed its out-edges (KickStarter's
  observation for monotonic algorithms under insertions [1]_). The run lowers the targets
  of the new edges, then runs the min-relaxation supersteps from those vertices alone
  over the whole edge set read.

Examples
--------
>>> import tempfile, pathlib, graphsys
>>> from graphsys import bsp
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> g = graphsys.from_numpy([1, 2, 4], [2, 3, 5], d / "g")
>>> before = bsp.wcc(g).to_table()            # components {1, 2, 3} and {4, 5}
>>> _ = (d / "day2.tsv").write_text("3\\t4\\n5\\t6\\n")
>>> _ = graphsys.ingest(d / "day2.tsv", d / "g", append=True, edge_set="day2")
>>> g = graphsys.open_graph(d / "g")         # the default view reads both days
>>> after = bsp.wcc(g, init=before)          # union-find over the two new edges
>>> after.stats.method, len(set(after.values))
('union-find over the new edges', 1)
>>> bool((after.values == bsp.wcc(g).values).all())
True

References
----------
.. [1] K. Vora, R. Gupta and G. Xu, "KickStarter: Fast and Accurate Computations on
   Streaming Graphs via Trimmed Approximations", ASPLOS 2017.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from graphsys.bsp import incremental_changes as changes
from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.program import VertexProgram, lower_to_min
from graphsys.bsp.result import ORDER_VERSION, RESULT_METADATA
from graphsys.bsp.stats import RunStats, SuperstepStats
from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.execution import Execution
from graphsys.storage import node_reads
from graphsys.storage.csr import edges_digest

#: Largest result file read as a previous result (bytes): a Parquet of node ids and values
#: is about 16 bytes per node, so 2**36 covers four billion nodes.
MAX_RESULT_BYTES = 1 << 36
#: Algorithms whose runs start from a previous result after deletions and weight updates
#: (WCC, BFS, SSSP repair it: :mod:`graphsys.bsp.incremental_changes`; PageRank and PPR
#: push the change's residual or start warm: :mod:`graphsys.bsp.incremental_pagerank`;
#: k-core updates its core numbers: :mod:`graphsys.bsp.incremental_cores`);
#: the others refuse a result from before one
REPAIRS_CHANGES = ("wcc", "bfs", "sssp", "pagerank", "ppr", "kcore")
#: Parameters that choose what a run may write beside its answer, not the answer (PageRank's
#: ``store_index``): not recorded in a result's provenance, not compared by :func:`same_run`
UNRECORDED_PARAMETERS = ("store_index",)


@dataclass(frozen=True)
class Previous:
    """A stored result matched to the graph a run reads (:func:`read_previous`).

    Attributes
    ----------
    values : numpy.ndarray
        float64 (N,) by the graph's internal id: PREV's value where it lists the node, NaN
        where it does not (a new node).
    known : numpy.ndarray
        bool (N,): the nodes PREV lists.
    new_edge_sets : tuple of str
        The edge sets the run reads that PREV did not: the new edges.
    source : str
        Where PREV came from (its path, or ``"a table"``), for messages.
    supersteps : int or None
        The supersteps PREV's run took (None where it did not record them): what a run
        started from it, to the same or a looser tolerance, expects at most.
    tol : float or None
        The tolerance PREV's run stopped at (None where it did not record one).
    converged : bool or None
        Whether PREV's run converged (None where it did not record it).
    residual : float or None
        PREV's bound on the L1 change one more power-iteration step would make
        (:attr:`RunStats.residual <graphsys.bsp.stats.RunStats.residual>`; None where it
        did not record one).
    change_sets : tuple of str
        The change sets (deletions, weight updates) among ``new_edge_sets``.
    order : numpy.ndarray or None
        int64 (N,) by internal id: each listed node's position in the order PREV kept
        (its ``order`` column, :attr:`Result.order <graphsys.bsp.result.Result.order>`,
        of the version this release writes), -1 for a node it does not list; None where
        it kept none.
    """

    values: np.ndarray
    known: np.ndarray
    new_edge_sets: tuple[str, ...]
    source: str
    supersteps: int | None = None
    tol: float | None = None
    converged: bool | None = None
    residual: float | None = None
    change_sets: tuple[str, ...] = ()
    order: np.ndarray | None = None

    def check_fixed_point(self, algorithm: str) -> None:
        """A one-line ParameterError unless PREV's run converged: what a warm start that repairs
        PREV from the new edges alone (WCC, BFS, SSSP) needs."""
        if self.converged is True:
            return
        why = ("stopped at max_iters before converging (its last iterate was kept)"
               if self.converged is False else "does not record whether it converged "
               "(written before results recorded it)")
        raise ParameterError("init", f"{self.source}: its {algorithm} run {why}; "
                                     f"{algorithm} repairs converged results only: run "
                                     f"from scratch instead (without a previous result)")


def provenance(algorithm: str, graph, edge_set, source=None,
               params: dict[str, Any] | None = None,
               supersteps: int | None = None, converged: bool | None = None,
               residual: float | None = None) -> dict[str, Any]:
    """What a result records of its run (``Result.provenance``): ``algorithm``,
    ``source`` (an original id, or None), ``params`` (JSON values), ``edge_sets`` (each
    edge set read and the digest of its buckets), ``until`` and ``since`` (a time view's
    bounds, or None), ``num_nodes``, ``partition_sizes``, ``supersteps`` (the run's count, or
    None), ``converged`` (whether the run converged, or None) and ``residual`` (its
    :attr:`RunStats.residual <graphsys.bsp.stats.RunStats.residual>`, or None)."""
    es = graph.edge_set(edge_set)
    stored = getattr(graph, "stored", graph)  # a time view's buckets are the stored ones
    source = source.item() if isinstance(source, np.generic) else source
    return {"algorithm": algorithm, "source": source,
            "params": {k: v for k, v in (params or {}).items()
                       if (isinstance(v, (bool, int, float, str)) or v is None)
                       and k not in UNRECORDED_PARAMETERS},
            "edge_sets": {name: edges_digest(stored.manifest, name) for name in es.parts},
            "until": getattr(graph, "until", None), "since": getattr(graph, "since", None),
            "num_nodes": graph.num_nodes(),
            "partition_sizes": [int(x) for x in graph.partition_sizes()],
            "supersteps": None if supersteps is None else int(supersteps),
            "converged": None if converged is None else bool(converged),
            "residual": None if residual is None else float(residual)}


def _table(init) -> tuple[pa.Table, str]:
    """The previous result as a table: a Parquet file (a regular file, size checked), a
    table, or a :class:`~graphsys.bsp.result.Result`."""
    if isinstance(init, Result):
        try:
            return init.to_table(), "a result"
        except GraphsysError as exc:  # its Graph's files were replaced (an append)
            raise GraphsysError(f"init: the graph of this result changed on disk since it "
                                f"was computed ({exc}); start from its to_table(), taken "
                                f"before the change") from None
    if isinstance(init, pa.Table):
        return init, "a table"
    if not isinstance(init, (str, os.PathLike)):
        raise ParameterError("init", f"must be a result file (.parquet), a table or a Result, "
                                     f"got {type(init).__name__}")
    path = Path(init)
    if not path.is_file() or path.is_symlink():
        raise ParameterError("init", f"{path}: not a regular file")
    if path.stat().st_size > MAX_RESULT_BYTES:
        raise FormatError(f"{path}: {path.stat().st_size:,} bytes, larger than a result "
                          f"file can be ({MAX_RESULT_BYTES:,})")
    try:
        # pages written with a CRC (graphsys run --out) are checked: a garbled value is
        # refused rather than repaired from
        table = pq.read_table(path, page_checksum_verification=True)
        table.schema.names  # noqa: B018 - a garbled footer's name may not be UTF-8
        return table, str(path)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        detail = " ".join(str(exc).split())[:300]  # Arrow's text may span lines
        raise FormatError(f"{path}: not a readable Parquet result ({detail})") from None


def result_provenance(init) -> tuple[pa.Table, dict[str, Any], str]:
    """(table, provenance, where) of a previous result; a one-line error when it holds none
    (not written by graphsys, or written before results recorded it)."""
    table, where = _table(init)
    raw = (table.schema.metadata or {}).get(RESULT_METADATA.encode())
    if raw is None:
        raise FormatError(f"{where}: no graphsys run recorded in it (not a result of "
                          f"graphsys's run, or one written before results recorded it)")
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise FormatError(f"{where}: its {RESULT_METADATA} metadata is not JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("edge_sets"), dict):
        raise FormatError(f"{where}: its {RESULT_METADATA} metadata has no edge sets")
    return table, meta, where


def read_previous(graph, init, algorithm: str, edge_set=None, source=None) -> Previous:
    """Match a previous result of ``algorithm`` to the edges a run reads (see the module
    docstring).

    Parameters
    ----------
    graph : Graph
        The graph the run reads.
    init : str, Path, pyarrow.Table or Result
        The previous result.
    algorithm : str
        The run's algorithm (``pagerank``, ``wcc``, ...).
    edge_set : str or sequence of str, optional
        The edge set(s) the run reads (default: the default view).
    source : int or str, optional
        The run's source node (BFS, SSSP, personalized PageRank).

    Returns
    -------
    Previous

    Raises
    ------
    ParameterError
        ``init`` is not a file, table or result.
    FormatError
        An unreadable file, no recorded run, values that are not one float per node.
    GraphsysError
        A result of another algorithm or source, of edges the run does not read or that
        changed since, or of a node the graph does not have (each naming it).
    """
    table, meta, where = result_provenance(init)
    if meta.get("algorithm") != algorithm:
        raise GraphsysError(f"{where} holds a {meta.get('algorithm')} result, not {algorithm}")
    if meta.get("source") != (source.item() if isinstance(source, np.generic) else source):
        raise GraphsysError(f"{where} was computed from source {meta.get('source')!r}, this "
                            f"run starts from {source!r}")
    for bound in ("until", "since"):
        if meta.get(bound) != getattr(graph, bound, None):
            raise GraphsysError(f"{where} was computed on the graph {bound} "
                                f"{meta.get(bound)!r}, this run reads it {bound} "
                                f"{getattr(graph, bound, None)!r}")
    es = graph.edge_set(edge_set)
    stored = getattr(graph, "stored", graph)
    for name, digest in meta["edge_sets"].items():
        if name not in es.parts:
            raise GraphsysError(f"{where} was computed on edge set {name!r}, which this run "
                                f"does not read (it reads {', '.join(es.parts)})")
        if edges_digest(stored.manifest, name) != digest:
            raise GraphsysError(f"edge set {name!r} changed since {where} was computed (its "
                                f"buckets differ): start from scratch")
    if set(table.column_names) - {"order"} != {"node", "value"} or not pa.types.is_floating(
            table.schema.field("value").type) or ("order" in table.column_names and not
                                                  pa.types.is_integer(
                                                      table.schema.field("order").type)):
        raise FormatError(f"{where}: expected columns node and value (float), and order "
                          f"(integer) or none, got "
                          f"{', '.join(f'{f.name} ({f.type})' for f in table.schema)}")
    ids = table.column("node").combine_chunks()
    internal = _appended_layout(graph, ids, meta.get("partition_sizes"))
    if internal is None:
        try:
            internal = graph.to_internal(ids.to_numpy(zero_copy_only=False)
                                         if pa.types.is_integer(ids.type) else ids.to_pylist())
        except GraphsysError as exc:
            raise GraphsysError(f"{where}: {exc}") from None
    n = graph.num_nodes()
    known = np.zeros(n, np.bool_)
    known[internal] = True
    if int(known.sum()) != len(internal):
        raise FormatError(f"{where}: a node is listed twice")
    values = np.full(n, np.nan)
    values[internal] = table.column("value").to_numpy().astype(np.float64)
    order = None
    if "order" in table.column_names and meta.get("order") == ORDER_VERSION:
        order = np.full(n, -1, np.int64)
        order[internal] = table.column("order").to_numpy().astype(np.int64)
    new = tuple(m for m in es.parts if m not in meta["edge_sets"])
    changed = [m for m in new if stored.manifest.edge_sets[m].change]
    if changed and algorithm not in REPAIRS_CHANGES:
        # a start from new edges alone would read deletions as insertions
        raise GraphsysError(f"edge set {changed[0]!r} deletes or updates edges since {where} "
                            f"was computed: a {algorithm} run starts only from a result on "
                            f"the same edges plus appended ones; start from scratch "
                            f"(without a previous result)")
    steps = meta.get("supersteps")
    steps = steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 \
        else None
    tol = meta.get("params", {}).get("tol")
    tol = float(tol) if isinstance(tol, (int, float)) and not isinstance(tol, bool) \
        and tol > 0 else None
    converged = meta.get("converged")
    return Previous(values, known, new, where, steps, tol,
                    converged if isinstance(converged, bool) else None,
                    _positive(meta.get("residual")), tuple(changed), order)


def _positive(value: Any) -> float | None:
    """``value`` as a float when it is a finite non-negative number, else None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and np.isfinite(value) and value >= 0
    return float(value) if ok else None


def _appended_layout(graph, ids: pa.Array, old: Any) -> np.ndarray | None:
    """The internal ids of a previous result's rows when the graph is the one it was
    computed on, or that graph grown by appends (which keep every old node at its partition
    and offset: :mod:`graphsys.storage.append`), checked by comparing the ids; None
    otherwise (then they are looked up one by one)."""
    now = [int(x) for x in graph.partition_sizes()]
    if (not isinstance(old, list) or len(old) != len(now) or not all(
            isinstance(x, int) and 0 <= x <= y for x, y in zip(old, now))
            or sum(old) != len(ids)):
        return None
    start = np.concatenate([[0], np.cumsum(now)])
    internal = np.concatenate([np.arange(start[p], start[p] + old[p]) for p in range(len(old))]
                              ).astype(np.int64)
    have = node_reads.original_ids(graph, graph.entity_type(None).name)
    if isinstance(have, np.ndarray) and pa.types.is_integer(ids.type):
        same = np.array_equal(have[internal], ids.to_numpy(zero_copy_only=False))
    else:
        same = pa.array(have).take(pa.array(internal)).cast(pa.large_string()).equals(
            ids.cast(pa.large_string())) if not pa.types.is_integer(ids.type) else False
    return internal if same else None


def same_run(init, algorithm: str, params: dict[str, Any]) -> bool:
    """Whether the result ``init`` is of ``algorithm`` with the same ``params`` (what
    ``graphsys run --init auto`` requires before starting from its ``--out`` file); False
    for anything unreadable."""
    try:
        _, meta, _ = result_provenance(init)
    except GraphsysError:
        return False
    keep = {k: v for k, v in params.items() if isinstance(v, (bool, int, float, str))
            and k not in UNRECORDED_PARAMETERS}
    return meta.get("algorithm") == algorithm and all(
        meta.get("params", {}).get(k) == v for k, v in keep.items() if k != "tol")


def _new_edges(graph, previous: Previous):
    """Record batches ``(src, dst, rel, weight)`` of the edge sets PREV did not read."""
    if previous.new_edge_sets:
        yield from graph.iter_edges(list(previous.new_edge_sets))


# -- PageRank -----------------------------------------------------------------------------------
def pagerank_warm_start(spec, graph, previous: Previous, *, source=None, params=None,
                        max_iters: int | None = None, start: np.ndarray | None = None,
                        **kwargs) -> Result:
    """PageRank (or personalized PageRank) started from ``previous``'s ranks: new nodes at
    the smallest old rank (a node without in-edges: the teleport and dangling share), the
    vector scaled to sum 1; to ``previous``'s tolerance or a looser one the program expects
    at most ``previous``'s superstep count
    (:attr:`~graphsys.bsp.program.VertexProgram.expected_supersteps`, which ``mode="auto"``
    weighs against building the adjacency); the run is otherwise the cold one (``spec``'s
    program and defaults). ``start`` (float64 (N,), non-negative, summing to 1): the
    vector to start from instead, one that the caller derived from ``previous``'s ranks
    (:mod:`graphsys.bsp.incremental_pagerank`'s ranks one power step on)."""
    if start is None:
        start = previous.values.copy()
        old = start[previous.known]
        if not np.all(np.isfinite(old)) or (old < 0).any():
            raise FormatError(f"{previous.source}: ranks must be finite and non-negative")
        # a node with no in-edge holds only its share of the teleport and dangling mass:
        # the smallest old rank, the value a new node (reached by a few new edges) is
        # nearest to
        start[~previous.known] = old.min() if len(old) else 1.0 / graph.num_nodes()
        if start.sum() <= 0:
            start[:] = 1.0
    program = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"),
                        **(params or {}))
    program.initial = start / start.sum()
    # to the previous run's tolerance or a looser one it ends within the previous run's
    # count (from nearer the fixed point): mode "auto" streams the edges where building the
    # adjacency would cost more than that many supersteps save
    # (graphsys.bsp.engine.choose_mode); to a tighter one the count says nothing
    tol = getattr(program, "tol", None)
    if previous.tol is not None and tol is not None and tol >= previous.tol \
            and previous.converged:
        program.expected_supersteps = previous.supersteps
    result = run_program(graph, program, max_iters=spec.max_iters(graph, max_iters), **kwargs)
    result.stats.method += ", warm start"
    result.stats.start = "warm"
    if (kwargs.get("execution") or Execution()).mode == "auto" \
            and result.stats.mode == "out-of-core":
        result.stats.method += (f", streamed (the previous run took {previous.supersteps} "
                                f"supersteps)")
    return result


# -- WCC ----------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _find(parent, v):
    root = v
    while parent[root] != root:
        root = parent[root]
    while parent[v] != root:  # path compression
        nxt = parent[v]
        parent[v] = root
        v = nxt
    return root


@numba.njit(cache=True, nogil=True)
def _old_trees(old_ids, labels, parent, first):
    """One tree per old component, rooted at its smallest id (``old_ids`` ascend): every
    node's parent is the first node seen with its label."""
    for k in range(old_ids.shape[0]):
        lab = labels[k]
        if first[lab] < 0:
            first[lab] = old_ids[k]
        parent[old_ids[k]] = first[lab]


@numba.njit(cache=True, nogil=True)
def _union(parent, src, dst):
    """Union the endpoints of every edge, the larger root under the smaller; returns the
    merges made."""
    merged = 0
    for k in range(src.shape[0]):
        a = _find(parent, src[k])
        b = _find(parent, dst[k])
        if a != b:
            if a < b:
                parent[b] = a
            else:
                parent[a] = b
            merged += 1
    return merged


@numba.njit(cache=True, nogil=True)
def _roots(parent, out):
    for v in range(parent.shape[0]):
        out[v] = _find(parent, v)


def components_from(spec, graph, previous: Previous, *, source=None, params=None,
                    max_iters: int | None = None, edge_set=None, **kwargs) -> Result:
    """Weakly connected components from ``previous``'s labels: after appends, the new edges
    only (see the module docstring); after deletions, the components that lost an edge
    searched (:mod:`graphsys.bsp.incremental_changes`, or a run from scratch where that
    does not apply). In memory, on the CPU, whatever ``mode`` and ``device`` say, except a
    run from scratch. Labels are the component's smallest internal id, as a run from
    scratch gives."""
    previous.check_fixed_point(spec.name)
    t0 = time.perf_counter()
    n = graph.num_nodes()
    old_ids = np.flatnonzero(previous.known)
    raw = previous.values[old_ids]
    labels = raw.astype(np.int64)
    if len(raw) and (not np.array_equal(labels, raw) or labels.min() < 0
                     or labels.max() >= len(raw)):
        raise FormatError(f"{previous.source}: component labels must be node numbers in "
                          f"0..{len(raw) - 1}")
    if previous.change_sets:
        kwargs["edge_set"] = edge_set
        change = changes.decide(graph, previous, kwargs)
        if not isinstance(change, str):
            change = changes.components_repaired(spec, graph, previous, labels, change,
                                                 kwargs, (_union, _roots, _old_trees))
        if isinstance(change, str):
            return changes.from_scratch(spec, graph, change, params=params,
                                        max_iters=max_iters, **kwargs)
        return change
    parent = np.arange(n, dtype=np.int64)
    _old_trees(old_ids, labels, parent, np.full(len(raw), -1, np.int64))
    setup = time.perf_counter() - t0
    scanned = merged = 0
    for s, d, _, _ in _new_edges(graph, previous):
        merged += int(_union(parent, s.astype(np.int64, copy=False),
                             d.astype(np.int64, copy=False)))
        scanned += len(s)
    label = np.empty(n, np.int64)
    _roots(parent, label)
    es = graph.edge_set(edge_set)
    step = SuperstepStats(superstep=0, active=n, direction="union-find", edges_scanned=scanned,
                          messages_sent=scanned, messages_combined=merged, fused=True)
    step.seconds["edges"] = time.perf_counter() - t0 - setup
    stats = RunStats(algorithm=spec.name, mode="memory", device="cpu", backend="numba",
                     world_size=1, num_nodes=n, num_edges=es.num_edges, setup_seconds=setup,
                     seconds=time.perf_counter() - t0, converged=True,
                     method="union-find over the new edges", supersteps=[step],
                     start="repair")
    return Result(values=label.astype(np.float64), stats=stats, graph=graph)


# -- BFS, SSSP ----------------------------------------------------------------------------------
class Repair(VertexProgram):
    """A min-relaxation program (``base``: BFS, SSSP, a program declaring ``relax_state``)
    resumed from ``values`` float64 (N,) with the vertices ``seeds`` bool (N,) active: the
    same messages and updates, every target accepting (not only unreached ones), so the
    run lowers what the seeds can improve and stops at the fixed point."""

    def __init__(self, base: VertexProgram, values: np.ndarray, seeds: np.ndarray):
        self.base, self.values, self.seeds = base, values, seeds
        self.name = base.name
        self.message, self.combiner, self.direction = base.message, "min", base.direction
        self.uses_weights = base.uses_weights
        self.relax_state, self.relax_offset = base.relax_state, base.relax_offset

    def init(self, ctx):
        import torch

        value = torch.from_numpy(self.values[ctx.lo:ctx.hi].copy()).to(ctx.device)
        active = torch.from_numpy(self.seeds[ctx.lo:ctx.hi].copy()).to(ctx.device)
        return {self.relax_state: value}, active

    def send(self, ctx, state):
        return self.base.send(ctx, state)

    def update(self, ctx, state, combined, received):
        return lower_to_min(state, self.relax_state, combined, received)

    def result(self, ctx, state):
        return state[self.relax_state]


def distances_from(spec, graph, previous: Previous, *, source=None, params=None,
                   max_iters: int | None = None, **kwargs) -> Result:
    """BFS levels or SSSP distances repaired from ``previous``'s: on one CPU in memory,
    after appends, deletions and weight updates, by invalidating and relaxing only what the
    changed edges reach (:mod:`graphsys.bsp.incremental_changes`); on another device or
    mode or a time view, after appends only, by lowering the targets the new edges improve
    and relaxing from them (see the module docstring, ``schedule`` ``auto`` running the
    fused supersteps, ``sync``); from scratch after a deletion or update there, and where
    more changed than a repair pays for."""
    previous.check_fixed_point(spec.name)
    base = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"), **(params or {}))
    if base.relax_state is None or base.direction != "out":
        raise GraphsysError(f"{spec.name}: distances are repaired for min-relaxation "
                            f"programs along out-edges")
    changes.check_values(previous, "distances")
    values = previous.values.copy()
    values[~previous.known] = np.inf
    change = changes.decide(graph, previous, kwargs)
    if not isinstance(change, str):
        change = changes.distances_repaired(spec, graph, previous, base, values, change,
                                            kwargs)
        if not isinstance(change, str):
            return change
    if previous.change_sets or isinstance(change, changes.Costly):
        return changes.from_scratch(spec, graph, change, source=source, params=params,
                                    max_iters=max_iters, **kwargs)
    seeds = np.zeros(len(values), np.bool_)
    add_weight = base.message == "add_weight"
    for s, d, _, w in _new_edges(graph, previous):
        step = base.relax_offset + (w.astype(np.float64) if add_weight and w is not None
                                    else (1.0 if add_weight else 0.0))
        cand = values[s] + step
        lower = cand < values[d]
        if lower.any():
            np.minimum.at(values, d[lower], cand[lower])
            seeds[d[lower]] = True
    if kwargs.get("schedule") == "auto":
        kwargs["schedule"] = "sync"
    result = run_program(graph, Repair(base, values, seeds),
                         max_iters=spec.max_iters(graph, max_iters), **kwargs)
    result.stats.method += ", repaired from the new edges"
    result.stats.start = "repair"
    return result
