"""Type-local adjacency (CSR) that the samplers walk, built from a stored graph.

The storage layer's :meth:`~graphsys.storage.graph.Graph.csr` numbers nodes globally across
entity types and keeps edge direction. Samplers want, per entity type, *type-local* ids
``0..num_nodes(t)-1`` and usually both directions (message passing on an undirected view,
and meta-path walks item -> user -> item over user -> item edges). :class:`Adjacency` is that
view; it holds only NumPy arrays, so it is cheap to share between sampling threads.

A view the graph's stored adjacency index serves is mapped, not built (page cache only). A
view built in RAM is first sized by :func:`ram_build_bytes` (the arrays the build holds at
once, per stored edge) and refused in one line naming the command that builds the index when
that exceeds the budget: ``memory_limit`` if given, else the RAM the kernel reports available
(``MemAvailable``), so a graph too large for this machine is refused, never killed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from graphsys import views
from graphsys.errors import GraphsysError, check_flag
from graphsys.storage.graph import Graph

#: Anonymous bytes per stored edge alive at once at the peak of building the symmetric view
#: in RAM (inside scipy's COO to CSR conversion): int64 endpoints (16) and their both-way
#: concatenation (32), float32 ones (8), scipy's int32 COO indices (16) and its CSR's int32
#: indices and float32 data (16).
SYMMETRIC_BYTES_PER_EDGE = 88
#: The same for one direction (``in``/``out``): endpoints (16), ones (4), COO (8), CSR (8),
#: rounded up for the int64 copy of the result's indices made while they are alive.
DIRECTED_BYTES_PER_EDGE = 40
#: Anonymous bytes per node of a build in RAM: offsets (int32 and int64) and degrees.
BUILD_BYTES_PER_NODE = 24
#: Neighbour entries read per step of :attr:`Adjacency.source_degrees`
DEGREE_CHUNK = 1 << 22


@dataclass(frozen=True)
class Adjacency:
    """CSR from ``num_rows`` row nodes to ``num_cols`` column nodes (type-local ids).

    ``indptr`` int64 (num_rows+1,); ``indices`` int64 (nnz,) ascending within each row
    (int32 when mapped from a stored adjacency index, see :func:`mapped_adjacency`);
    ``weight`` float32 (nnz,) or None (sum of the weights of merged parallel edges).

    Examples
    --------
    The symmetric view of a stored graph (1 -> 2 stored twice, merged):

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.sampling import homogeneous_adjacency
    >>> g = graphsys.from_numpy(np.array([0, 1, 1]), np.array([1, 2, 2]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> a = homogeneous_adjacency(g)
    >>> a.num_rows, a.num_cols, a.nnz, a.degrees().tolist()
    (3, 3, 4, [1, 2, 1])
    >>> a.indices[a.indptr[1]:a.indptr[2]].tolist()  # the neighbours of node 1
    [0, 2]
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

    @cached_property
    def source_degrees(self) -> np.ndarray:
        """float32 (num_cols,): how many rows list each column node, its own row left out
        (a node's out-degree without self-loops, when row ``v`` lists the sources of the
        edges into ``v``); computed once, on first use, reading the (possibly mapped)
        indices ``DEGREE_CHUNK`` entries at a time."""
        out = np.zeros(self.num_cols, np.int64)
        for lo in range(0, self.nnz, DEGREE_CHUNK):
            cols = np.asarray(self.indices[lo:lo + DEGREE_CHUNK], np.int64)
            rows = np.searchsorted(self.indptr, np.arange(lo, lo + len(cols)), "right") - 1
            out += np.bincount(cols[cols != rows], minlength=self.num_cols)
        return out.astype(np.float32)

    def transpose(self) -> Adjacency:
        return from_coo(self.indices, np.repeat(np.arange(self.num_rows), self.degrees()),
                        self.num_cols, self.num_rows, self.weight)

    def to_scipy(self) -> sp.csr_matrix:
        data = self.weight if self.weight is not None else np.ones(self.nnz, np.float32)
        return sp.csr_matrix((data, self.indices, self.indptr),
                             shape=(self.num_rows, self.num_cols))


def from_coo(rows: np.ndarray, cols: np.ndarray, num_rows: int, num_cols: int,
             weight: np.ndarray | None = None, *, merge: bool = True) -> Adjacency:
    """Build an :class:`Adjacency` from edge arrays; parallel edges merge (weights add up),
    or with ``merge=False`` each stays an entry of its row (side by side, the row ascending).

    Parameters
    ----------
    rows, cols : array-like of int
        Edge endpoints (E,): row node ``rows[k]`` lists column node ``cols[k]``.
    num_rows, num_cols : int
        Row ids are ``0..num_rows-1``, column ids ``0..num_cols-1``.
    weight : array-like of float, optional
        Edge weights (E,); without them the result has ``weight`` None.
    merge : bool, default True
        Merge parallel edges into one entry (summing their weights).

    Returns
    -------
    Adjacency
        int64 ``indptr`` and ``indices``, each row's columns ascending.

    Raises
    ------
    GraphsysError
        An endpoint outside its node range.

    Examples
    --------
    >>> a = from_coo([0, 0, 1], [1, 1, 0], 2, 2, weight=[1.0, 2.0, 3.0])
    >>> a.indptr.tolist(), a.indices.tolist(), a.weight.tolist()
    ([0, 1, 2], [1, 0], [3.0, 3.0])
    >>> from_coo([0, 0, 1], [1, 1, 0], 2, 2, merge=False).indices.tolist()
    [1, 1, 0]
    >>> from_coo([2], [0], 2, 2)
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: edge endpoint outside the 2 x 2 node range
    """
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= num_rows or cols.min() < 0
                      or cols.max() >= num_cols):
        raise GraphsysError(f"edge endpoint outside the {num_rows} x {num_cols} node range")
    if not merge:
        order = np.lexsort((cols, rows))
        indptr = np.zeros(num_rows + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=num_rows), out=indptr[1:])
        return Adjacency(indptr, cols[order], num_cols, None if weight is None else
                         np.asarray(weight, np.float32)[order])
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


def ram_build_bytes(graph: Graph, edge_set: str | None, *, symmetric: bool) -> int:
    """Anonymous bytes building an adjacency of an edge set in RAM needs at its peak.

    :data:`SYMMETRIC_BYTES_PER_EDGE` (``symmetric``) or :data:`DIRECTED_BYTES_PER_EDGE`
    per stored edge plus :data:`BUILD_BYTES_PER_NODE` per node; weights add their float32
    copies. ``edge_set`` None: the default one; ``symmetric``: both directions of every
    edge (the undirected view) rather than one.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> need = ram_build_bytes(g, None, symmetric=True)  # 2 edges, 3 nodes
    >>> need == 2 * SYMMETRIC_BYTES_PER_EDGE + 3 * BUILD_BYTES_PER_NODE
    True
    """
    es = graph.edge_set(edge_set)
    per_edge = SYMMETRIC_BYTES_PER_EDGE if symmetric else DIRECTED_BYTES_PER_EDGE
    if es.has_weight:
        per_edge += 16 if symmetric else 8
    return per_edge * es.num_edges + BUILD_BYTES_PER_NODE * graph.num_nodes()


def mapped_adjacency(graph: Graph, entity_type: str | None = None, *,
                     edge_set: str | None = None, symmetric: bool = True,
                     direction: str = "in") -> Adjacency | None:
    """The view :func:`homogeneous_adjacency` builds, as zero-copy views of the graph's stored
    adjacency index (``graphsys index``), or None when the index cannot serve it.

    It can when the graph has one entity type (type-local ids are global ids) and either
    ``symmetric`` is False (``in``: the CSC index, ``out``: the CSR index) or ``symmetric``
    and the edge set has a ``sym`` index (``graphsys index`` of the undirected view) or was
    ingested ``undirected`` with ``dedupe`` (its CSR is then exactly the symmetric view with
    parallel edges merged; its weights doubled, a copy, as the ``sym`` view sums both
    directions: :func:`graphsys.views.mapped_sym`). Memory: page cache only; nothing else
    is copied.

    Parameters
    ----------
    graph : Graph
        An opened graph.
    entity_type : str, optional
        The entity type (the graph's only one when it can serve it).
    edge_set : str, optional
        The edge set (default: the default one).
    symmetric : bool, default True
        The undirected view rather than one direction.
    direction : {"in", "out"}, default "in"
        With ``symmetric`` False: each node's sources (CSC) or targets (CSR).

    Returns
    -------
    Adjacency or None
        The stored index's arrays (``indices`` int32), or None when no index serves it.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.storage.adjacency_index import build_index
    >>> g = graphsys.from_numpy(np.array([0, 1, 1]), np.array([1, 2, 2]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> mapped_adjacency(g, symmetric=False) is None  # no index yet
    True
    >>> _ = build_index(g, ("csc",))
    >>> a = mapped_adjacency(g, symmetric=False)  # in-neighbours, parallel edges kept
    >>> a.indptr.tolist(), a.indices.tolist(), a.indices.dtype
    ([0, 0, 1, 3], [0, 1, 1], dtype('int32'))
    >>> mapped_adjacency(g) is None  # the CSC does not hold the symmetric view
    True
    """
    if len(graph.entity_types) != 1:
        return None
    es = graph.edge_set(edge_set)
    mapped = views.mapped_sym(graph, es.name, True) if symmetric else \
        graph.adjacency_index(es.name, "csc" if direction == "in" else "csr")
    return None if mapped is None else Adjacency(mapped.indptr, mapped.indices,
                                                 graph.num_nodes(), mapped.weight)


def homogeneous_adjacency(graph: Graph, entity_type: str | None = None, *,
                          edge_set: str | None = None, symmetric: bool = True,
                          direction: str = "in", memory_limit: int | None = None
                          ) -> Adjacency:
    """Neighbour lists among the nodes of one entity type (type-local ids).

    ``symmetric``: every stored edge in both directions, parallel edges merged (an
    undirected view, as GCN/GraphSAGE on citation graphs use). Otherwise ``direction``
    ``in`` lists each node's sources (messages flow along edges), ``out`` its targets, one
    entry per stored edge (parallel edges kept, as the stored CSC/CSR index keeps them).
    Served from the stored adjacency index with no copy when it can
    (:func:`mapped_adjacency`); else, on a graph of one entity type, the symmetric view is
    the view layer's ``sym`` rows (:func:`graphsys.views.view`: built once per opened graph
    and kept); else built in RAM (int64 COO, then CSR). A build that needs more than
    ``memory_limit`` bytes (None: the RAM available) is refused naming the command that
    builds the index (:func:`graphsys.views.check`).

    Parameters
    ----------
    graph : Graph
        An opened graph.
    entity_type : str, optional
        The entity type (default: the first one).
    edge_set : str, optional
        The edge set (default: the default one).
    symmetric : bool, default True
        Both directions of every edge, parallel edges merged.
    direction : {"in", "out"}, default "in"
        With ``symmetric`` False: list each node's sources or its targets.
    memory_limit : int, optional
        Bytes a build in RAM may use (default: the RAM available).

    Returns
    -------
    Adjacency
        Square over the type's nodes, type-local ids.

    Raises
    ------
    GraphsysError
        ``direction`` not ``in``/``out``, or a build over ``memory_limit``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1, 1]), np.array([1, 2, 2]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> s = homogeneous_adjacency(g)  # 1 - 2 stored twice, merged
    >>> s.indptr.tolist(), s.indices.tolist()
    ([0, 1, 3, 4], [1, 0, 2, 1])
    >>> homogeneous_adjacency(g, symmetric=False).indices.tolist()  # sources, both 1 -> 2 kept
    [0, 1, 1]
    >>> homogeneous_adjacency(g, symmetric=False, direction="out").indptr.tolist()
    [0, 1, 3, 3]
    """
    if direction not in ("in", "out"):
        raise GraphsysError(f"direction must be 'in' or 'out', got {direction!r}")
    symmetric = check_flag("symmetric", symmetric)  # "no" built the undirected view
    mapped = mapped_adjacency(graph, entity_type, edge_set=edge_set, symmetric=symmetric,
                              direction=direction)
    if mapped is not None:
        return mapped
    if symmetric and len(graph.entity_types) == 1:  # type-local ids are global ids
        rows = views.view(graph, "sym", edge_set=edge_set, memory_limit=memory_limit,
                          weights=True)
        return Adjacency(rows.indptr, rows.indices, graph.num_nodes(), rows.weight)
    kind = "sym" if symmetric else ("csc" if direction == "in" else "csr")
    view = "the symmetric adjacency" if symmetric else f"the {direction}-neighbour adjacency"
    views.check(graph, edge_set, f"{view} of edge set {graph.edge_set(edge_set).name!r}",
          ram_build_bytes(graph, edge_set, symmetric=symmetric), memory_limit,
          (kind,) if len(graph.entity_types) == 1 else None)
    et = graph.entity_type(entity_type).name
    n = graph.num_nodes(et)
    s, d, w = typed_edges(graph, edge_set, et, et)
    if symmetric:
        return from_coo(np.concatenate([s, d]), np.concatenate([d, s]), n, n,
                        None if w is None else np.concatenate([w, w]))
    return (from_coo(d, s, n, n, w, merge=False) if direction == "in" else
            from_coo(s, d, n, n, w, merge=False))


def _one_way_kinds(graph: Graph, edge_set: str, ntype: str, other_type: str
                   ) -> tuple[str, str] | None:
    """The index kinds ``(fw, bw)`` that serve the meta-path pair of two distinct types
    (:func:`mapped_bipartite`), or None when edges between them go both ways or others
    share their rows."""
    if ntype == other_type:
        return None
    rels = graph.relation_types if graph.edge_set(edge_set).has_rel else \
        graph.relation_types[:1]
    pairs = {(r.lhs, r.rhs) for r in rels}

    def one_way(a: str, b: str) -> bool:  # every edge out of a goes to b, every edge into
        return ((a, b) in pairs and (b, a) not in pairs  # b comes from a
                and all(r == b for lhs, r in pairs if lhs == a)
                and all(lhs == a for lhs, r in pairs if r == b))

    if one_way(ntype, other_type):
        return ("csr", "csc")
    if one_way(other_type, ntype):
        return ("csc", "csr")
    return None


def mapped_bipartite(graph: Graph, ntype: str, other_type: str, *,
                     edge_set: str | None = None) -> tuple[Adjacency, Adjacency, int] | None:
    """The meta-path pair of :func:`bipartite_adjacency`, mapped from the CSR/CSC indexes.

    Zero-copy views of the stored indexes over *global* ids: both are square over all the
    graph's nodes, and only the rows of the two types are walked. The indexes can serve it
    when every edge of the edge set that leaves or enters the two types' rows
    goes one way between them: with all ``ntype -> other_type`` relations (and no other
    relation out of ``ntype`` or into ``other_type``), ``fw`` is the CSR and ``bw`` the CSC;
    the other way round, ``fw`` is the CSC and ``bw`` the CSR. Parallel edges stay (a
    neighbour is walked to in proportion to its stored edges), as in the RAM build.
    Returns ``(fw, bw, base)``, ``base`` the global id of ``ntype`` node 0, or None when
    the indexes cannot serve it (missing, or edges between the types stored both ways).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> mapped_bipartite(g, "node", "node") is None  # one type: the symmetric view serves it
    True
    """
    es = graph.edge_set(edge_set)
    kinds = _one_way_kinds(graph, es.name, ntype, other_type)
    if kinds is None:
        return None
    fw, bw = (graph.adjacency_index(es.name, k) for k in kinds)
    if fw is None or bw is None:
        return None
    n = graph.num_nodes()
    return (Adjacency(fw.indptr, fw.indices, n), Adjacency(bw.indptr, bw.indices, n),
            graph.type_offsets[ntype])


def bipartite_adjacency(graph: Graph, ntype: str, other_type: str, *,
                        edge_set: str | None = None, memory_limit: int | None = None
                        ) -> tuple[Adjacency, Adjacency]:
    """``(fw, bw)``: ``fw`` from ``ntype`` nodes to their ``other_type`` neighbours and
    ``bw`` back, over the edges between the two types in either stored direction, parallel
    edges kept (as :func:`mapped_bipartite` keeps them: a walk reaches a neighbour in
    proportion to its edges, as DGL's).

    With ``ntype == other_type`` both are the symmetric adjacency of that type (parallel
    edges merged, :func:`homogeneous_adjacency`). Built in RAM
    (type-local ids; :func:`mapped_bipartite` maps the stored indexes instead) unless that
    needs more than ``memory_limit`` bytes (None: the RAM available), which is refused in
    one line (:func:`graphsys.views.check`).

    Parameters
    ----------
    graph : Graph
        An opened graph.
    ntype, other_type : str
        The entity type walked from, and the one walked through.
    edge_set : str, optional
        The edge set (default: the default one).
    memory_limit : int, optional
        Bytes a build in RAM may use (default: the RAM available).

    Returns
    -------
    tuple of (Adjacency, Adjacency)
        ``fw`` (``ntype`` rows, ``other_type`` columns) and ``bw`` (the transpose).

    Raises
    ------
    GraphsysError
        An unknown entity type, no edges between the two types, or a build over
        ``memory_limit``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1, 1]), np.array([1, 2, 2]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> fw, bw = bipartite_adjacency(g, "node", "node")
    >>> fw is bw, fw.indices.tolist()  # one type: the symmetric view, parallel edges merged
    (True, [1, 0, 2, 1])
    """
    for t in (ntype, other_type):
        graph.entity_type(t)
    if ntype == other_type:
        a = homogeneous_adjacency(graph, ntype, edge_set=edge_set, symmetric=True,
                                  memory_limit=memory_limit)
        return a, a
    es = graph.edge_set(edge_set)
    mappable = _one_way_kinds(graph, es.name, ntype, other_type) is not None
    views.check(graph, edge_set, f"the {ntype}-{other_type} adjacency of edge set {es.name!r}",
          ram_build_bytes(graph, edge_set, symmetric=True), memory_limit,
          ("csr", "csc") if mappable else None)
    n, m = graph.num_nodes(ntype), graph.num_nodes(other_type)
    s1, d1, w1 = typed_edges(graph, edge_set, ntype, other_type)
    s2, d2, w2 = typed_edges(graph, edge_set, other_type, ntype)
    if len(s1) + len(s2) == 0:
        raise GraphsysError(f"no edges between entity types {ntype!r} and {other_type!r}")
    rows = np.concatenate([s1, d2])
    cols = np.concatenate([d1, s2])
    w = None if (w1 is None and len(s1)) or (w2 is None and len(s2)) else np.concatenate(
        [x for x in (w1, w2) if x is not None])
    return (from_coo(rows, cols, n, m, w, merge=False),
            from_coo(cols, rows, m, n, w, merge=False))
