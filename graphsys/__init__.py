"""graphsys: graphs too big for one GPU's memory.

Partitioned Arrow graph storage (:func:`ingest` edge files, :func:`open_graph` a graph
directory, :class:`Graph`; ``from_*``/``to_*`` convert from and to NumPy, Arrow, SciPy,
NetworkX, PyG and DGL), vertex-centric analytics (:mod:`graphsys.bsp`), graph embeddings
(:mod:`graphsys.embed`) and GNN training (:mod:`graphsys.gnn`) over the stored buckets;
:class:`Execution`, the options of how any engine's call runs.

The names are imported on first use (PEP 562), so a command or module that needs one part
(``graphsys ingest``: storage only) does not pay for the others' imports (SciPy, NetworkX).
"""

from typing import TYPE_CHECKING

# before any kernel module is imported: graphsys kernels cache across processes and
# installs (numba itself is imported by the first module that needs it)
from graphsys import jit as _jit

_jit.install_on_import()
from graphsys._version import __version__  # noqa: E402

if TYPE_CHECKING:  # type checkers see the names themselves
    from graphsys.execution import Execution
    from graphsys.interop import (
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

#: Public name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(("from_arrow", "from_numpy"), "graphsys.interop.arrays"),
    **dict.fromkeys(("from_dgl", "to_dgl"), "graphsys.interop.dgl"),
    **dict.fromkeys(("from_networkx", "to_networkx"), "graphsys.interop.nx"),
    **dict.fromkeys(("from_pyg", "to_pyg"), "graphsys.interop.pyg"),
    **dict.fromkeys(("from_scipy", "to_scipy"), "graphsys.interop.sparse"),
    **dict.fromkeys(("Graph", "open_graph"), "graphsys.storage.graph"),
    "ingest": "graphsys.storage.ingest_files",
    "Execution": "graphsys.execution",
}

__all__ = ["Execution", "Graph", "__version__", "from_arrow", "from_dgl", "from_networkx",
           "from_numpy", "from_pyg", "from_scipy", "ingest", "open_graph", "to_dgl",
           "to_networkx", "to_pyg", "to_scipy"]


from graphsys.registry import lazy_exports  # noqa: E402

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
