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
# ...after a short spin: GNU OpenMP's workers (numba's and torch's) poll this many times for
# the next parallel region before they sleep (PASSIVE alone: none). Back-to-back parallel
# calls then skip the futex wake-up: luxembourg-osm's PageRank iteration (114k vertices,
# 2 threads) took 0.18-0.22 ms with no spin, 0.11-0.12 ms with 1,000-10,000, 0.18 ms with
# 30,000 (a long pause loop gets a vCPU descheduled), and the spin is ~0.1 ms of a core
# at most per region, short of what made two busy-waiting pools starve each other.
os.environ.setdefault("GOMP_SPINCOUNT", "3000")

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
