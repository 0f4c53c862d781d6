"""graphsys: graphs too big for one GPU's memory.

Partitioned Arrow graph storage (:func:`open_graph`), vertex-centric analytics, graph
embeddings and GNN training over the stored buckets.
"""

import os

# numba's and torch's OpenMP thread pools busy-wait by default; on a small or shared machine
# the spinning pool of one starves the other (a demo's embedding step measured 46 s instead
# of 4.5 s on 2 cores after numba's parallel ingest kernels had run). Passive waiting must be
# set before either runtime starts, hence here, first. An explicit setting is respected.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from graphsys.interop import (  # noqa: E402
    from_arrow,
    from_dgl,
    from_networkx,
    from_numpy,
    from_pyg,
    from_scipy,
)
from graphsys.storage.graph import Graph, open_graph  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Graph", "from_arrow", "from_dgl", "from_networkx", "from_numpy", "from_pyg",
           "from_scipy", "open_graph", "__version__"]
