"""Vertex-centric (BSP / Pregel) analytics over stored graphs.

One programming model (:class:`VertexProgram`: init, send along edges, combine, update,
halt, aggregators) runs in memory (CSR/CSC with Ligra's push/pull switch), out of core
(buckets streamed from the mapped Arrow files), on CPU (numba kernels) or CUDA (torch), and
across ``torch.distributed`` ranks. Run a program with :func:`run`; the algorithms
(:func:`pagerank`, :func:`personalized_pagerank`, :func:`bfs`, :func:`sssp`, :func:`wcc`,
:func:`scc`, :func:`kcore`, :func:`hits`, :func:`betweenness`, :func:`closeness`,
:func:`harmonic`, :func:`louvain`, :func:`leiden`, :func:`label_propagation`) are
front-ends taking the same engine options and returning a :class:`Result` (float64 values
by internal id, mapped to original ids by ``top``/``value``/``to_dict``/``to_table``, and
:class:`RunStats`); :func:`modularity` scores any labelling.
``docs/programs.md`` is the guide to writing programs.

:func:`run` and the algorithms first apply graphsys's OpenMP wait policy
(:func:`graphsys.openmp.apply_wait_policy`, unless already set; docs/architecture.md says
why).
"""

from typing import TYPE_CHECKING

from graphsys.bsp.algorithms import EXPORTS as _ALGORITHMS
from graphsys.registry import lazy_exports

if TYPE_CHECKING:  # type checkers see the names themselves
    from graphsys.bsp.algorithms import (
        BFS,
        HITS,
        SCC,
        SSSP,
        WCC,
        Betweenness,
        Closeness,
        KCore,
        LabelPropagation,
        Louvain,
        PageRank,
        betweenness,
        bfs,
        closeness,
        harmonic,
        leiden,
        louvain,
        modularity,
        personalized_pagerank,
        sssp,
        wcc,
    )
    from graphsys.bsp.algorithms.hits import hits
    from graphsys.bsp.algorithms.kcore import kcore
    from graphsys.bsp.algorithms.label_propagation import label_propagation
    from graphsys.bsp.algorithms.pagerank import pagerank
    from graphsys.bsp.algorithms.scc import scc
    from graphsys.bsp.engine import Result, run
    from graphsys.bsp.program import Combiner, Context, ModeCombiner, VertexProgram
    from graphsys.bsp.stats import RunStats, SuperstepStats

#: Public name -> the module that defines it: imported on first use (PEP 562), so a run of
#: one algorithm imports its own module, not every algorithm's
_EXPORTS = {
    **{name: module for name, module in _ALGORITHMS.items() if name != "ALGORITHMS"},
    **dict.fromkeys(("Result", "run"), "graphsys.bsp.engine"),
    **dict.fromkeys(("Combiner", "Context", "ModeCombiner", "VertexProgram"),
                    "graphsys.bsp.program"),
    **dict.fromkeys(("RunStats", "SuperstepStats"), "graphsys.bsp.stats"),
}

__all__ = [
    "BFS",
    "Betweenness",
    "Closeness",
    "HITS",
    "SCC",
    "SSSP",
    "WCC",
    "Combiner",
    "Context",
    "KCore",
    "LabelPropagation",
    "Louvain",
    "ModeCombiner",
    "PageRank",
    "Result",
    "RunStats",
    "SuperstepStats",
    "VertexProgram",
    "betweenness",
    "bfs",
    "closeness",
    "harmonic",
    "hits",
    "kcore",
    "label_propagation",
    "leiden",
    "louvain",
    "modularity",
    "pagerank",
    "personalized_pagerank",
    "run",
    "scc",
    "sssp",
    "wcc",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
