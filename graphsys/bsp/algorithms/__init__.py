"""The BSP algorithms, each a short :class:`~graphsys.bsp.program.VertexProgram` and an
:class:`~graphsys.bsp.algorithms.spec.AlgorithmSpec` registered by name in
:data:`graphsys.plugins.ALGORITHMS` (re-exported here)."""

from graphsys.bsp.algorithms.centrality import (
    Betweenness,
    Closeness,
    betweenness,
    closeness,
    harmonic,
)
from graphsys.bsp.algorithms.community import Louvain, leiden, louvain, modularity
from graphsys.bsp.algorithms.components import WCC, wcc
from graphsys.bsp.algorithms.hits import HITS, hits
from graphsys.bsp.algorithms.kcore import KCore, kcore
from graphsys.bsp.algorithms.label_propagation import LabelPropagation, label_propagation
from graphsys.bsp.algorithms.pagerank import PageRank, pagerank, personalized_pagerank
from graphsys.bsp.algorithms.scc import SCC, scc
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.algorithms.traversal import BFS, SSSP, bfs, sssp
from graphsys.plugins import ALGORITHMS

__all__ = [
    "ALGORITHMS",
    "AlgorithmSpec",
    "BFS",
    "Betweenness",
    "Closeness",
    "HITS",
    "SCC",
    "SSSP",
    "WCC",
    "KCore",
    "LabelPropagation",
    "Louvain",
    "PageRank",
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
    "scc",
    "sssp",
    "wcc",
]
