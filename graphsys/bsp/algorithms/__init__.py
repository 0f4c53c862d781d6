"""The BSP algorithms, each a short :class:`~graphsys.bsp.program.VertexProgram` and an
:class:`~graphsys.bsp.algorithms.spec.AlgorithmSpec` registered by name in
:data:`graphsys.plugins.ALGORITHMS` (re-exported here).

The names are imported on first use (PEP 562): a run of one algorithm (``graphsys run
wcc``, :data:`~graphsys.plugins.ALGORITHMS`' lazy entries) imports its own module, not
every algorithm's. The functions named as their modules (``pagerank``, ``hits``,
``kcore``, ``scc``, ``label_propagation``) are :mod:`graphsys.bsp`'s (``bsp.pagerank``):
here those names are the modules.
"""

from graphsys.registry import lazy_exports

#: Public name -> the module that defines it (shared with :mod:`graphsys.bsp`)
EXPORTS = {
    **dict.fromkeys(("Betweenness", "Closeness", "betweenness", "closeness", "harmonic"),
                    "graphsys.bsp.algorithms.centrality"),
    **dict.fromkeys(("Louvain", "leiden", "louvain", "modularity"),
                    "graphsys.bsp.algorithms.community"),
    **dict.fromkeys(("WCC", "wcc"), "graphsys.bsp.algorithms.components"),
    **dict.fromkeys(("HITS", "hits"), "graphsys.bsp.algorithms.hits"),
    **dict.fromkeys(("KCore", "kcore"), "graphsys.bsp.algorithms.kcore"),
    **dict.fromkeys(("LabelPropagation", "label_propagation"),
                    "graphsys.bsp.algorithms.label_propagation"),
    **dict.fromkeys(("PageRank", "pagerank", "personalized_pagerank"),
                    "graphsys.bsp.algorithms.pagerank"),
    **dict.fromkeys(("SCC", "scc"), "graphsys.bsp.algorithms.scc"),
    "AlgorithmSpec": "graphsys.bsp.algorithms.spec",
    **dict.fromkeys(("BFS", "SSSP", "bfs", "sssp"), "graphsys.bsp.algorithms.traversal"),
    "ALGORITHMS": "graphsys.plugins",
}
#: The functions named as their modules: exported by graphsys.bsp only
_MODULE_NAMED = ("hits", "kcore", "label_propagation", "pagerank", "scc")

__all__ = ["ALGORITHMS", "AlgorithmSpec", "BFS", "Betweenness", "Closeness", "HITS", "KCore",
           "LabelPropagation", "Louvain", "PageRank", "SCC", "SSSP", "WCC", "betweenness",
           "bfs", "closeness", "harmonic", "leiden", "louvain", "modularity",
           "personalized_pagerank", "sssp", "wcc"]

__getattr__, __dir__ = lazy_exports(
    __name__, globals(), {k: v for k, v in EXPORTS.items() if k not in _MODULE_NAMED})
