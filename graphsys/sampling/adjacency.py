"""Type-local adjacency (CSR) that the samplers walk, built from a stored graph.

The storage layer's :meth:`~graphsys.storage.graph.Graph.csr` numbers nodes globally across
entity types and keeps edge direction. Samplers want, per entity type, *type-local* ids
``0..num_nodes(t)-1`` and usually both directions (message passing on an undirected view,
and meta-path walks item -> user -> item over user -> item edges). :class:`Adjacency` is that
view; it holds only NumPy arrays, so it is cheap to share between sampling threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from graphsys.errors import GraphsysError
from graphsys.storage.graph import Graph


@dataclass(frozen=True)
class Adjacency:
    """CSR from ``num_rows`` row nodes to ``num_cols`` column nodes (type-local ids).

    ``indptr`` int64 (num_rows+1,); ``indices`` int64 (nnz,) ascending within each row
    (int32 when mapped from a stored adjacency index, see :func:`mapped_adjacency`);
    ``weight`` float32 (nnz,) or None (sum of the weights of merged parallel edges).
    """

    indptr: np.ndarray
    indices: np.ndarray
    num_cols: int
    weight: np.ndarray | None = None

    @property
    def num_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def degrees(self) -> np.ndarray:
        """Row degrees, int64 (num_rows,)."""
        return np.diff(self.indptr)

    def transpose(self) -> Adjacency:
        return from_coo(self.indices, np.repeat(np.arange(self.num_rows), self.degrees()),
                        self.num_cols, self.num_rows, self.weight)

    def to_scipy(self) -> sp.csr_matrix:
        data = self.weight if self.weight is not None else np.ones(self.nnz, np.float32)
        return sp.csr_matrix((data, self.indices, self.indptr),
                             shape=(self.num_rows, self.num_cols))


def from_coo(rows: np.ndarray, cols: np.ndarray, num_rows: int, num_cols: int,
             weight: np.ndarray | None = None) -> Adjacency:
    """Build an :class:`Adjacency` from edge arrays (int64 (E,)); parallel edges merge
    (weights add up)."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= num_rows or cols.min() < 0
                      or cols.max() >= num_cols):
        raise GraphsysError(f"edge endpoint outside the {num_rows} x {num_cols} node range")
    data = np.ones(len(rows), np.float32) if weight is None else np.asarray(weight, np.float32)
    m = sp.csr_matrix((data, (rows, cols)), shape=(num_rows, num_cols))
    m.sum_duplicates()
    m.sort_indices()
    return Adjacency(m.indptr.astype(np.int64), m.indices.astype(np.int64), num_cols,
                     m.data.astype(np.float32) if weight is not None else None)


def typed_edges(graph: Graph, edge_set: str | None, lhs: str, rhs: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """All edges of ``edge_set`` from type ``lhs`` to type ``rhs`` in type-local ids."""
    toff = graph.type_offsets
    lo_s, hi_s = toff[lhs], toff[lhs] + graph.num_nodes(lhs)
    lo_d, hi_d = toff[rhs], toff[rhs] + graph.num_nodes(rhs)
    ss, ds, ws = [], [], []
    has_w = True
    for s, d, _rel, w in graph.iter_edges(edge_set):
        keep = (s >= lo_s) & (s < hi_s) & (d >= lo_d) & (d < hi_d)
        ss.append(s[keep] - lo_s)
        ds.append(d[keep] - lo_d)
        if w is None:
            has_w = False
        else:
            ws.append(w[keep])
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))
    return (cat(ss, np.int64), cat(ds, np.int64),
            cat(ws, np.float32) if has_w and ws else None)


def mapped_adjacency(graph: Graph, entity_type: str | None = None, *,
                     edge_set: str | None = None, symmetric: bool = True,
                     direction: str = "in") -> Adjacency | None:
    """The view :func:`homogeneous_adjacency` builds, as zero-copy views of the graph's stored
    adjacency index (``graphsys index``), or None when the index cannot serve it.

    It can when the graph has one entity type (type-local ids are global ids) and either
    ``symmetric`` is False (``in``: the CSC index, ``out``: the CSR index) or the edge set was
    ingested ``undirected`` with ``dedupe`` (its CSR is then exactly the symmetric view with
    parallel edges merged). Memory: page cache only; nothing is copied.
    """
    if len(graph.entity_types) != 1:
        return None
    es = graph.edge_set(edge_set)
    if symmetric:
        if not (es.undirected and es.dedupe):
            return None
        kind = "csr"
    else:
        kind = "csc" if direction == "in" else "csr"
    mapped = graph.adjacency_index(es.name, kind)
    if mapped is None:
        return None
    return Adjacency(mapped.indptr, mapped.indices, graph.num_nodes(), mapped.weight)


def homogeneous_adjacency(graph: Graph, entity_type: str | None = None, *,
                          edge_set: str | None = None, symmetric: bool = True,
                          direction: str = "in") -> Adjacency:
    """Neighbour lists among the nodes of one entity type (type-local ids).

    ``symmetric``: every stored edge in both directions, parallel edges merged (an
    undirected view, as GCN/GraphSAGE on citation graphs use). Otherwise ``direction``
    ``in`` lists each node's sources (messages flow along edges), ``out`` its targets.
    Served from the stored adjacency index with no copy when it can
    (:func:`mapped_adjacency`), else built in RAM (int64 COO, then CSR).
    """
    if direction not in ("in", "out"):
        raise GraphsysError(f"direction must be 'in' or 'out', got {direction!r}")
    mapped = mapped_adjacency(graph, entity_type, edge_set=edge_set, symmetric=symmetric,
                              direction=direction)
    if mapped is not None:
        return mapped
    et = graph.entity_type(entity_type).name
    n = graph.num_nodes(et)
    s, d, w = typed_edges(graph, edge_set, et, et)
    if symmetric:
        return from_coo(np.concatenate([s, d]), np.concatenate([d, s]), n, n,
                        None if w is None else np.concatenate([w, w]))
    if direction == "in":
        return from_coo(d, s, n, n, w)
    if direction == "out":
        return from_coo(s, d, n, n, w)
    raise GraphsysError(f"direction must be 'in' or 'out', got {direction!r}")


def bipartite_adjacency(graph: Graph, ntype: str, other_type: str, *,
                        edge_set: str | None = None) -> tuple[Adjacency, Adjacency]:
    """``(fw, bw)``: ``fw`` from ``ntype`` nodes to their ``other_type`` neighbours and
    ``bw`` back, over the edges between the two types in either stored direction.

    With ``ntype == other_type`` both are the symmetric adjacency of that type.
    """
    for t in (ntype, other_type):
        graph.entity_type(t)
    if ntype == other_type:
        a = homogeneous_adjacency(graph, ntype, edge_set=edge_set, symmetric=True)
        return a, a
    n, m = graph.num_nodes(ntype), graph.num_nodes(other_type)
    s1, d1, w1 = typed_edges(graph, edge_set, ntype, other_type)
    s2, d2, w2 = typed_edges(graph, edge_set, other_type, ntype)
    if len(s1) + len(s2) == 0:
        raise GraphsysError(f"no edges between entity types {ntype!r} and {other_type!r}")
    rows = np.concatenate([s1, d2])
    cols = np.concatenate([d1, s2])
    w = None if (w1 is None and len(s1)) or (w2 is None and len(s2)) else np.concatenate(
        [x for x in (w1, w2) if x is not None])
    fw = from_coo(rows, cols, n, m, w)
    return fw, fw.transpose()
