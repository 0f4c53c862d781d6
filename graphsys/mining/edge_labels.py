"""Edge labels for pattern matching: an integer edge column read beside the symmetric rows.

The matcher (:mod:`graphsys.mining.pattern`) walks the symmetric rows of the undirected
simple view (:func:`graphsys.mining.stream.symmetric_rows`), where an adjacent pair is one
entry whatever the number of stored edges between its vertices. An edge-labelled pattern
needs, per pair, the labels those stored edges carry: :func:`label_lists` reads the
edge column batch by batch beside the edges (:meth:`~graphsys.storage.graph.Graph.edge_column`)
and gives each row entry the distinct labels of the stored edges between the row's vertex
and the entry, each with the directions it is stored in (bit 1: from the row's vertex, bit
2: back; both for an undirected edge set, which stores both). A stored edge ``u -> v`` of
label ``L`` is found in row ``u`` (bit 1) and in row ``v`` (bit 2) by a binary search of
the rows' keys ``row * N + entry`` (ascending, as the rows are); the pairs are sorted by
entry and label and merged (directions OR-ed). Self-loops, which the view drops, are
skipped.

Memory: :data:`BYTES_PER_STORED_EDGE` per stored edge at the peak, and
:data:`BYTES_PER_ENTRY` per row entry, sized against the budget first.
"""

from __future__ import annotations

import numpy as np

from graphsys.errors import ParameterError
from graphsys.storage.edge_changes import node_pair_keys
from graphsys.views.limits import check

#: The lists of a pattern without edge labels: nothing is checked.
NO_LISTS = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
#: Anonymous bytes per stored edge at the peak of :func:`label_lists`: two (entry, label,
#: direction) triples (34), their sort order (16) and the sorted copies (34).
BYTES_PER_STORED_EDGE = 84
#: Anonymous bytes per symmetric row entry: its key (8) and its list's offset (8).
BYTES_PER_ENTRY = 16


def label_column(graph, column, edge_set: str | None = None) -> str:
    """``column`` checked as an integer edge column of the edge set: a one-line
    :class:`~graphsys.errors.ParameterError` otherwise."""
    es = graph.edge_set(edge_set)
    if not isinstance(column, str):
        raise ParameterError("edge_labels", f"must name an integer edge column, got "
                                            f"{type(column).__name__}")
    names = [c.name for c in es.columns]
    if column not in names:
        raise ParameterError("edge_labels", f"edge set {es.name!r} has no edge column "
                                            f"{column!r} (edge columns: "
                                            f"{', '.join(names) or 'none'})")
    dtype = es.column(column).dtype
    if not dtype.startswith("int"):
        raise ParameterError("edge_labels", f"edge column {column!r} holds {dtype}, not "
                                            f"integer labels")
    return column


def label_lists(graph, view, ptr: np.ndarray, idx: np.ndarray, column: str,
                edge_set: str | None = None, memory_limit: int | None = None) -> tuple:
    """The edge labels of every entry of the symmetric rows ``(ptr, idx)`` of an oriented
    ``view`` (new ids): ``(lptr, lval, lbit)``, int64 (len(idx) + 1,) offsets, int64
    labels (ascending per entry) and uint8 directions (see the module's notes).

    Examples
    --------
    A path 1 -> 2 -> 3, its edges labelled 7 and 8:

    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys import views
    >>> from graphsys.mining import stream
    >>> t = pa.table({"src": [1, 2], "dst": [2, 3], "kind": [7, 8]})
    >>> g = graphsys.from_arrow(t, tempfile.mkdtemp() + "/g", edge_columns=["kind"])
    >>> view = views.view(g, "oriented")
    >>> ptr, idx, _ = stream.symmetric_rows(view, False)
    >>> lptr, lval, lbit = label_lists(g, view, ptr, idx, "kind")
    >>> lval.tolist(), lptr.tolist()
    ([7, 8, 7, 8], [0, 1, 2, 3, 4])
    """
    es = graph.edge_set(edge_set)
    label_column(graph, column, es.name)
    check(graph, es.name, f"the edge labels {column!r} of edge set {es.name!r}",
          BYTES_PER_STORED_EDGE * es.num_edges + BYTES_PER_ENTRY * (len(idx) + 1),
          memory_limit)
    n = view.num_nodes
    rank = np.empty(n, np.int64)
    rank[view.order] = np.arange(n, dtype=np.int64)
    key = node_pair_keys(np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr)), idx, n)
    qs, labs, bits = [], [], []
    for (s, d, _, _), lab in zip(graph.iter_edges(es.name), graph.edge_column(column, es.name)):
        keep = s != d
        u, v, lab = rank[s[keep]], rank[d[keep]], lab[keep].astype(np.int64)
        qs += [np.searchsorted(key, node_pair_keys(u, v, n)),
               np.searchsorted(key, node_pair_keys(v, u, n))]
        labs += [lab, lab]
        bits += [np.full(len(lab), 1, np.uint8), np.full(len(lab), 2, np.uint8)]
    del key
    if not qs:
        return np.zeros(len(idx) + 1, np.int64), NO_LISTS[1], NO_LISTS[2]
    q, lab, bit = np.concatenate(qs), np.concatenate(labs), np.concatenate(bits)
    order = np.lexsort((lab, q))
    q, lab, bit = q[order], lab[order], bit[order]
    del order
    first = np.ones(len(q), bool)
    first[1:] = (q[1:] != q[:-1]) | (lab[1:] != lab[:-1])
    starts = np.flatnonzero(first)
    bit = np.bitwise_or.reduceat(bit, starts) if len(q) else bit
    q, lab = q[starts], lab[starts]
    lptr = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(np.bincount(q, minlength=len(idx)), out=lptr[1:])
    return lptr, np.ascontiguousarray(lab), np.ascontiguousarray(bit, np.uint8)
