"""graphsys: graphs too big for one GPU's memory.

Partitioned Arrow graph storage (:func:`open_graph`), vertex-centric analytics, graph
embeddings and GNN training over the stored buckets.
"""

from graphsys.storage.graph import Graph, open_graph

__version__ = "0.1.0"
__all__ = ["Graph", "open_graph", "__version__"]
