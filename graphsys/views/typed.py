"""The ``typed`` view: an edge set's out and in rows per relation type.

An edge set of one relation is the ``out`` and ``in`` views' rows of the relation's source
and destination types (mapped from the ``csr`` / ``csc`` indexes where the graph has them,
else the one build of :func:`graphsys.storage.csr.build_rows`). Several relations are built
here from one pass over the edges: grouped by relation, then each group's pairs made rows
both ways (:func:`graphsys.views.rows.from_pairs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphsys.storage.csr import CSR
from graphsys.views.rows import from_pairs

#: Anonymous bytes per stored edge at the peak of a typed build of several relations: the
#: edges' int64 ends and relations (24), their order by relation (8), one relation's ends
#: (16), their order in rows (8) and reordered copy (8), and both ways' ids kept (8, int32).
TYPED_BYTES_PER_EDGE = 72


@dataclass(frozen=True)
class Typed:
    """Per relation type of the graph (``graph.relation_types`` order) its out rows
    ``csr[k]`` (rows: the relation's source type's type-local ids; neighbours: global ids
    of its destination nodes) and in rows ``csc[k]`` (rows: type-local ids of the
    destination type; neighbours: global ids of the sources). Each row's neighbours
    ascend; parallel edges are kept.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> edges = pa.table({"src": [0, 0, 1], "dst": [1, 2, 2], "rel": ["a", "b", "b"]})
    >>> out = tempfile.mkdtemp() + "/kg"
    >>> _ = ingest_sources([EdgeSource(table=edges, src_col="src", dst_col="dst",
    ...                                rel_col="rel")], out, IngestOptions())
    >>> g = graphsys.open_graph(out)
    >>> [r.name for r in g.relation_types]
    ['a', 'b']
    >>> t = g.view("typed")
    >>> t.csc[1].indptr.tolist(), t.csc[1].indices.tolist()  # b's in-neighbours: 2's
    ([0, 0, 0, 2], [0, 1])
    >>> t.csr[0].indptr.tolist(), t.csr[0].indices.tolist()  # a's out-neighbours: 0's
    ([0, 1, 1, 1], [1])
    """

    csr: tuple[CSR, ...]
    csc: tuple[CSR, ...]

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays (a view of one relation slices the ``out`` and ``in`` rows:
        their bytes)."""
        return sum(a.nbytes for c in self.csr + self.csc for a in (c.indptr, c.indices))


def sliced(rows: CSR, lo: int, n: int) -> CSR:
    """Rows ``lo .. lo + n - 1`` of ``rows`` as rows ``0 .. n - 1`` (the ids a view
    over global ids gives one entity type): its neighbours sliced, its offsets copied
    shifted when they do not start at 0."""
    ptr = rows.indptr[lo:lo + n + 1]
    first, last = int(ptr[0]), int(ptr[-1])
    return CSR(ptr - first if first else ptr, rows.indices[first:last])


def build_typed(graph, edge_set: str) -> Typed:
    """Both ways' rows of each relation of ``edge_set`` (one with a relation column),
    from one pass over its edges (:class:`Typed`)."""
    toff, rts = graph.type_offsets, graph.relation_types
    parts = list(graph.iter_edges(edge_set))
    s, d, rel = ((np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64))
                 for k in range(3))
    order = np.argsort(rel, kind="stable")
    bounds = np.searchsorted(rel[order], np.arange(len(rts) + 1))
    dtype = np.int32 if graph.num_nodes() < 2**31 else np.int64
    csr, csc = [], []
    for k, r in enumerate(rts):
        pick = order[bounds[k]:bounds[k + 1]]
        ss, dd = s[pick], d[pick]
        for into, n, rows, cols in ((csr, graph.num_nodes(r.lhs), ss - toff[r.lhs], dd),
                                    (csc, graph.num_nodes(r.rhs), dd - toff[r.rhs], ss)):
            indptr, cols = from_pairs(n, rows, cols, by=(cols,))
            into.append(CSR(indptr, cols.astype(dtype)))
    return Typed(tuple(csr), tuple(csc))
