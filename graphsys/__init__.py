"""graphsys: graphs too big for one GPU's memory.

Partitioned Arrow graph storage (:func:`ingest` edge files, :func:`open_graph` a graph
directory, :class:`Graph`; ``from_*``/``to_*`` convert from and to NumPy, Arrow, SciPy,
NetworkX, PyG and DGL), vertex-centric analytics (:mod:`graphsys.bsp`), graph embeddings
(:mod:`graphsys.embed`) and GNN training (:mod:`graphsys.gnn`) over the stored buckets.
"""

# before any kernel module is imported: graphsys kernels cache across processes and installs
from graphsys import jit as _jit

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
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.ingest_files import ingest

__all__ = ["Graph", "__version__", "from_arrow", "from_dgl", "from_networkx", "from_numpy",
           "from_pyg", "from_scipy", "ingest", "open_graph", "to_dgl", "to_networkx",
           "to_pyg", "to_scipy"]
