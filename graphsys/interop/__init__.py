"""Interop: other libraries' graphs into graphsys storage and back.

In, through the passes of :func:`graphsys.ingest` (node features, labels and masks
carried): :func:`from_numpy`, :func:`from_arrow`, :func:`from_scipy`, :func:`from_networkx`,
:func:`from_pyg`, :func:`from_dgl`. Out, nodes in ascending original-id order, a graph over
``max_edges`` refused in one line: :func:`to_scipy`, :func:`to_networkx`, :func:`to_pyg`,
:func:`to_dgl`. PyG's ``HeteroData`` and DGL's heterographs convert to and from typed
graphs. All ten are also at the top level of :mod:`graphsys`; PyG, DGL and NetworkX are
imported only when their function is called.
"""

from graphsys.interop.arrays import from_arrow, from_numpy
from graphsys.interop.dgl import from_dgl, to_dgl
from graphsys.interop.nx import from_networkx, to_networkx
from graphsys.interop.pyg import from_pyg, to_pyg
from graphsys.interop.sparse import from_scipy, to_scipy

__all__ = ["from_arrow", "from_dgl", "from_networkx", "from_numpy", "from_pyg", "from_scipy",
           "to_dgl", "to_networkx", "to_pyg", "to_scipy"]
