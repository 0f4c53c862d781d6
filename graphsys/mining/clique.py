"""k-cliques: count, per node, and listing, by kClist over a degeneracy ordering.

The vertices are put in a degeneracy ordering: the removal order of the peeling that finds
core numbers (:func:`graphsys.kernels.cores.core_levels`: for k = 0, 1, ... remove every
vertex of remaining degree at most k, so each has at most k later neighbours; ``O(N +
M)``). Orienting
each edge towards the later vertex bounds every row by the degeneracy ``c`` (the largest
core number), so a root's out-neighbourhood holds at most ``c`` vertices. kClist [1]_ then
lists, from every root, the ``(k - 1)``-cliques of its out-neighbourhood, here as bitsets
(a root's rows intersected with its own: ``c^2 / 64`` words per thread) searched depth
first, each clique found once, from its earliest vertex. Time ``O(k M (c / 2)^(k - 2))``.
"""

from __future__ import annotations

import numpy as np

from graphsys import views
from graphsys.errors import check_count
from graphsys.execution import Execution
from graphsys.kernels.arrays import read_only
from graphsys.kernels.cores import core_levels
from graphsys.mining import clique_kernels
from graphsys.mining._docs import document
from graphsys.mining.parallel import Ranks, run_tasks, scheduled
from graphsys.mining.results import as_graph, check_beside, check_limit, listed_rows, original_ids
from graphsys.storage.node_values import NodeValues
from graphsys.views import Oriented
from graphsys.views.orient import _index_dtype, higher_rows

#: The clique sizes the kernels take.
MIN_K, MAX_K = 3, 8
#: Rows listed by :func:`cliques` when no ``limit`` is given.
DEFAULT_LIMIT = 10_000


def check_k(k) -> int:
    """``k`` as a clique size in ``MIN_K..MAX_K``."""
    return check_count("k", k, minimum=MIN_K, maximum=MAX_K)


def degeneracy_view(view: Oriented) -> tuple[Oriented, int]:
    """``view`` re-oriented by a degeneracy ordering (the removal order of
    :func:`graphsys.kernels.cores.core_levels`), and the degeneracy (the largest core
    number). Its ``order`` maps the new ids to global ids."""
    ptr, idx = read_only(*view.full())  # mapped or built: one signature of core_levels
    n = view.num_nodes
    peel = np.empty(n, np.int64)
    core = np.zeros(n)
    # the order of the peeling that finds core numbers, its queue (every vertex has at
    # most the degeneracy of neighbours after it); its list read once
    core_levels(ptr, idx, ptr, idx, False, view.degree.copy(), core, np.empty_like(peel),
                peel)
    core = int(core.max()) if n else 0
    rank = np.empty(n, np.int64)
    rank[peel] = np.arange(n, dtype=np.int64)
    dptr, didx = higher_rows(ptr, idx, rank)
    return Oriented(dptr, didx, view.order[peel], view.degree[peel], None, view.source), core


#: Anonymous bytes of a clique call beside its oriented view, per entry of the view
#: (the symmetric rows' two and the degeneracy view's one) and per node (the peeling's
#: arrays, the new order, the work and counts per root).
DEGENERACY_ENTRIES_PER_EDGE, DEGENERACY_BYTES_PER_NODE = 3, 72


def _clique_view(graph, edge_set, memory_limit) -> tuple[Oriented, int]:
    n, m = graph.num_nodes(), graph.num_edges(edge_set)  # at most m entries kept
    view = views.view(graph, "oriented", edge_set=edge_set, memory_limit=memory_limit,
                      beside=DEGENERACY_ENTRIES_PER_EDGE * _index_dtype(n).itemsize * m
                      + DEGENERACY_BYTES_PER_NODE * n)
    check_beside(graph, edge_set, view, "the degeneracy ordering of the clique search",
                 DEGENERACY_ENTRIES_PER_EDGE * view.indices.itemsize * view.num_edges
                 + DEGENERACY_BYTES_PER_NODE * view.num_nodes, memory_limit)
    return degeneracy_view(view)


def clique_work(view: Oriented, k: int) -> np.ndarray:
    """Per root, an estimate of its clique search in row entries and bitset words read:
    ``d+(u)^2`` (its local graph's build) and, for ``k > 3``, ``d+(u)^2`` intersections of
    bitsets of ``d+(u) / 64`` words."""
    d = view.out_degree()
    return d * d * (1 + (d >> 6) if k > 3 else 1)


def _count(graph, k, edge_set, per_vertex, execution, **given):
    ex = Execution.of(execution, **given).in_memory("clique counting")
    g = as_graph(graph)
    k = check_k(k)
    ranks = Ranks.of(ex.distributed, g, ("cliques", k, g.edge_set(edge_set).name, per_vertex))
    with scheduled(ex.threads) as count:
        view, _ = _clique_view(g, edge_set, ex.memory_limit)
        counts = np.zeros(view.num_nodes if per_vertex else 0, np.int64)
        work = clique_work(view, k)
        lo, hi = ranks.roots(work)
        max_row = int(view.out_degree().max()) if view.num_nodes else 0
        none = np.zeros(0, np.int64)
        total = run_tasks(lambda tasks: clique_kernels.cliques(
            view.indptr, view.indices, tasks, none, k, max_row, counts, none),
                          work, lo, hi, count, progress=ex.progress, desc=f"{k}-cliques")
    total = int(ranks.sum(np.array([total], np.int64))[0])
    return g, view, total, (ranks.sum(counts) if per_vertex else None)


@document
def clique_count(graph, k: int, *, edge_set: str | None = None, threads: int | None = None,
                 memory_limit: int | None = None, distributed: bool = False,
                 progress: bool = False, execution: Execution | None = None) -> int:
    """The number of ``k``-cliques (complete subgraphs of ``k`` nodes).

    Parameters
    ----------
    %(graph)s
    k : int
        The clique size, 3 to 8.
    %(edge_set)s
    %(options)s

    Returns
    -------
    int
        The ``k``-node entries of networkx's ``enumerate_all_cliques`` of the undirected
        view, counted.

    References
    ----------
    .. [1] M. Danisch, O. Balalau, M. Sozio, "Listing k-cliques in Sparse Real-World
       Graphs", WWW 2018.

    Examples
    --------
    >>> import itertools, tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> pairs = np.array(list(itertools.combinations(range(5), 2)))  # K5
    >>> g = graphsys.from_numpy(pairs[:, 0], pairs[:, 1], tempfile.mkdtemp() + "/g")
    >>> [mining.clique_count(g, k) for k in (3, 4, 5)]
    [10, 5, 1]
    """
    return _count(graph, k, edge_set, False, execution, threads=threads,
                  memory_limit=memory_limit, distributed=distributed, progress=progress)[2]


@document
def clique_counts(graph, k: int, *, edge_set: str | None = None, threads: int | None = None,
                  memory_limit: int | None = None, distributed: bool = False,
                  progress: bool = False, execution: Execution | None = None) -> NodeValues:
    """The number of ``k``-cliques through each node.

    Parameters
    ----------
    %(graph)s
    k : int
        The clique size, 3 to 8.
    %(edge_set)s
    %(options)s

    Returns
    -------
    NodeValues
        int64 (N,) by internal id; its sum is ``k * clique_count(graph, k)``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src = np.array([1, 1, 1, 2, 2, 3, 4])  # K4 on 1..4, and 4-5
    >>> dst = np.array([2, 3, 4, 3, 4, 4, 5])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> mining.clique_counts(g, 3).to_dict()
    {1: 3, 2: 3, 3: 3, 4: 3, 5: 0}
    """
    g, view, _, counts = _count(graph, k, edge_set, True, execution, threads=threads,
                                memory_limit=memory_limit, distributed=distributed,
                                progress=progress)
    return NodeValues(view.by_global(counts), g, f"{k}-cliques")


@document
def cliques(graph, k: int, *, limit: int | None = DEFAULT_LIMIT, edge_set: str | None = None,
            memory_limit: int | None = None, execution: Execution | None = None) -> np.ndarray:
    """List ``k``-cliques, at most ``limit`` of them.

    The cliques come in the order of the degeneracy ordering (each clique's nodes in that
    order too): deterministic for a given graph, whatever its storage.

    Parameters
    ----------
    %(graph)s
    k : int
        The clique size, 3 to 8.
    limit : int or None, default 10000
        The most cliques returned; None: all of them (counted first, to size the answer,
        as a limit past 65,536 rows is).
    %(edge_set)s
    %(memory_options)s

    Returns
    -------
    numpy.ndarray
        (C, k) original node ids (int64, or ``object`` for string ids), one clique per row.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src = np.array([1, 1, 1, 2, 2, 3, 4])
    >>> dst = np.array([2, 3, 4, 3, 4, 4, 5])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> sorted(sorted(c) for c in mining.cliques(g, 3).tolist())
    [[1, 2, 3], [1, 2, 4], [1, 3, 4], [2, 3, 4]]
    """
    ex = Execution.of(execution, memory_limit=memory_limit).in_memory(
        "clique listing", "distributed", "progress")
    g = as_graph(graph)
    k = check_k(k)
    check_limit(limit)
    view, _ = _clique_view(g, edge_set, ex.memory_limit)
    max_row = int(view.out_degree().max()) if view.num_nodes else 0
    none = np.zeros(0, np.int64)
    limit = listed_rows(g, edge_set, limit, k, lambda: clique_kernels.cliques(
        view.indptr, view.indices, np.array([0, view.num_nodes], np.int64), none, k, max_row,
        none, none), f"{k}-cliques", ex.memory_limit)
    out = np.empty((limit, k), np.int64)
    got = int(clique_kernels.list_cliques(view.indptr, view.indices, k, max_row, int(limit), out)) \
        if limit else 0
    return original_ids(g, view.order[out[:got]])
