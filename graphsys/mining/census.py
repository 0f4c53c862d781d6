"""The exact and sampled census of the connected undirected 3- and 4-node patterns, from
sums of the triangle pass, and the exact 5-node census by one enumeration
(:mod:`graphsys.mining.motif` describes the methods; its ``motifs`` is the public entry
point)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from graphsys import views
from graphsys.execution import Execution
from graphsys.mining import clique_kernels, kernels, motif_kernels
from graphsys.mining.clique import clique_work
from graphsys.mining.parallel import SERIAL_WORK, TASKS_PER_THREAD, Ranks, run_tasks, scheduled
from graphsys.mining.results import check_beside
from graphsys.mining.triangle import TRIAD_NAMES
from graphsys.progress import display
from graphsys.storage.node_reads import id_rank
from graphsys.views.rows import from_pairs

#: Connected undirected 3-node classes.
UNDIRECTED_3 = ("wedge", "triangle")
#: Connected undirected 4-node classes.
UNDIRECTED_4 = ("4-path", "3-star", "4-cycle", "tailed-triangle", "diamond", "4-clique")
#: ESU children (higher neighbours of a root) per task of the 5-node census.
CHILDREN_PER_TASK = 8
#: Kernel calls the 5-node census is cut into (each moves the progress bar).
CALLS_5 = 16
#: Connected directed 3-node classes (triad names).
DIRECTED_3 = tuple(n for n in TRIAD_NAMES if n not in ("003", "012", "102"))
METHODS = ("exact", "sampled")

#: Each induced 4-node count as (the non-induced counts' sum, coefficient of C4, of K4):
#: induced = rest + a * C4 + b * K4, where ``rest`` uses the exact sums only.
_C4_K4 = {"4-path": (-4, -12), "3-star": (0, -4), "4-cycle": (1, 3),
          "tailed-triangle": (0, 12), "diamond": (0, -6), "4-clique": (0, 1)}


#: A connected 3- or 4-node pattern's class from (edges, sorted degrees).
SHAPES = {(2, (1, 1, 2)): "wedge", (3, (2, 2, 2)): "triangle",
          (3, (1, 1, 2, 2)): "4-path", (3, (1, 1, 1, 3)): "3-star",
          (4, (2, 2, 2, 2)): "4-cycle", (4, (1, 2, 2, 3)): "tailed-triangle",
          (5, (2, 2, 3, 3)): "diamond", (6, (3, 3, 3, 3)): "4-clique"}


@dataclass(frozen=True)
class MotifCensus:
    """Induced counts of the connected patterns of one size.

    Attributes
    ----------
    size : int
        Nodes per pattern (3, 4 or 5).
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

    Examples
    --------
    From :func:`graphsys.mining.motifs`, on two triangles sharing the edge 1-3:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> g = graphsys.from_numpy(np.array([1, 2, 3, 4, 1]), np.array([2, 3, 4, 1, 3]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> census = mining.motifs(g, 3)
    >>> census.size, census.method, census.counts, census["triangle"]
    (3, 'exact', {'wedge': 2, 'triangle': 2}, 2)
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


def small_bytes(view, size: int, threads: int, samples: int) -> int:
    """Anonymous bytes of a 3- or 4-node census beside its oriented view at the peak: per
    node its counts and sums; 4-node, per edge the triangles through it and the sums over
    edges, the symmetric rows and two scratch rows per thread of the 4-cycle pass, and
    the draws and renumbered view of a sampled one."""
    n, m = view.num_nodes, view.num_edges
    if size == 3:
        return 40 * n
    # a sampled one renumbers the view (:func:`_by_rank`): its pairs, sort orders and rows
    renumbered = ((88 + 3 * view.indices.itemsize) * m + 16 * n) if samples else 0
    return ((32 + 2 * view.indices.itemsize) * m + (64 + 8 * threads) * n + 40 * samples
            + renumbered)


def small_census(g, size: int, method: str, samples: int, seed: int, edge_set,
                 ex: Execution) -> MotifCensus:
    """The undirected census of ``size`` (3 or 4) nodes of an opened graph (parameters
    checked by the caller, :func:`graphsys.mining.motifs`), run as ``ex`` says."""
    ranks = Ranks.of(ex.distributed, g, ("motifs", size, method, samples, seed,
                                         g.edge_set(edge_set).name))
    progress = ex.progress
    with scheduled(ex.threads) as nthreads:
        view = views.view(g, "oriented", edge_set=edge_set, memory_limit=ex.memory_limit)
        n, m = view.num_nodes, view.num_edges
        check_beside(g, edge_set, view, f"the {size}-node motif census", small_bytes(
            view, size, nthreads, samples if method == "sampled" else 0), ex.memory_limit)
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
            ptr, idx, dptr, didx, per_edge = _by_rank(g, view, rows, per_edge)
            d = np.diff(ptr)
            rng = np.random.default_rng(seed)
            # 4-cycles from uniform wedges, 4-cliques from edges drawn by their diamond pairs
            n_c4, err_c4 = _sampled(d * (d - 1) // 2, 4, rng, samples, ranks,
                                    lambda *a: motif_kernels.sample_wedges(ptr, idx, *a))
            n_k4, err_k4 = _sampled(per_edge * (per_edge - 1) // 2, 6, rng, samples, ranks,
                                    lambda *a: motif_kernels.sample_diamonds(
                                        dptr, didx, ptr, idx, *a))
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


def _by_rank(g, view, rows: np.ndarray, per_edge: np.ndarray) -> tuple:
    """``(ptr, idx, dptr, didx, tri)``: the oriented view renumbered by
    :func:`~graphsys.storage.node_reads.id_rank` (so that a seed draws the same wedges and
    edges however the graph is partitioned): its symmetric rows, its rows of higher
    neighbours (ascending) and the triangles through each edge in their order; ``rows``
    is the row of each of the view's edges, ``per_edge`` its triangles."""
    rank = id_rank(g)[view.order]
    a, b = rank[rows], rank[view.indices]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    n, dtype = view.num_nodes, view.indices.dtype
    dptr, didx, tri = from_pairs(n, lo, hi.astype(dtype), per_edge, by=(hi,))
    cols = np.concatenate((hi, lo))
    ptr, idx = from_pairs(n, np.concatenate((lo, hi)), cols.astype(dtype), by=(cols,))
    return ptr, idx, dptr, didx, tri


def _sampled(weights: np.ndarray, per_copy: int, rng, samples: int, ranks: Ranks,
             kernel) -> tuple[float, float]:
    """The copies ``samples`` draws estimate (see the module's notes) and its standard
    error: a draw picks an item with probability ``weights / W`` and ``kernel(cum, draws,
    out)`` scores it; the mean over every rank's share of the draws times ``W /
    per_copy``."""
    cum = np.cumsum(weights, dtype=np.float64)
    draws = rng.random((samples, 3))
    if not len(cum) or cum[-1] == 0:
        return 0.0, 0.0
    mine = draws[ranks.share(len(draws))]
    out = np.empty(len(mine), np.float64)
    kernel(cum, mine, out)
    sums = ranks.sum(np.array([out.sum(), (out * out).sum()], np.float64))
    mean = sums[0] / samples
    var = max(sums[1] / samples - mean * mean, 0.0) * samples / (samples - 1)
    scale = float(cum[-1]) / per_copy
    return scale * mean, scale * float(np.sqrt(var / samples))


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


def _descending(view) -> tuple[np.ndarray, np.ndarray]:
    """The oriented view's symmetric rows renumbered ``u -> N-1-u`` (descending degree
    order: a hub first), rows ascending."""
    ptr, idx = view.full()
    n = len(ptr) - 1
    rptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.diff(ptr)[::-1], out=rptr[1:])
    return rptr, (n - 1 - idx[::-1]).astype(idx.dtype)


def _esu_tasks(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray]:
    """``(roots, lo, hi)``: every root's ESU children (its higher neighbours) cut into
    ranges of :data:`CHILDREN_PER_TASK`."""
    n = len(ptr) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    above = np.bincount(rows[idx > rows], minlength=n).astype(np.int64)
    chunks = -(-above // CHILDREN_PER_TASK)
    roots = np.repeat(np.arange(n, dtype=np.int64), chunks)
    first = np.cumsum(chunks) - chunks
    lo = (np.arange(len(roots), dtype=np.int64) - np.repeat(first, chunks)) * CHILDREN_PER_TASK
    return roots, lo, lo + CHILDREN_PER_TASK


def five_codes(g, edge_set, ex: Execution) -> np.ndarray:
    """The connected induced 5-node subsets of an opened graph, by one enumeration
    (:func:`graphsys.mining.motif_kernels.esu5`), run as ``ex`` says: int64 (1024,)
    counts by adjacency code (summed over the ranks)."""
    ranks = Ranks.of(ex.distributed, g, ("5-node motifs", g.edge_set(edge_set).name))
    with scheduled(ex.threads) as nthreads:
        view = views.view(g, "oriented", edge_set=edge_set, memory_limit=ex.memory_limit)
        most = int(view.degree.max()) if view.num_nodes else 0
        check_beside(g, edge_set, view, "the 5-node motif census",
                     (8 + 4 * view.indices.itemsize) * view.num_edges
                     + (32 + 10 * nthreads) * view.num_nodes
                     + 48 * nthreads * (most + 1), ex.memory_limit)
        ptr, idx = _descending(view)
        n = len(ptr) - 1
        roots, lo, hi = _esu_tasks(ptr, idx)
        mine = ranks.share(len(roots))
        roots, lo, hi = roots[mine], lo[mine], hi[mine]
        most = int(np.diff(ptr).max()) if n else 0
        marks = np.zeros((nthreads, n), np.uint8)
        adjs = np.zeros((nthreads, n), np.uint8)
        poss = np.full((nthreads, n), -1, np.int64)
        exts = np.empty((nthreads, 6 * most + 6), np.int64)
        acc = np.zeros((nthreads, 1024), np.int64)
        calls = min(CALLS_5, max(1, len(roots) // (TASKS_PER_THREAD * nthreads)))
        cuts = np.linspace(0, len(roots), calls + 1).astype(np.int64)
        with display(ex.progress, total=len(roots), unit="task",
                     desc="motifs: 5-node subsets") as bar:
            for a, b in zip(cuts[:-1], cuts[1:]):
                with numba.parallel_chunksize(1):
                    motif_kernels.esu5(ptr, idx, roots[a:b], lo[a:b], hi[a:b], marks, adjs,
                                       poss, exts, acc)
                bar.update(int(b - a))
    return ranks.sum(acc.sum(axis=0))
