"""The BSP algorithms, each a short :class:`~graphsys.bsp.program.VertexProgram` and an
:class:`~graphsys.bsp.algorithms.spec.AlgorithmSpec` registered by name in
:data:`graphsys.plugins.ALGORITHMS` (re-exported here)."""

from graphsys.bsp.algorithms.components import WCC, LabelPropagation, label_propagation, wcc
from graphsys.bsp.algorithms.hits import HITS, hits
from graphsys.bsp.algorithms.kcore import KCore, kcore
from graphsys.bsp.algorithms.pagerank import PageRank, pagerank, personalized_pagerank
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.algorithms.traversal import BFS, SSSP, bfs, sssp
from graphsys.plugins import ALGORITHMS

__all__ = [
    "ALGORITHMS",
    "AlgorithmSpec",
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
