"""The one in-RAM build of an edge set's ``out`` (CSR) or ``in`` (CSC) rows of a graph of
one entity type, and the rows an engine owns for one run.

:func:`build_rows` reads every bucket once: the rows of one partition are contiguous ids
and their edges lie in that partition's buckets (``(r, *)`` for the out rows, ``(*, r)`` for
the in rows), read as zero-copy batch views, counted into ``indptr``, then scattered while
their pages are in cache. Neighbour ids are int32 where every node id fits (int64 from
2**31 nodes), as a stored index holds them, so mapped and built rows reach one compiled
signature of each kernel. :func:`graphsys.views.view` keeps what it builds in the graph's
cache; :func:`rows` hands an engine (the BSP engine renumbers them in place) its own.
:func:`from_pairs` makes rows of pairs an engine holds in arrays (a change's edges, a
NetworkX graph's, a checkpoint's events).
"""

from __future__ import annotations

import numpy as np

from graphsys.kernels.arrays import read_only
from graphsys.storage.kernels import count_into, csr_fill

#: The stored index of each kind of rows.
INDEX = {"out": "csr", "in": "csc", "csr": "csr", "csc": "csc"}


def build_rows(graph, edge_set: str, kind: str, weights: bool
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``kind`` (``out``/``csr``: out-neighbours, ``in``/``csc``: in-neighbours) of a
    one-entity-type graph over global ids, built reading every bucket once, rows in the
    order :meth:`Graph.csr <graphsys.storage.graph.Graph.csr>` gives. Returns ``indptr``
    int64 (N+1,), ``indices`` int32 (E,) (int64 from 2**31 nodes), ``weight`` float32 (E,)
    or None (``weights`` False or an unweighted edge set)."""
    es = graph.edge_set(edge_set)
    n, p, m = graph.num_nodes(), graph.num_partitions, es.num_edges
    offsets = graph.partition_offsets()
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(m, np.int32 if n < 2**31 else np.int64)
    weight = np.empty(m, np.float32) if weights and es.has_weight else None
    no_w = np.zeros(0, np.float32)
    no_perm = np.zeros(0, np.int64)
    out = INDEX[kind] == "csr"
    for r in range(p):
        pairs = [(r, j) for j in range(p)] if out else [(i, r) for i in range(p)]
        group = [(b, list(b.batches())) for b in graph.buckets(pairs, es.name)]
        lo, hi = int(offsets[r]), int(offsets[r + 1])
        counts = indptr[lo + 1:hi + 1]
        for _, batches in group:
            for eb in batches:
                count_into(eb.src if out else eb.dst, counts)
        np.cumsum(counts, out=counts)
        counts += indptr[lo]
        cursor = indptr[lo:hi].copy()
        for b, batches in group:
            col_base = int(offsets[b.j if out else b.i])
            for eb in batches:
                src, dst = (eb.src, eb.dst) if out else (eb.dst, eb.src)
                # read-only, as a stored batch's weights are: one signature of csr_fill
                (w_in,) = read_only(eb.weight if weight is not None else no_w)
                csr_fill(src, dst, col_base, cursor, indices, w_in,
                         weight if weight is not None else no_w, no_perm, 0)
    return indptr, indices, weight


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
    mapped index where it has one (read-only, no edge read), else :func:`build_rows` (the
    caller's own arrays, kept nowhere: it may write into them)."""
    mapped = graph.adjacency_index(edge_set, INDEX[kind])
    if mapped is not None:
        return mapped.indptr, mapped.indices, mapped.weight if weights else None
    return build_rows(graph, edge_set, kind, weights)
