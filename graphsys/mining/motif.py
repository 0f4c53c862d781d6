"""Motif census: induced counts of every connected 3-, 4- and 5-node pattern.

Of 3 and 4 nodes nothing is enumerated pattern by pattern: the non-induced counts follow
from degrees, the triangle pass (per node and per edge) and two costlier sums, the 4-cycles
and the 4-cliques (exact, or estimated from ``samples`` random wedges and edges with
``method="sampled"``), and a fixed linear relation turns them into induced counts [1]_ [2]_.
Directed 3-node motifs are the connected classes of the triad census
(:func:`graphsys.mining.triad_census`). The 21 connected 5-node classes
(:data:`UNDIRECTED_5`) come from one ESU enumeration [3]_ of the connected induced 5-node
subsets (:func:`graphsys.mining.motif_kernels.esu5`), its last two levels counted in bulk
and each 10-bit adjacency code named through :func:`five_node_classes`.
``docs/mining.md`` ("Motif census") gives the sums, the estimators and their errors.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from graphsys.errors import ParameterError, check_count, check_flag
from graphsys.execution import Execution
from graphsys.mining._docs import document
from graphsys.mining.census import (
    DIRECTED_3,
    METHODS,
    UNDIRECTED_3,
    UNDIRECTED_4,
    MotifCensus,
    five_codes,
    small_census,
)
from graphsys.mining.pattern import Pattern
from graphsys.mining.results import as_graph
from graphsys.mining.triangle import triad_census

__all__ = ["DIRECTED_3", "UNDIRECTED_3", "UNDIRECTED_4", "UNDIRECTED_5", "MotifCensus",
           "motifs"]

#: Connected undirected 5-node classes (pattern names, :data:`graphsys.mining.pattern.NAMED`),
#: by number of edges.
UNDIRECTED_5 = ("4-star", "fork", "5-path", "cricket", "bull", "lollipop", "banner", "5-cycle",
                "dart", "kite", "butterfly", "house", "k2-3", "tailed-4-clique", "book", "gem",
                "k2-3-plus-edge", "k5-minus-wedge", "wheel", "k5-minus-edge", "5-clique")
#: The 10 pairs of 5 positions in the order of the bits of a 5-node adjacency code
#: (:func:`graphsys.mining.motif_kernels.esu5`).
PAIRS_5 = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3), (0, 4), (1, 4), (2, 4), (3, 4))


@functools.cache
def five_node_classes() -> np.ndarray:
    """int64 (1024,): the index in :data:`UNDIRECTED_5` of the graph on 5 positions whose
    edges are the set bits of the code (bit ``p``: pair ``PAIRS_5[p]``), -1 when that graph
    is disconnected. Every relabelling of each class's pattern marks its code."""
    table = np.full(1 << len(PAIRS_5), -1, np.int64)
    for cls, name in enumerate(UNDIRECTED_5):
        for perm in itertools.permutations(range(5)):
            code = 0
            for a, b in Pattern.named(name).edges:
                code |= 1 << PAIRS_5.index(tuple(sorted((perm[a], perm[b]))))
            table[code] = cls
    return table


def _five_census(g, edge_set, ex: Execution) -> MotifCensus:
    """The 5-node census: the enumeration's counts by adjacency code, folded by class."""
    by_code = five_codes(g, edge_set, ex)
    found = np.flatnonzero(by_code)
    counts = np.zeros(len(UNDIRECTED_5), np.int64)
    np.add.at(counts, five_node_classes()[found], by_code[found])
    out = {name: int(c) for name, c in zip(UNDIRECTED_5, counts)}
    return MotifCensus(5, False, out, stderr=dict.fromkeys(out, 0.0))


def _check(size, directed, method, samples, seed) -> None:
    if size not in (3, 4, 5) or isinstance(size, bool):
        raise ParameterError("size", f"must be 3, 4 or 5, got {size!r}")
    check_flag("directed", directed)  # "no" ran the directed triad census
    if directed and size != 3:
        raise ParameterError("size", "of directed motifs must be 3 (the triad census)")
    if method not in METHODS:
        raise ParameterError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "sampled":
        if size != 4 or directed:
            raise ParameterError("method", "sampled applies to undirected 4-node motifs "
                                           "(3-node censuses are exact and cheap)")
        check_count("samples", samples, minimum=2)
        check_count("seed", seed, minimum=0)


@document
def motifs(graph, size: int = 3, *, directed: bool = False, method: str = "exact",
           samples: int = 100_000, seed: int = 0, edge_set: str | None = None,
           threads: int | None = None, memory_limit: int | None = None,
           distributed: bool = False, progress: bool = False,
           execution: Execution | None = None) -> MotifCensus:
    """Induced counts of every connected ``size``-node pattern (igraph's
    ``motifs_randesu``, without its unconnected classes).

    Parameters
    ----------
    %(graph)s
    size : {3, 4, 5}, default 3
        Nodes per pattern (5: the 21 classes of :data:`UNDIRECTED_5`, by one enumeration of
        the connected 5-node subsets, see ``docs/mining.md``).
    directed : bool, default False
        Directed 3-node classes (the 13 connected triad classes, by their M-A-N names);
        otherwise the undirected simple view's classes (:data:`UNDIRECTED_3`,
        :data:`UNDIRECTED_4`, :data:`UNDIRECTED_5`).
    method : {"exact", "sampled"}, default "exact"
        ``sampled`` (4-node undirected only): the 4-cycle and 4-clique sums estimated
        from random wedges and edges, see ``docs/mining.md``; every count is then an
        unbiased estimate with a standard error (:attr:`MotifCensus.stderr`).
    samples : int, default 100000
        Draws for each of the two estimated sums.
    seed : int, default 0
        The draws' seed (the same seed, the same draws, whatever the threads or the
        partitions).
    %(edge_set)s
    %(options)s

    Returns
    -------
    MotifCensus

    References
    ----------
    .. [1] N. K. Ahmed, J. Neville, R. A. Rossi, N. Duffield, "Efficient Graphlet Counting
       for Large Networks", ICDM 2015.
    .. [2] C. Seshadhri, A. Pinar, T. G. Kolda, "Wedge sampling for computing clustering
       coefficients and triangle counts on large graphs", Statistical Analysis and Data
       Mining 7(4), 2014.
    .. [3] S. Wernicke, "Efficient Detection of Network Motifs", IEEE/ACM Transactions on
       Computational Biology and Bioinformatics 3(4), 2006.

    Examples
    --------
    A 4-cycle 1-2-3-4 with the chord 1-3:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> g = graphsys.from_numpy(np.array([1, 2, 3, 4, 1]), np.array([2, 3, 4, 1, 3]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> mining.motifs(g, 3).counts
    {'wedge': 2, 'triangle': 2}
    >>> {k: v for k, v in mining.motifs(g, 4).counts.items() if v}
    {'diamond': 1}
    >>> {k: v for k, v in mining.motifs(g, 3, directed=True).counts.items() if v}
    {'021C': 2, '030T': 1, '030C': 1}
    >>> h = graphsys.from_numpy(np.array([1, 2, 3, 4, 1, 1]), np.array([2, 3, 4, 5, 5, 3]),
    ...                         tempfile.mkdtemp() + "/h")
    >>> {k: v for k, v in mining.motifs(h, 5).counts.items() if v}
    {'house': 1}
    """
    _check(size, directed, method, samples, seed)
    ex = Execution.of(execution, threads=threads, memory_limit=memory_limit,
                      distributed=distributed, progress=progress).in_memory("motif counting")
    g = as_graph(graph)
    if directed:
        census = triad_census(g, edge_set=edge_set, execution=ex)
        counts = {k: census[k] for k in DIRECTED_3}
        return MotifCensus(3, True, counts, stderr=dict.fromkeys(counts, 0.0))
    if size == 5:
        return _five_census(g, edge_set, ex)
    return small_census(g, size, method, samples, seed, edge_set, ex)
