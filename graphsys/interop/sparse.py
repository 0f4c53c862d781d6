"""SciPy sparse matrices in and out: a square matrix is an adjacency, ``A[i, j]`` the edge
``i -> j`` with weight ``A[i, j]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphsys.errors import InputError, check_flag
from graphsys.interop._common import DEFAULT_MAX_EDGES, document, export_arrays, ingest_arrays
from graphsys.storage.graph import Graph


@document
def from_scipy(matrix, out: str | Path, *, weighted: bool | None = None,
               node_columns: dict[str, Any] | None = None, **options) -> Graph:
    """Ingest a square SciPy sparse adjacency matrix into a graph directory.

    One edge ``i -> j`` per stored entry ``A[i, j]``; the nodes are ``0..n-1``.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
        Square (n, n), any sparse format.
    out : str or Path
        The graph directory to create.
    weighted : bool, optional
        Keep the entries as edge weights (None: only when some entry is not 1).
    node_columns : dict of str to array-like, optional
        As for :func:`from_numpy`.
    %(ingest)s

    Raises
    ------
    InputError
        Not a sparse matrix, or not square.

    See Also
    --------
    to_scipy
    graphsys.from_numpy : The edge list ingest underneath, and what it costs (Notes).

    Examples
    --------
    >>> import tempfile, numpy as np, scipy.sparse as sp, graphsys
    >>> a = sp.csr_matrix(np.array([[0, 2, 0], [0, 0, 1], [1, 0, 0]], dtype=np.float32))
    >>> g = graphsys.from_scipy(a, tempfile.mkdtemp() + "/g")
    >>> g.num_edges(), g.edge_set().has_weight
    (3, True)
    """
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise InputError(f"from_scipy needs a scipy.sparse matrix, got {type(matrix).__name__}")
    n, m = matrix.shape
    if n != m:
        raise InputError(f"from_scipy needs a square adjacency matrix, got shape {n}x{m}")
    coo = matrix.tocoo()
    data = np.asarray(coo.data)
    if np.iscomplexobj(data):
        raise InputError(f"from_scipy: the matrix holds complex values ({data.dtype}); edge "
                         f"weights are real: pass matrix.real or abs(matrix) explicitly")
    if weighted is None:
        weighted = bool(len(data)) and not np.all(data == 1)
    weighted = check_flag("weighted", weighted)  # "no" kept the weights
    return ingest_arrays(coo.row.astype(np.int64), coo.col.astype(np.int64), out, num_nodes=n,
                         weight=data.astype(np.float64) if weighted else None,
                         node_columns=node_columns, metadata={"source": "scipy.sparse"},
                         options=options)


def to_scipy(graph: Graph, *, edge_set: str | None = None,
             max_edges: int | None = DEFAULT_MAX_EDGES):
    """The adjacency matrix of a stored graph as a ``scipy.sparse.csr_matrix``.

    Rows and columns are nodes in ascending original-id order (``0..N-1`` for a graph built
    by a ``from_*`` function, whatever its partitioning).

    Parameters
    ----------
    graph : Graph
        A graph with one entity type.
    edge_set : str, optional
        The edge set (default: the only one, or ``default``/``train``).
    max_edges : int or None, default 100_000_000
        Refuse, in one line, a graph with more edges (None: no limit).

    Returns
    -------
    scipy.sparse.csr_matrix
        (N, N) float32: the edge weights, or 1 per edge (parallel edges summed).

    Raises
    ------
    GraphsysError
        More than ``max_edges`` edges, or several entity types.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tempfile.mkdtemp() + "/g",
    ...                         weight=np.array([0.5, 1.0, 2.0]))
    >>> graphsys.to_scipy(g).toarray().tolist()
    [[0.0, 0.5, 0.0], [0.0, 0.0, 1.0], [2.0, 0.0, 0.0]]
    >>> graphsys.to_scipy(g, max_edges=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    graphsys.errors.GraphsysError: to_scipy: ... has 3 edges, more than max_edges=2 ...
    """
    import scipy.sparse as sp

    ex = export_arrays(graph, edge_set=edge_set, max_edges=max_edges, what="to_scipy",
                       columns=False)
    w = ex.weight if ex.weight is not None else np.ones(len(ex.src), np.float32)
    a = sp.coo_matrix((w, (ex.src, ex.dst)), shape=(ex.num_nodes, ex.num_nodes))
    return a.tocsr()
