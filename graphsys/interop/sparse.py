"""SciPy sparse matrices in and out: a square matrix is an adjacency, ``A[i, j]`` the edge
``i -> j`` with weight ``A[i, j]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphsys.errors import InputError
from graphsys.interop._common import DEFAULT_MAX_EDGES, export_arrays, ingest_arrays
from graphsys.storage.graph import Graph


def from_scipy(matrix, out: str | Path, *, weighted: bool | None = None,
               node_columns: dict[str, Any] | None = None, **options) -> Graph:
    """Ingest the square sparse matrix ``matrix`` (any scipy.sparse format) into ``out``:
    one edge per stored entry, nodes ``0..n-1``. ``weighted``: keep the entries as edge
    weights (None = only when some entry is not 1). ``node_columns``/``options`` as
    :func:`graphsys.interop.from_numpy`."""
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise InputError(f"from_scipy needs a scipy.sparse matrix, got {type(matrix).__name__}")
    n, m = matrix.shape
    if n != m:
        raise InputError(f"from_scipy needs a square adjacency matrix, got shape {n}x{m}")
    coo = matrix.tocoo()
    data = np.asarray(coo.data)
    if weighted is None:
        weighted = bool(len(data)) and not np.all(data == 1)
    return ingest_arrays(coo.row.astype(np.int64), coo.col.astype(np.int64), out, num_nodes=n,
                         weight=data.astype(np.float32) if weighted else None,
                         node_columns=node_columns, metadata={"source": "scipy.sparse"},
                         options=options)


def to_scipy(graph: Graph, *, edge_set: str | None = None,
             max_edges: int | None = DEFAULT_MAX_EDGES):
    """The adjacency of ``graph`` as a ``scipy.sparse.csr_matrix`` (N, N), float32: edge
    weights, or 1 per edge (parallel edges summed); rows in ascending original-id order
    (``graph.node_ids()`` sorted). Refuses more than ``max_edges`` edges."""
    import scipy.sparse as sp

    ex = export_arrays(graph, edge_set=edge_set, max_edges=max_edges, what="to_scipy",
                       columns=False)
    w = ex.weight if ex.weight is not None else np.ones(len(ex.src), np.float32)
    a = sp.coo_matrix((w, (ex.src, ex.dst)), shape=(ex.num_nodes, ex.num_nodes))
    return a.tocsr()
