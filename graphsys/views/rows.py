"""The rows an engine owns for one run (:func:`rows`), and rows of pairs it holds in
arrays (:func:`from_pairs`: a change's edges, a NetworkX graph's, a checkpoint's events).
"""

from __future__ import annotations

import numpy as np

from graphsys.storage.csr import build_rows

#: The stored index of each kind of rows.
INDEX = {"out": "csr", "in": "csc", "csr": "csr", "csc": "csc"}


def from_pairs(n: int, rows: np.ndarray, *columns: np.ndarray | None, by: tuple = ()
               ) -> tuple:
    """Rows of pairs held in arrays: ``indptr`` int64 (n+1,) of ``rows`` (ids in
    ``0..n-1``), then each of ``columns`` reordered row by row (stably; within a row by the
    keys ``by``, last key first as :func:`numpy.lexsort` reads them); a column that is None
    or empty is returned as it is. Parallel pairs are kept.

    Examples
    --------
    >>> dst = np.array([1, 2, 0])
    >>> ptr, nbr = from_pairs(3, np.array([2, 0, 2]), dst, by=(dst,))
    >>> ptr.tolist(), nbr.tolist()
    ([0, 1, 1, 3], [2, 0, 1])
    """
    order = np.lexsort((*by, rows)) if by else np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return (indptr, *(c if c is None or not len(c) else c[order] for c in columns))


def rows(graph, edge_set: str, kind: str, weights: bool
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(indptr, indices, weight)`` of ``kind`` for one run of an engine: the graph's
    mapped index where it has one (read-only, no edge read), else
    :func:`~graphsys.storage.csr.build_rows` (the caller's own arrays, kept nowhere: it may
    write into them)."""
    built = graph.adjacency_index(edge_set, INDEX[kind]) or build_rows(graph, edge_set, kind,
                                                                       weights)
    return built.indptr, built.indices, built.weight if weights else None
