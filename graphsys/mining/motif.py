"""Motif census: induced counts of every connected 3- and 4-node pattern.

Nothing is enumerated pattern by pattern. The *non-induced* counts (copies of each pattern
as a subgraph) follow from a few exact sums, and the induced counts from those by the
linear relation between them [1]_:

===================  ==================================================  ============
pattern              non-induced copies                                  from
===================  ==================================================  ============
wedge (2-path)       ``sum C(d(v), 2)``                                  degrees
triangle             ``T``                                               triangle pass
3-star               ``sum C(d(v), 3)``                                  degrees
4-path               ``sum over edges (d(u) - 1)(d(v) - 1) - 3 T``       degrees, T
tailed triangle      ``sum T(v) (d(v) - 2)``                             per-node T
4-cycle              ``C4``                                              wedge pass
diamond              ``sum over edges C(T(e), 2)``                       per-edge T
4-clique             ``K4``                                              kClist
===================  ==================================================  ============

(``T(v)``, ``T(e)``: the triangles through a node, an edge.) ``C4`` counts, from each
vertex ``u`` as the highest of the cycle, the wedges ``u - v - w`` with ``v, w`` below
``u`` per end ``w`` (Chiba and Nishizeki's ``O(alpha M)`` 4-cycle count); ``K4`` is the
4-clique count of :mod:`graphsys.mining.clique` on the degree-ordered rows. Those two are
the costly sums. ``method="sampled"`` estimates them from ``samples`` random draws each,
while every other sum stays exact [2]_:

- ``C4 = W / 4 * E[x]``: ``W = sum C(d, 2)`` wedges; a wedge ``a - c - b`` drawn uniformly
  (its centre with probability ``C(d(c), 2) / W``, then two distinct neighbours) has
  ``x`` = the common neighbours of ``a`` and ``b`` other than ``c``: summed over all
  wedges, ``x`` counts every 4-cycle four times.
- ``K4 = D / 6 * E[r]``: ``D = sum over edges C(T(e), 2)`` (the non-induced diamonds); an
  edge drawn with probability ``C(T(e), 2) / D``, then a pair of its common neighbours
  drawn uniformly, has ``r = 1`` when the pair is adjacent (it closes a 4-clique on the
  edge; a 4-clique has six edges), else 0. ``r`` is a coin of mean ``6 K4 / D``, so the
  estimate's relative standard error is ``sqrt((D / (6 K4) - 1) / samples)``.

Both are unbiased; their standard errors (sample standard deviation over ``sqrt(samples)``,
scaled) are carried through the linear relation into a standard error per class. A draw
costs one intersection of two sorted rows (the shorter searched in the longer), whatever
the graph's size.

Directed 3-node motifs are the connected classes of the triad census
(:func:`graphsys.mining.triad_census`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphsys import views
from graphsys.errors import ParameterError
from graphsys.mining import clique_kernels, kernels, motif_kernels
from graphsys.mining._docs import document
from graphsys.mining.clique import clique_work
from graphsys.mining.parallel import SERIAL_WORK, Ranks, run_tasks, scheduled
from graphsys.mining.results import as_graph
from graphsys.mining.triangle import TRIAD_NAMES, triad_census

#: Connected undirected 3-node classes.
UNDIRECTED_3 = ("wedge", "triangle")
#: Connected undirected 4-node classes.
UNDIRECTED_4 = ("4-path", "3-star", "4-cycle", "tailed-triangle", "diamond", "4-clique")
#: Connected directed 3-node classes (triad names).
DIRECTED_3 = tuple(n for n in TRIAD_NAMES if n not in ("003", "012", "102"))
METHODS = ("exact", "sampled")

#: Each induced 4-node count as (the non-induced counts' sum, coefficient of C4, of K4):
#: induced = rest + a * C4 + b * K4, where ``rest`` uses the exact sums only.
_C4_K4 = {"4-path": (-4, -12), "3-star": (0, -4), "4-cycle": (1, 3),
          "tailed-triangle": (0, 12), "diamond": (0, -6), "4-clique": (0, 1)}


@dataclass(frozen=True)
class MotifCensus:
    """Induced counts of the connected patterns of one size.

    Attributes
    ----------
    size : int
        Nodes per pattern (3 or 4).
    directed : bool
        Directed classes (triad names) or undirected ones.
    counts : dict
        ``{class: count}``: ints when exact, floats (estimates) when sampled.
    method : str
        ``exact`` or ``sampled``.
    stderr : dict
        Per class, the estimate's standard error (0 for exact classes).
    samples : int or None
        Draws per estimated sum of a sampled census.
    seed : int or None
        Its seed.
    """

    size: int
    directed: bool
    counts: dict
    method: str = "exact"
    stderr: dict = field(default_factory=dict)
    samples: int | None = None
    seed: int | None = None

    def __getitem__(self, name: str):
        return self.counts[name]

    def to_dict(self) -> dict:
        """Everything as plain JSON types."""
        return {"size": self.size, "directed": self.directed, "method": self.method,
                "counts": dict(self.counts), "stderr": dict(self.stderr),
                "samples": self.samples, "seed": self.seed}


def _check(size, directed, method, samples, seed) -> None:
    if size not in (3, 4) or isinstance(size, bool):
        raise ParameterError("size", f"must be 3 or 4, got {size!r}")
    if directed and size != 3:
        raise ParameterError("size", "of directed motifs must be 3 (the triad census)")
    if method not in METHODS:
        raise ParameterError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "sampled":
        if size != 4 or directed:
            raise ParameterError("method", "sampled applies to undirected 4-node motifs "
                                           "(3-node censuses are exact and cheap)")
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) \
                or samples < 2:
            raise ParameterError("samples", f"must be an integer of at least 2, got "
                                            f"{samples!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ParameterError("seed", f"must be an integer, got {seed!r}")


@document
def motifs(graph, size: int = 3, *, directed: bool = False, method: str = "exact",
           samples: int = 100_000, seed: int = 0, edge_set: str | None = None,
           threads: int | None = None, memory_limit: int | None = None,
           distributed: bool = False, progress: bool = False) -> MotifCensus:
    """Induced counts of every connected ``size``-node pattern (igraph's
    ``motifs_randesu``, without its unconnected classes).

    Parameters
    ----------
    %(graph)s
    size : {3, 4}, default 3
        Nodes per pattern.
    directed : bool, default False
        Directed 3-node classes (the 13 connected triad classes, by their M-A-N names);
        otherwise the undirected simple view's classes (:data:`UNDIRECTED_3`,
        :data:`UNDIRECTED_4`).
    method : {"exact", "sampled"}, default "exact"
        ``sampled`` (4-node undirected only): the 4-cycle and 4-clique sums estimated
        from random wedges and edges, see the module's notes; every count is then an
        unbiased estimate with a standard error (:attr:`MotifCensus.stderr`).
    samples : int, default 100000
        Draws for each of the two estimated sums.
    seed : int, default 0
        The draws' seed (the same seed, the same draws, whatever the threads).
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
    """
    _check(size, directed, method, samples, seed)
    g = as_graph(graph)
    if directed:
        census = triad_census(g, edge_set=edge_set, threads=threads,
                              memory_limit=memory_limit, distributed=distributed,
                              progress=progress)
        counts = {k: census[k] for k in DIRECTED_3}
        return MotifCensus(3, True, counts, stderr=dict.fromkeys(counts, 0.0))
    ranks = Ranks.of(distributed, g)
    with scheduled(threads) as nthreads:
        view = views.view(g, "oriented", edge_set=edge_set, memory_limit=memory_limit)
        n, m = view.num_nodes, view.num_edges
        per_edge = np.zeros(m if size == 4 else 0, np.int64)
        per_node = np.zeros(n, np.int64)
        work = view.wedge_work()
        lo, hi = ranks.roots(work)
        no_codes, no_dirs = np.zeros((nthreads, 64), np.int64), np.zeros(0, np.uint8)
        run_tasks(lambda tasks: kernels.triangles_merge(view.indptr, view.indices, tasks,
                                                        per_edge, per_node, no_codes,
                                                        no_dirs),
                  work, lo, hi, nthreads, progress=progress, desc="motifs: triangles")
        per_node = ranks.sum(per_node)
        d = view.degree
        tri = int(per_node.sum()) // 3
        if size == 3:
            counts = {"wedge": int((d * (d - 1) // 2).sum()) - 3 * tri, "triangle": tri}
            return MotifCensus(3, False, counts, stderr=dict.fromkeys(counts, 0.0))
        per_edge = ranks.sum(per_edge)
        rows = np.repeat(np.arange(n), view.out_degree())
        exact = {"3-star": int((d * (d - 1) * (d - 2) // 6).sum()),
                 "4-path": int(((d[rows] - 1) * (d[view.indices] - 1)).sum()) - 3 * tri,
                 "tailed-triangle": int((per_node * (d - 2)).clip(0).sum()),
                 "diamond": int((per_edge * (per_edge - 1) // 2).sum())}
        if method == "exact":
            n_c4 = _four_cycles(view, nthreads, ranks, progress)
            n_k4 = _four_cliques(view, nthreads, ranks, progress)
            err_c4 = err_k4 = 0.0
        else:
            rng = np.random.default_rng(seed)
            n_c4, err_c4 = _sampled_four_cycles(view, rng, samples, ranks)
            n_k4, err_k4 = _sampled_four_cliques(view, per_edge, rng, samples, ranks)
    star, path, paw, dia = (exact["3-star"], exact["4-path"], exact["tailed-triangle"],
                            exact["diamond"])
    rest = {"4-path": path - 2 * paw + 6 * dia, "3-star": star - paw + 2 * dia,
            "4-cycle": -dia, "tailed-triangle": paw - 4 * dia, "diamond": dia,
            "4-clique": 0}
    counts = {k: rest[k] + _C4_K4[k][0] * n_c4 + _C4_K4[k][1] * n_k4 for k in UNDIRECTED_4}
    if method == "exact":
        return MotifCensus(4, False, {k: int(v) for k, v in counts.items()},
                           stderr=dict.fromkeys(counts, 0.0))
    stderr = {k: float(np.hypot(_C4_K4[k][0] * err_c4, _C4_K4[k][1] * err_k4))
              for k in UNDIRECTED_4}
    return MotifCensus(4, False, {k: float(v) for k, v in counts.items()}, "sampled", stderr,
                       int(samples), int(seed))


def _mean_and_error(values: np.ndarray, scale: float, ranks: Ranks, draws: int
                    ) -> tuple[float, float]:
    """``scale`` times the mean of the draws (over every rank's share) and its standard
    error."""
    sums = ranks.sum(np.array([values.sum(), (values * values).sum()], np.float64))
    mean = sums[0] / draws
    var = max(sums[1] / draws - mean * mean, 0.0) * draws / (draws - 1)
    return scale * mean, scale * float(np.sqrt(var / draws))


def _sampled_four_cycles(view, rng, samples: int, ranks: Ranks) -> tuple[float, float]:
    """4-cycles from ``samples`` uniform wedges (see the module's notes)."""
    ptr, idx = view.full()
    wedges = view.degree * (view.degree - 1) // 2
    cum = np.cumsum(wedges, dtype=np.float64)
    draws = rng.random((samples, 3))
    if not len(cum) or cum[-1] == 0:
        return 0.0, 0.0
    mine = draws[ranks.share(len(draws))]
    out = np.empty(len(mine), np.float64)
    motif_kernels.sample_wedges(ptr, idx, cum, mine, out)
    return _mean_and_error(out, float(cum[-1]) / 4, ranks, samples)


def _sampled_four_cliques(view, per_edge, rng, samples: int, ranks: Ranks
                          ) -> tuple[float, float]:
    """4-cliques from ``samples`` edges drawn by their diamond pairs (module notes)."""
    pairs = per_edge * (per_edge - 1) // 2
    cum = np.cumsum(pairs, dtype=np.float64)
    draws = rng.random((samples, 3))
    if not len(cum) or cum[-1] == 0:
        return 0.0, 0.0
    ptr, idx = view.full()
    mine = draws[ranks.share(len(draws))]
    out = np.empty(len(mine), np.float64)
    motif_kernels.sample_diamonds(view.indptr, view.indices, ptr, idx, cum, mine, out)
    return _mean_and_error(out, float(cum[-1]) / 6, ranks, samples)


def _four_cycles(view, threads: int, ranks: Ranks, progress: bool) -> int:
    """4-cycles, each from its highest vertex (summed over the ranks' shares)."""
    n = view.num_nodes
    ptr, idx = view.full()
    work = np.empty(n, np.int64)
    with scheduled(threads if len(idx) >= SERIAL_WORK else 1):
        motif_kernels.lower_wedge_work(ptr, idx, work)
    lo, hi = ranks.roots(work)
    scratch = np.zeros((threads, n), np.int32)
    touched = np.empty((threads, n), np.int32)
    none = np.zeros(0, np.int64)
    total = run_tasks(lambda tasks: motif_kernels.four_cycles(ptr, idx, tasks, none, scratch,
                                                        touched, none),
                      work, lo, hi, threads, progress=progress, desc="motifs: 4-cycles")
    return int(ranks.sum(np.array([total], np.int64))[0])


def _four_cliques(view, threads: int, ranks: Ranks, progress: bool) -> int:
    """4-cliques, each from its lowest vertex (summed over the ranks' shares)."""
    d = view.out_degree()
    work = clique_work(view, 4)
    lo, hi = ranks.roots(work)
    max_row = int(d.max()) if len(d) else 0
    none = np.zeros(0, np.int64)
    total = run_tasks(lambda tasks: clique_kernels.cliques(
        view.indptr, view.indices, tasks, none, 4, max_row, none, none),
                      work, lo, hi, threads, progress=progress, desc="motifs: 4-cliques")
    return int(ranks.sum(np.array([total], np.int64))[0])
