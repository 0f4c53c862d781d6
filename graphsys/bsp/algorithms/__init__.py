"""The BSP algorithms, each a short :class:`~graphsys.bsp.program.VertexProgram`."""

from graphsys.bsp.algorithms.components import WCC, LabelPropagation, label_propagation, wcc
from graphsys.bsp.algorithms.hits import HITS, hits
from graphsys.bsp.algorithms.kcore import KCore, kcore
from graphsys.bsp.algorithms.pagerank import PageRank, pagerank, personalized_pagerank
from graphsys.bsp.algorithms.traversal import BFS, SSSP, bfs, sssp

#: CLI name -> (function, needs a source node).
ALGORITHMS = {
    "pagerank": (pagerank, False),
    "ppr": (personalized_pagerank, True),
    "bfs": (bfs, True),
    "sssp": (sssp, True),
    "wcc": (wcc, False),
    "lpa": (label_propagation, False),
    "kcore": (kcore, False),
    "hits": (hits, False),
}

__all__ = [
    "ALGORITHMS",
    "BFS",
    "HITS",
    "SSSP",
    "WCC",
    "KCore",
    "LabelPropagation",
    "PageRank",
    "bfs",
    "hits",
    "kcore",
    "label_propagation",
    "pagerank",
    "personalized_pagerank",
    "sssp",
    "wcc",
]
