"""graphsys: graphs too big for one GPU's memory.

Partitioned Arrow graph storage (:func:`open_graph`), vertex-centric analytics, graph
embeddings and GNN training over the stored buckets.
"""

import os

# numba's and torch's OpenMP thread pools busy-wait by default; on a small or shared machine
# the spinning pool of one starves the other (a demo's embedding step measured 46 s instead
# of 4.5 s on 2 cores after numba's parallel ingest kernels had run). So workers wait
# passively, after a short spin: GNU OpenMP's workers poll GOMP_SPINCOUNT times for the next
# parallel region before they sleep (PASSIVE alone: none). Back-to-back parallel calls then
# skip the futex wake-up: luxembourg-osm's PageRank iteration (114k vertices, 2 threads)
# took 0.18-0.22 ms with no spin, 0.11-0.12 ms with 1,000-10,000, 0.18 ms with 30,000 (a
# long pause loop gets a vCPU descheduled); the spin costs a core ~0.1 ms at most per
# region. Both must be set before either runtime starts, hence here, first; an explicit
# setting is respected.
OPENMP_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "3000"}
#: The variables of ``OPENMP_DEFAULTS`` this import set (the environment had none): a peer
#: library timed in a child process (``scripts/bench_*.py``) runs without them, on its own
#: defaults.
OPENMP_SET_HERE = tuple(k for k in OPENMP_DEFAULTS if k not in os.environ)
os.environ.update({k: OPENMP_DEFAULTS[k] for k in OPENMP_SET_HERE})


def peer_environment() -> dict[str, str]:
    """``os.environ`` without the OpenMP settings this import added: the environment in which
    a benchmark runs another library (PyTorch-BigGraph, DGL) in a child process, on that
    library's own defaults."""
    return {k: v for k, v in os.environ.items() if k not in OPENMP_SET_HERE}


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
