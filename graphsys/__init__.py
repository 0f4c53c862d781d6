"""graphsys: graphs too big for one GPU's memory.

Partitioned Arrow graph storage (:func:`ingest` edge files, :func:`open_graph` a graph
directory, :class:`Graph`; ``from_*``/``to_*`` convert from and to NumPy, Arrow, SciPy,
NetworkX, PyG and DGL), vertex-centric analytics (:mod:`graphsys.bsp`), graph embeddings
(:mod:`graphsys.embed`) and GNN training (:mod:`graphsys.gnn`) over the stored buckets.
"""

import os

# numba's and torch's OpenMP thread pools busy-wait by default; on a small or shared machine
# the spinning pool of one starves the other (torch's embedding step, run after numba's
# parallel ingest kernels, waits for cores that numba's idle workers spin on). So workers
# wait passively, after a short spin: GNU OpenMP's workers poll GOMP_SPINCOUNT times for
# the next parallel region before they sleep (PASSIVE alone: no spin). Back-to-back
# parallel regions, such as the iterations of an in-memory PageRank, then skip the futex
# wake-up; a much longer pause loop gets a vCPU descheduled instead, and the spin costs a
# core at most its own length per region. Both must be set before either runtime starts,
# hence here, first; an explicit setting is respected.
OPENMP_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "3000"}
#: The variables of ``OPENMP_DEFAULTS`` this import set (the environment had none): a peer
#: library timed in a child process (``scripts/bench_*.py``) runs without them, on its own
#: defaults.
OPENMP_SET_HERE = tuple(k for k in OPENMP_DEFAULTS if k not in os.environ)
os.environ.update({k: OPENMP_DEFAULTS[k] for k in OPENMP_SET_HERE})
if len(OPENMP_SET_HERE) == len(OPENMP_DEFAULTS):
    # a libgomp loaded before this import (``import torch`` first) has read neither setting
    # and spins at length between regions; it can only be throttled (graphsys.openmp)
    from graphsys import openmp

    openmp.hold_loaded_runtimes()


def peer_environment() -> dict[str, str]:
    """``os.environ`` without the OpenMP settings this import added: the environment in which
    a benchmark runs another library (PyTorch-BigGraph, DGL) in a child process, on that
    library's own defaults."""
    return {k: v for k, v in os.environ.items() if k not in OPENMP_SET_HERE}


# before any kernel module is imported: graphsys kernels cache across processes and installs
from graphsys import jit as _jit  # noqa: E402

_jit.install()
from graphsys._version import __version__  # noqa: E402
from graphsys.interop import (  # noqa: E402
    from_arrow,
    from_dgl,
    from_networkx,
    from_numpy,
    from_pyg,
    from_scipy,
    to_dgl,
    to_networkx,
    to_pyg,
    to_scipy,
)
from graphsys.storage.graph import Graph, open_graph  # noqa: E402
from graphsys.storage.ingest_files import ingest  # noqa: E402

__all__ = ["Graph", "__version__", "from_arrow", "from_dgl", "from_networkx", "from_numpy",
           "from_pyg", "from_scipy", "ingest", "open_graph", "to_dgl", "to_networkx",
           "to_pyg", "to_scipy"]
