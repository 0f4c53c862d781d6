"""Vertex-centric (BSP / Pregel) analytics over stored graphs.

One programming model (:class:`VertexProgram`: init, send along edges, combine, update,
halt, aggregators) runs in memory (CSR/CSC with Ligra's push/pull switch), out of core
(buckets streamed from the mapped Arrow files), on CPU (numba kernels) or CUDA (torch), and
across ``torch.distributed`` ranks. Run a program with :func:`run`; the algorithms are
thin front-ends returning a :class:`Result` (float64 values by global id + statistics).

``import graphsys`` sets ``OMP_WAIT_POLICY=PASSIVE`` and ``GOMP_SPINCOUNT=3000`` unless
already set: numba's and torch's OpenMP pools both busy-wait at length by default, and two
spinning pools starve each other on a small machine (a 1,500-edge pull superstep measured
48 ms instead of 1 ms on 2 cores); a short poll before sleeping keeps back-to-back parallel
calls from paying a futex wake-up each.
"""

from graphsys.bsp.algorithms import (
    ALGORITHMS,
    BFS,
    HITS,
    SSSP,
    WCC,
    KCore,
    LabelPropagation,
    PageRank,
    bfs,
    hits,
    kcore,
    label_propagation,
    pagerank,
    personalized_pagerank,
    sssp,
    wcc,
)
from graphsys.bsp.engine import Result, run
from graphsys.bsp.program import Combiner, Context, ModeCombiner, VertexProgram
from graphsys.bsp.stats import RunStats, SuperstepStats
from graphsys.device import resolve_device

__all__ = [
    "ALGORITHMS",
    "BFS",
    "HITS",
    "SSSP",
    "WCC",
    "Combiner",
    "Context",
    "KCore",
    "LabelPropagation",
    "ModeCombiner",
    "PageRank",
    "Result",
    "RunStats",
    "SuperstepStats",
    "VertexProgram",
    "bfs",
    "hits",
    "kcore",
    "label_propagation",
    "pagerank",
    "personalized_pagerank",
    "resolve_device",
    "run",
    "sssp",
    "wcc",
]
