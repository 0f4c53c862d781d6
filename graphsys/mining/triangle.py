"""Triangles: the count, per node, clustering coefficients, transitivity, and the directed
triad census.

All run over the undirected simple view of an edge set (:mod:`graphsys.views.orient`:
a directed edge set's edges are taken both ways, parallel edges once, self-loops dropped),
as networkx's ``triangles`` does on ``G.to_undirected()``. The kernel orients every edge
from its lower- to its higher-degree endpoint and finds each triangle once, as a wedge of
its lowest vertex's (short, sorted) row closed by an edge, from its middle vertex, whose
row is marked per thread (:mod:`graphsys.mining.outofcore`): at most ``sum C(d+(u), 2)``
probes, ``O(m * sqrt(m))`` at worst.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from graphsys import views
from graphsys.errors import GraphsysError, check_flag
from graphsys.execution import Execution
from graphsys.mining import kernels
from graphsys.mining._docs import document
from graphsys.mining.incremental import updated
from graphsys.mining.parallel import Ranks, run_tasks, scheduled
from graphsys.mining.results import as_graph
from graphsys.storage.node_values import NodeValues
from graphsys.storage.previous import provenance, tagged
from graphsys.views.orient import (
    Oriented,
    build_bytes,
    mapped_symmetric,
    refuse_build,
)

#: The 16 triad classes of a directed graph (Holland and Leinhardt's M-A-N codes), in
#: networkx's ``triadic_census`` order.
TRIAD_NAMES = ("003", "012", "102", "021D", "021U", "021C", "111D", "111U", "030T", "030C",
               "201", "120D", "120U", "120C", "210", "300")


def _mode(mode: str, graph, edge_set, memory_limit) -> str:
    """The mode a triangle call runs in: ``auto`` resolved against the budget."""
    if mode != "auto":
        return mode
    need = triangle_bytes(graph, edge_set)
    if need > views.budget(memory_limit) and mapped_symmetric(graph, edge_set) is not None:
        return "out-of-core"
    refuse_build(graph, edge_set, need, memory_limit, triangles=True)  # over it: refused
    return "memory"


def triangle_bytes(graph, edge_set) -> int:
    """Anonymous bytes a triangle count in RAM needs at its peak: the oriented graph
    (:func:`~graphsys.views.orient.build_bytes`) and its in-lists (12 bytes per edge:
    position, row end and row), the order, the marks and the counts (24 bytes per node)."""
    es = graph.edge_set(edge_set)
    mapped = mapped_symmetric(graph, es.name) is not None
    edges = es.num_edges if not mapped else build_bytes(graph, es.name, mapped=True) // 4
    return build_bytes(graph, es.name) + 12 * edges + 24 * graph.num_nodes()


def count_oriented(view: Oriented, *, per_vertex: bool, threads: int, ranks: Ranks,
                   progress: bool = False) -> tuple[int, np.ndarray | None]:
    """Triangles of an oriented view with sorted rows (one block of
    :func:`graphsys.mining.outofcore.count_pair`, from the lowest or the middle vertex by
    :func:`~graphsys.mining.outofcore.from_middle`): the total (over all ranks) and, with
    ``per_vertex``, int64 (N,) counts by *new* id (summed over ranks)."""
    from graphsys.mining.outofcore import count_pair, from_middle, lowest_work

    n = view.num_nodes
    counts = np.zeros(n if per_vertex else 0, np.int64)
    rows = (view.indptr, view.indices)
    if "middle" not in view.memo:  # the view's rows do not change: its kernel picked once
        view.memo["middle"] = from_middle(view.degree, view.out_degree())
        view.memo["work"] = None if view.memo["middle"] else lowest_work(view.indptr)
    middle = view.memo["middle"]
    total = count_pair(rows, 0, rows, 0, np.arange(n, dtype=np.int64) if middle else None,
                       kernels.mark_array(threads, n), per_vertex, counts, threads,
                       ranks=ranks, progress=progress,
                       in_degree=view.degree - view.out_degree() if middle else None,
                       work=view.memo["work"])
    total = int(ranks.sum(np.array([total], np.int64))[0])
    return total, (ranks.sum(counts) if per_vertex else None)


@document
def triangle_work(graph, *, edge_set: str | None = None,
                  memory_limit: int | None = None,
                  execution: Execution | None = None) -> tuple[NodeValues, str]:
    """How the intersection work of a triangle count spreads over the nodes: per node, the
    entries the kernel the cost model picks probes on its behalf, and that kernel.

    From the lowest vertex, node ``u`` probes ``d+(u)`` marks and the out-rows of its
    out-neighbours (``sum of d+(v)``); from the middle vertex, node ``v`` marks ``d+(v)``
    entries and probes, for each in-neighbour ``u``, the rest of ``u``'s out-row after
    ``v``. Early stops (past the largest mark) are not counted: an upper bound per node.
    What ``graphsys profile --workload mining`` reads to tell the load balance of the
    intersections.

    Parameters
    ----------
    %(graph)s
    %(edge_set)s
    %(memory_options)s

    Returns
    -------
    (NodeValues, str)
        int64 (N,) probes by internal id, and ``"lowest"`` or ``"middle"``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> work, kernel = mining.triangle_work(g)
    >>> kernel, int(work.values.sum()) > 0
    ('lowest', True)
    """
    from graphsys.mining.outofcore import from_middle

    ex = Execution.of(execution, memory_limit=memory_limit).in_memory(
        "triangle_work", "distributed", "progress")
    g = as_graph(graph)
    view = views.view(g, "oriented", edge_set=edge_set, memory_limit=ex.memory_limit)
    middle = from_middle(view.degree, view.out_degree())
    work = np.empty(view.num_nodes, np.int64)
    kernels.probe_work(view.indptr, view.indices, middle, work)
    return NodeValues(view.by_global(work), g, "probes"), "middle" if middle else "lowest"


def _in_memory(g, edge_set: str, per_node: bool, memory_limit, threads: int, ranks: Ranks,
               progress: bool) -> tuple[int, np.ndarray | None, np.ndarray, int]:
    """``(total, counts or None, degree, triples)`` by global id, counted in RAM on the
    oriented graph kept on ``g`` (:mod:`graphsys.views.cache`), built first when there is
    none: from the mapped ``sym`` index (:func:`~graphsys.mining.outofcore.orient_whole`),
    else the ``oriented`` view (:func:`graphsys.views.view`). The degrees by global id and
    the triples (:func:`_triples`) are the kept structure's, derived once (read-only)."""
    from graphsys.mining.outofcore import count_whole

    limit = views.budget(memory_limit)
    beside = 16 * g.num_nodes()  # the marks and the per-node counts of the count itself
    sym = mapped_symmetric(g, edge_set)
    if sym is None:
        dag = views.view(g, "oriented", edge_set=edge_set, memory_limit=memory_limit,
                         beside=beside)
        total, counts = count_oriented(dag, per_vertex=per_node, threads=threads,
                                       ranks=ranks, progress=progress)
        if "by global" not in dag.memo:
            degree = dag.by_global(dag.degree)
            degree.flags.writeable = False
            dag.memo["by global"] = (degree, _triples(degree))
        return (total, (dag.by_global(counts) if per_node else None),
                *dag.memo["by global"])

    whole = _kept_whole(g, edge_set, sym, limit, memory_limit, threads, beside,
                        again=ranks.world_size == 1)
    total, counts = count_whole(whole, per_vertex=per_node, threads=threads, ranks=ranks,
                                progress=progress)
    if "triples" not in whole.memo:
        whole.memo["triples"] = _triples(whole.degree)
    return total, counts, whole.degree, whole.memo["triples"]


def _triples(degree: np.ndarray) -> int:
    """``sum d (d - 1)`` over the simple degrees: twice the connected triples."""
    return int((degree * (degree - 1)).sum())


def _kept_whole(g, edge_set: str, sym, limit: int, memory_limit, threads: int, beside: int,
                again: bool):
    """The :class:`~graphsys.mining.outofcore.Whole` graph kept on ``g`` for the mapped
    rows ``sym``, built first when there is none (:func:`~graphsys.mining.outofcore.
    orient_whole`: the kernel whose build and count together cost least). ``again``: a
    graph kept for the kernel from the lowest vertex is joined, on this repeated count, by
    that of the kernel from the middle one where the count alone is cheaper there and it
    fits the budget beside it (:func:`~graphsys.mining.outofcore.ranked_again`): every
    later count reads that one. One process only: ranks must split the same structure."""
    from graphsys.mining.outofcore import orient_whole, ranked_again, ranked_bytes

    key = (edge_set, "triangles", "degree")
    kept = views.peek(g, key + ("ranked",)) if again else None
    if kept is not None:  # through cached: its bytes checked against this call's budget
        return views.cached(g, key + ("ranked",), lambda: kept, nbytes=lambda w: w.nbytes,
                            budget=limit, beside=beside)
    first = views.peek(g, key) is None

    def build():
        refuse_build(g, edge_set, triangle_bytes(g, edge_set), memory_limit, triangles=True)
        return orient_whole(sym[0], sym[1], threads)

    whole = views.cached(g, key, build, nbytes=lambda w: w.nbytes, budget=limit,
                         beside=beside)
    if first or not again or whole.order is not None \
            or views.held_bytes(g) + ranked_bytes(whole) + beside > limit:
        return whole
    ranked = ranked_again(whole, sym[0], sym[1])
    if ranked is None:
        return whole
    return views.cached(g, key + ("ranked",), lambda: ranked, nbytes=lambda w: w.nbytes,
                        budget=limit, beside=beside)


@dataclass(frozen=True)
class TriangleStats:
    """What one triangle pass gives: the count and the figures derived from it.

    Attributes
    ----------
    count : int
        Triangles.
    transitivity : float
        ``6 count / sum d (d - 1)`` over the simple degrees ``d`` (0 without a triple).
    degree : NodeValues
        The simple undirected degree of each node (self-loops and repeated edges not
        counted).
    triangles : NodeValues or None
        Triangles through each node (asked for with ``per_node``).
    clustering : NodeValues or None
        Local clustering coefficients (with ``per_node``).
    average_clustering : float or None
        Their mean over every node (with ``per_node``; None for a graph without nodes).
    method : str
        How the counts were found: ``counted in memory``, ``counted out of core``, or
        from a previous result (``init``) ``updated (...)`` or a count followed by
        ``(from scratch: why)`` (:mod:`graphsys.mining.incremental`).
    provenance : dict or None
        What a later count needs to start from this one (``init``): the edge sets read
        (:func:`graphsys.storage.previous.provenance`).

    Examples
    --------
    From :func:`triangle_stats` (``per_node=True`` fills the per-node figures):

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])  # two triangles
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> stats = mining.triangle_stats(g)
    >>> stats.count, stats.transitivity, stats.triangles
    (2, 0.75, None)
    >>> stats.degree.to_dict()
    {1: 3, 2: 3, 3: 2, 4: 2}
    """

    count: int
    transitivity: float
    degree: NodeValues
    triangles: NodeValues | None = None
    clustering: NodeValues | None = None
    average_clustering: float | None = None
    method: str = "counted in memory"
    provenance: dict | None = None

    def to_dict(self) -> dict:
        """The scalar figures, as plain JSON types."""
        return {"triangles": self.count, "transitivity": self.transitivity,
                "average_clustering": self.average_clustering}

    def to_table(self) -> pa.Table:
        """The per-node figures (asked for with ``per_node``) keyed by original node id:
        columns ``node``, ``triangles``, ``clustering`` and ``degree``; the schema metadata
        holds :attr:`provenance`, so the table (or a Parquet file of it) can start a later
        count (``init``)."""
        if self.triangles is None:
            raise GraphsysError("triangle stats without per-node counts have no table: "
                                "count with per_node=True")
        table = pa.table({"node": pa.array(self.triangles.graph.node_ids()),
                          "triangles": pa.array(self.triangles.values),
                          "clustering": pa.array(self.clustering.values),
                          "degree": pa.array(self.degree.values)})
        return tagged(table, self.provenance)


@document
def triangle_stats(graph, *, per_node: bool = False, edge_set: str | None = None,
                   mode: str = "auto", threads: int | None = None,
                   memory_limit: int | None = None, distributed: bool = False,
                   progress: bool | Callable = False,
                   execution: Execution | None = None, init=None) -> TriangleStats:
    """Count triangles once and derive everything from the pass: the count, the
    transitivity, and (``per_node``) each node's triangles and clustering coefficient.

    Given ``init``, a previous per-node result of the edge set before edges were appended
    or deleted, the counts are updated from the changed edges instead, or counted from
    scratch where that does not apply or pay (:mod:`graphsys.mining.incremental`; ``method``
    says which ran).

    :func:`triangle_count`, :func:`triangles`, :func:`clustering`,
    :func:`average_clustering` and :func:`transitivity` each return one of its figures.

    Parameters
    ----------
    %(graph)s
    per_node : bool, default False
        Also count per node (each triangle then adds to its three nodes' counters: a
        little slower than the count alone).
    %(edge_set)s
    %(triangle_options)s
    init : str, Path, pyarrow.Table or TriangleStats, optional
        A previous result with per-node counts (:meth:`TriangleStats.to_table`, or a
        Parquet file of it).

    Returns
    -------
    TriangleStats

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])  # two triangles
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> stats = mining.triangle_stats(g, per_node=True)
    >>> stats.count, stats.transitivity, round(stats.average_clustering, 4)
    (2, 0.75, 0.8333)
    >>> stats.triangles.to_dict()
    {1: 2, 2: 2, 3: 1, 4: 1}

    After edges were deleted or appended, from a previous result
    (:mod:`graphsys.mining.incremental` has an example).
    """
    per_node = check_flag("per_node", per_node)
    ex = Execution.of(execution, mode=mode, threads=threads, memory_limit=memory_limit,
                      distributed=distributed, progress=progress).on_cpu("triangle counting")
    g = as_graph(graph)
    es = g.edge_set(edge_set)
    ranks = Ranks.of(ex.distributed, g, ("triangles", es.name, ex.mode, per_node,
                                         init is None))
    limit = ranks.budget(ex.memory_limit)  # one budget: the same mode and blocks on all
    with scheduled(ex.threads) as count:
        mode = _mode(ex.mode, g, es.name, limit)
        method = "counted in memory" if mode == "memory" else "counted out of core"
        found = None if init is None else updated(
            g, es.name, init, None if mode == "memory" and ranks.world_size == 1
            else "an update runs in memory in one process")
        if isinstance(found, tuple):
            total, counts, degree, method = found
            triples = _triples(degree)
        elif mode == "memory":
            total, counts, degree, triples = _in_memory(
                g, es.name, per_node or init is not None, limit, count, ranks, ex.progress)
        else:
            from graphsys.mining.outofcore import triangles_by_blocks

            total, counts, degree = triangles_by_blocks(
                g, es.name, per_vertex=per_node or init is not None,
                memory_limit=limit, threads=count, ranks=ranks, progress=ex.progress)
            triples = _triples(degree)
    if isinstance(found, str):
        method += f" (from scratch: {found})"
    return _stats(g, es.name, total, counts if per_node else None, degree, triples, method)


def _stats(g, edge_set: str, total: int, counts, degree, triples: int, method: str
           ) -> TriangleStats:
    """The :class:`TriangleStats` of a count: with ``counts`` (int64 (N,)), per node."""
    stats = TriangleStats(total, 6.0 * total / triples if triples else 0.0,
                          NodeValues(degree, g, "degree"), method=method,
                          provenance=provenance("triangles", g, edge_set))
    if counts is None:
        return stats
    pairs = degree * (degree - 1)
    coeff = np.zeros(len(counts), np.float64)
    np.divide(2.0 * counts, pairs, out=coeff, where=pairs > 0)
    return replace(stats, triangles=NodeValues(counts, g, "triangles"),
                   clustering=NodeValues(coeff, g, "clustering"),
                   average_clustering=float(coeff.mean()) if len(coeff) else None)


@document
def triangle_count(graph, *, edge_set: str | None = None, mode: str = "auto",
                   threads: int | None = None, memory_limit: int | None = None,
                   distributed: bool = False, progress: bool = False,
                   execution: Execution | None = None) -> int:
    """The number of triangles of the undirected simple view of an edge set.

    Each edge is oriented from its lower- to its higher-degree endpoint [1]_; each triangle
    is then a wedge of its lowest vertex's row closed by an edge, and is found once, from
    its middle vertex: that vertex's row is marked per thread and the rows of its
    in-neighbours, after it, are probed against the marks.

    Parameters
    ----------
    %(graph)s
    %(edge_set)s
    %(triangle_options)s

    Returns
    -------
    int
        Triangles (``sum(networkx.triangles(G.to_undirected()).values()) / 3``).

    Raises
    ------
    GraphsysError
        The oriented graph does not fit ``memory_limit`` and the graph has no ``sym`` index
        to run out of core on (one line naming the ``graphsys index`` command).

    References
    ----------
    .. [1] T. Schank, D. Wagner, "Finding, Counting and Listing all Triangles in Large
       Graphs, an Experimental Study", WEA 2005.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])  # two triangles
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> mining.triangle_count(g)
    2
    """
    return triangle_stats(graph, per_node=False, edge_set=edge_set, execution=Execution.of(
        execution, mode=mode, threads=threads, memory_limit=memory_limit, distributed=distributed,
        progress=progress)).count


@document
def triangles(graph, *, edge_set: str | None = None, mode: str = "auto",
              threads: int | None = None, memory_limit: int | None = None,
              distributed: bool = False, progress: bool = False,
              execution: Execution | None = None) -> NodeValues:
    """The number of triangles through each node (networkx's ``triangles``).

    Parameters
    ----------
    %(graph)s
    %(edge_set)s
    %(triangle_options)s

    Returns
    -------
    NodeValues
        int64 (N,) by internal id; ``values.sum() == 3 * triangle_count(graph)``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> mining.triangles(g).to_dict()
    {1: 2, 2: 2, 3: 1, 4: 1}
    """
    return triangle_stats(graph, per_node=True, edge_set=edge_set, execution=Execution.of(
        execution, mode=mode, threads=threads, memory_limit=memory_limit, distributed=distributed,
        progress=progress)).triangles


@document
def clustering(graph, *, edge_set: str | None = None, mode: str = "auto",
               threads: int | None = None, memory_limit: int | None = None,
               distributed: bool = False, progress: bool = False,
               execution: Execution | None = None) -> NodeValues:
    """The local clustering coefficient of each node: ``2 T(v) / (d(v) (d(v) - 1))``,
    ``T(v)`` its triangles, ``d(v)`` its simple degree; 0 where ``d(v) < 2`` (networkx's
    ``clustering`` of the undirected view).

    Parameters
    ----------
    %(graph)s
    %(edge_set)s
    %(triangle_options)s

    Returns
    -------
    NodeValues
        float64 (N,) by internal id.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> {k: round(v, 3) for k, v in mining.clustering(g).to_dict().items()}
    {1: 0.667, 2: 0.667, 3: 1.0, 4: 1.0}
    """
    return triangle_stats(graph, per_node=True, edge_set=edge_set, execution=Execution.of(
        execution, mode=mode, threads=threads, memory_limit=memory_limit, distributed=distributed,
        progress=progress)).clustering


@document
def average_clustering(graph, *, edge_set: str | None = None, count_zeros: bool = True,
                       mode: str = "auto", threads: int | None = None,
                       memory_limit: int | None = None, distributed: bool = False,
                       progress: bool = False, execution: Execution | None = None) -> float:
    """The mean local clustering coefficient (networkx's ``average_clustering``).

    Parameters
    ----------
    %(graph)s
    count_zeros : bool, default True
        Average over every node; False: only over nodes whose coefficient is not 0.
    %(edge_set)s
    %(triangle_options)s

    Returns
    -------
    float

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> round(mining.average_clustering(g), 4)
    0.8333
    """
    count_zeros = check_flag("count_zeros", count_zeros)  # "no" was read as True
    values = triangle_stats(graph, per_node=True, edge_set=edge_set, execution=Execution.of(
        execution, mode=mode, threads=threads, memory_limit=memory_limit, distributed=distributed,
        progress=progress)).clustering.values
    if not count_zeros:
        values = values[values > 0]
    if len(values) == 0:
        raise GraphsysError("average clustering of a graph with no node to average over")
    return float(values.mean())


@document
def transitivity(graph, *, edge_set: str | None = None, mode: str = "auto",
                 threads: int | None = None, memory_limit: int | None = None,
                 distributed: bool = False, progress: bool = False,
                 execution: Execution | None = None) -> float:
    """The global clustering coefficient: 3 × triangles / connected triples
    (``6 T / sum d (d - 1)``; networkx's ``transitivity``); 0 without any triple.

    Parameters
    ----------
    %(graph)s
    %(edge_set)s
    %(triangle_options)s

    Returns
    -------
    float

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([1, 2, 3, 1, 4]), np.array([2, 3, 1, 4, 2])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> mining.transitivity(g)
    0.75
    """
    return triangle_stats(graph, per_node=False, edge_set=edge_set, execution=Execution.of(
        execution, mode=mode, threads=threads, memory_limit=memory_limit, distributed=distributed,
        progress=progress)).transitivity


def triangle_codes(view: Oriented, *, threads: int, ranks: Ranks, progress: bool = False
                   ) -> np.ndarray:
    """Triangles of a view with directions, by direction code ``b_uv | b_uw << 2 |
    b_vw << 4`` (``u < v < w``): int64 (64,), summed over ranks."""
    work = view.wedge_work()
    lo, hi = ranks.roots(work)
    codes = np.zeros((threads, 64), np.int64)
    empty = np.zeros(0, np.int64)
    run_tasks(lambda tasks: kernels.triangles_merge(view.indptr, view.indices, tasks, empty,
                                                    empty, codes, view.dirs),
              work, lo, hi, threads, progress=progress, desc="triads")
    return ranks.sum(codes.sum(0))


def _dyad(bits: int, forward: bool) -> str:
    """The dyad ``x - y`` from ``x``'s side: ``o`` (x -> y only), ``i`` (y -> x only) or
    ``m`` (both); ``bits`` as :attr:`Oriented.dirs` for the pair ``(lower, higher)``,
    ``forward``: ``x`` is the lower."""
    if bits == 3:
        return "m"
    return "o" if (bits == 1) == forward else "i"


#: The class of an open triad (two dyads at a centre) by the centre's sides of them.
_OPEN = {"oo": "021D", "ii": "021U", "io": "021C", "oi": "021C", "im": "111D", "mi": "111D",
         "mo": "111U", "om": "111U", "mm": "201"}


def _closed_class(sides: list[str]) -> str:
    """The class of a triangle from each corner's two dyad sides (``sides[c]``)."""
    mutual = sum(s.count("m") for s in sides) // 2
    if mutual == 3:
        return "300"
    if mutual == 2:
        return "210"
    if mutual == 1:
        # the corner facing the mutual dyad sees two asymmetric dyads
        far = next(s for s in sides if "m" not in s)
        return {"oo": "120D", "ii": "120U"}.get(far, "120C")
    return "030C" if all(sorted(s) == ["i", "o"] for s in sides) else "030T"


def _code_table() -> list[tuple[str, list[str], int, int]]:
    """Per direction code (64): the triangle's class, the open-pair class each corner's
    pair would have had, and its asymmetric and mutual dyads (codes with a 0 dyad: unused)."""
    table = []
    for code in range(64):
        b_uv, b_uw, b_vw = code & 3, (code >> 2) & 3, (code >> 4) & 3
        if not (b_uv and b_uw and b_vw):
            table.append(("", [], 0, 0))
            continue
        sides = [_dyad(b_uv, True) + _dyad(b_uw, True),      # corner u
                 _dyad(b_uv, False) + _dyad(b_vw, True),     # corner v
                 _dyad(b_uw, False) + _dyad(b_vw, False)]    # corner w
        mutual = [b_uv, b_uw, b_vw].count(3)
        table.append((_closed_class(sides), [_OPEN[s] for s in sides], 3 - mutual, mutual))
    return table


_CODES = _code_table()


@document
def triad_census(graph, *, edge_set: str | None = None, threads: int | None = None,
                 memory_limit: int | None = None, distributed: bool = False,
                 progress: bool = False, execution: Execution | None = None) -> dict[str, int]:
    """The directed triad census: how many of the ``C(N, 3)`` node triples fall in each of
    the 16 isomorphism classes of directed 3-node graphs (networkx's ``triadic_census``).

    Only triangles are enumerated (each once, with its three dyads' directions): the open
    triads follow from each node's counts of out-only, in-only and mutual neighbours (pairs
    of them, less the pairs a triangle closes), the one-dyad triads from each edge's
    endpoints' degrees and triangles, and ``003`` from ``C(N, 3)`` [1]_. Self-loops are
    ignored; an undirected edge set is read as mutual dyads.

    Parameters
    ----------
    %(graph)s
    %(edge_set)s
    %(options)s

    Returns
    -------
    dict
        ``{class: count}`` for the 16 classes of :data:`TRIAD_NAMES`, in that order.

    References
    ----------
    .. [1] V. Batagelj, A. Mrvar, "A subquadratic triad census algorithm for large sparse
       networks with small maximum degree", Social Networks 23(3), 2001.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> g = graphsys.from_numpy(np.array([1, 2, 3]), np.array([2, 3, 1]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> {k: v for k, v in mining.triad_census(g).items() if v}
    {'030C': 1}
    """
    ex = Execution.of(execution, threads=threads, memory_limit=memory_limit,
                      distributed=distributed, progress=progress).in_memory("the triad census")
    g = as_graph(graph)
    ranks = Ranks.of(ex.distributed, g, ("triads", g.edge_set(edge_set).name))
    with scheduled(ex.threads) as count:
        view = views.view(g, "oriented", edge_set=edge_set, directions=True,
                          memory_limit=ex.memory_limit)
        codes = triangle_codes(view, threads=count, ranks=ranks, progress=ex.progress)
    sides = np.zeros((view.num_nodes, 3), np.int64)
    kernels.direction_counts(view.indptr, view.indices, view.dirs, sides)
    o, i, m = (sides[:, c] for c in range(3))
    open_pairs = {"021D": int((o * (o - 1) // 2).sum()), "021U": int((i * (i - 1) // 2).sum()),
                  "021C": int((o * i).sum()), "111D": int((m * i).sum()),
                  "111U": int((m * o).sum()), "201": int((m * (m - 1) // 2).sum())}
    census = dict.fromkeys(TRIAD_NAMES, 0)
    on_asym = on_mutual = 0
    for code, how_many in enumerate(codes.tolist()):
        if not how_many:
            continue
        cls, corners, asym, mutual = _CODES[code]
        census[cls] += how_many
        for c in corners:
            open_pairs[c] -= how_many
        on_asym += asym * how_many
        on_mutual += mutual * how_many
    census.update(open_pairs)
    n = view.num_nodes
    # one-dyad triads: each edge with a third node adjacent to neither endpoint
    rows = np.repeat(np.arange(n), view.out_degree())
    deg = view.degree
    spare = n - deg[rows] - deg[view.indices]
    mutual_edge = view.dirs == 3
    census["012"] = int(spare[~mutual_edge].sum()) + on_asym
    census["102"] = int(spare[mutual_edge].sum()) + on_mutual
    census["003"] = n * (n - 1) * (n - 2) // 6 - sum(v for k, v in census.items() if k != "003")
    return census
