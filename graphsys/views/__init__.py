"""The graph view layer: the in-memory adjacency every engine reads, written once.

:func:`view` (``graph.view(kind)``, through the ``GRAPH_VIEWS`` registry of
:mod:`graphsys.plugins`) gives an edge set's adjacency of one kind (:data:`KINDS`):
``out`` / ``in`` rows, the undirected simple ``sym`` rows, the degree-ordered ``oriented``
DAG (:class:`~graphsys.views.orient.Oriented`), ``temporal`` events and ``typed`` rows per
relation (:class:`Typed`). A kind the graph stores an index of is mapped; otherwise it is
built in RAM within the one budget rule (:mod:`graphsys.views.limits`) and kept in the
opened graph's cache (:mod:`graphsys.views.cache`). ``docs/architecture.md`` ("The view
layer") gives each kind's source. This layer sits directly above storage: engines import
it, it imports no engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphsys.errors import ParameterError, check_count, check_flag
from graphsys.storage.csr import CSR, WEIGHT_BYTES, build_rows, check_rows
from graphsys.storage.temporal_index import (
    RAM_BYTES_PER_ENTRY,
    RAM_BYTES_PER_NODE,
    TemporalAdjacency,
    fill_temporal,
    map_temporal,
    time_dtype,
)
from graphsys.views.cache import cached, forget, held_bytes, peek
from graphsys.views.limits import budget, cache_budget, check, one_type
from graphsys.views.orient import (
    Oriented,
    _from_symmetric,
    mapped_symmetric,
    oriented,
)
from graphsys.views.rows import INDEX, from_pairs

KINDS = ("out", "in", "sym", "oriented", "temporal", "typed")
#: Anonymous bytes per stored edge at the peak of a ``sym`` build in RAM: the out rows (8),
#: scipy's ones and transposed copy (20), the merged rows of both ways and their int64
#: copy (40).
SYM_BYTES_PER_EDGE = 68
#: Anonymous bytes per stored edge at the peak of a ``typed`` build of several relations:
#: the edges' ends and relations (20), one way's row keys, their order and the reordered
#: neighbours (24), both ways' int32 ids (8).
TYPED_BYTES_PER_EDGE = 56

__all__ = ["KINDS", "Oriented", "Typed", "budget", "cache_budget", "cached", "check", "forget",
           "held_bytes", "mapped_sym", "mapped_symmetric", "one_type", "oriented", "view"]


def view(graph, kind: str, *, edge_set: str | None = None, memory_limit: int | None = None,
         weights: bool = False, directions: bool = False, sort: bool = True,
         beside: int = 0):
    """The ``kind`` view of an edge set: mapped from a stored index where the graph has
    one, else built in RAM within the budget and kept on the opened graph.

    Parameters
    ----------
    graph : Graph
        An opened graph (one entity type for ``sym`` and ``oriented``).
    kind : {"out", "in", "sym", "oriented", "temporal", "typed"}
        The view (see the module's notes).
    edge_set : str, optional
        The edge set (default: the graph's default).
    memory_limit : int, optional
        Anonymous bytes a build may take (default: the RAM available now); a kept view
        counts against it.
    weights : bool, default False
        ``out`` / ``in`` / ``sym``: the edge weights too, when the edge set has them (a
        built ``sym`` entry: the weights of the edges merged into it summed).
    directions, sort : bool
        ``oriented``: keep each pair's stored directions; sort each row
        (:func:`~graphsys.views.orient.oriented`).
    beside : int, default 0
        ``oriented``: bytes the caller needs beside the view; a kept view is used when it
        fits the budget with them (:func:`~graphsys.views.cache.cached`), and a refusal of
        its build names the ``sym`` index only where the view from it fits with them.

        An option given to a kind it does not apply to is refused.

    Returns
    -------
    CSR, Oriented, TemporalAdjacency or Typed
        A :class:`~graphsys.storage.csr.CSR` (``out``, ``in``, ``sym``; read-only when
        mapped; built ``out`` / ``in`` ids int32 where they fit, as an index holds them), an
        :class:`~graphsys.views.orient.Oriented`, a
        :class:`~graphsys.storage.temporal_index.TemporalAdjacency` or a
        :class:`Typed`. A second call returns the same object while
        it is kept (a ``typed`` view of one relation: new slices of the kept rows).

    Raises
    ------
    GraphsysError
        The build needs more than the budget (one line, naming the ``graphsys index``
        command that stores the index mapped instead).
    ParameterError
        An unknown kind, or an option of another kind (``weights`` of an ``oriented``
        view).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.views import view
    >>> g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> view(g, "in").indices.tolist(), view(g, "sym").indices.tolist()
    ([2, 0, 1], [1, 2, 0, 2, 0, 1])
    >>> view(g, "oriented").num_edges
    3
    >>> view(g, "oriented") is view(g, "oriented")  # kept on the opened graph
    True
    """
    if kind not in KINDS:
        raise ParameterError("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    weights, directions, sort = (check_flag(name, v) for name, v in (  # "no" was True
        ("weights", weights), ("directions", directions), ("sort", sort)))
    for name, given, kinds in (("weights", weights, ("out", "in", "sym")),
                               ("directions", directions, ("oriented",)),
                               ("sort", not sort, ("oriented",)),
                               ("beside", beside, ("oriented",))):
        if given and kind not in kinds:
            raise ParameterError(name, f"applies to kind {' or '.join(map(repr, kinds))} "
                                       f"only, not {kind!r}")
    beside = check_count("beside", beside, minimum=0)
    es = graph.edge_set(edge_set)
    if kind == "oriented":
        return _oriented(graph, es.name, memory_limit, directions, sort, beside)
    if kind == "sym":
        return _sym(graph, es.name, memory_limit, weights)
    if kind == "temporal":
        return _temporal(graph, es.name, memory_limit)
    if kind == "typed":
        return _typed(graph, es, memory_limit)
    return _directed(graph, es, kind, memory_limit, weights)


def _directed(graph, es, kind: str, memory_limit, weights: bool) -> CSR:
    """The ``out`` / ``in`` rows: the mapped ``csr`` / ``csc`` index, else built once
    (:func:`~graphsys.storage.csr.build_rows`, int32 ids where they fit) and kept."""
    mapped = graph.adjacency_index(es.name, INDEX[kind])
    if mapped is not None:
        return CSR(mapped.indptr, mapped.indices, mapped.weight if weights else None)
    limit = check_rows(graph, es.name, kind, weights, memory_limit)
    return cached(graph, (es.name, kind, weights), lambda: build_rows(
        graph, es.name, kind, weights, memory_limit=memory_limit), nbytes=CSR.nbytes.fget,
        budget=limit)


def _sym(graph, edge_set: str, memory_limit, weights: bool) -> CSR:
    """The undirected simple rows: the mapped ``sym`` index (or an undirected deduplicated
    edge set's CSR index), else both directions of every stored edge merged in RAM (the
    weights of the edges merged into an entry summed, a self-loop's twice)."""
    one_type(graph, "the sym view")
    es = graph.edge_set(edge_set)
    mapped = mapped_sym(graph, edge_set, weights, memory_limit)
    if mapped is not None:
        return mapped
    weights = weights and es.has_weight
    need = (SYM_BYTES_PER_EDGE + (2 * WEIGHT_BYTES if weights else 0)) * es.num_edges \
        + 16 * graph.num_nodes()
    limit = check(graph, edge_set, f"the symmetric adjacency of edge set {edge_set!r}", need,
                  memory_limit, ("sym",))

    def build() -> CSR:
        out = view(graph, "out", edge_set=edge_set, memory_limit=memory_limit,
                   weights=weights).to_scipy()
        both = (out + out.T).tocsr()  # duplicates summed: each neighbour once
        both.sort_indices()
        return CSR(both.indptr.astype(np.int64), both.indices.astype(np.int64),
                   both.data.astype(np.float32) if weights else None)

    return cached(graph, (edge_set, "sym", weights), build, nbytes=CSR.nbytes.fget, budget=limit)


def mapped_sym(graph, edge_set: str, weights: bool, memory_limit=None) -> CSR | None:
    """The ``sym`` rows mapped from a stored index (:func:`mapped_symmetric`), or None.
    ``weights``: the index's weights, as a built ``sym`` view sums them; an undirected
    deduplicated edge set's CSR index holds each stored direction of a pair (its weight
    once), while the merged entry sums both: those weights are doubled (a copy, kept on
    the opened graph).

    Parameters
    ----------
    graph : Graph
        An opened graph.
    edge_set : str
        The edge set's name.
    weights : bool
        Carry the weights (None when the edge set has none).
    memory_limit : int, optional
        The budget the doubled weights are kept within (default: the RAM available).

    Returns
    -------
    CSR or None
        The mapped rows, or None when no stored index holds them.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.storage.adjacency_index import build_index
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g",
    ...                         weight=np.array([1.0, 3.0]), undirected=True, dedupe=True)
    >>> mapped_sym(g, "default", True) is None  # no index yet
    True
    >>> _ = build_index(g, ("csr",))
    >>> rows = mapped_sym(g, "default", True)
    >>> rows.indices.tolist(), rows.weight.tolist()  # each pair's two directions summed
    ([1, 0, 2, 1], [2.0, 2.0, 6.0, 6.0])
    """
    mapped = mapped_symmetric(graph, edge_set)
    if mapped is None:
        return None
    weight = graph.adjacency_index(edge_set, mapped[2].split()[0]).weight if weights else None
    if weight is None or mapped[2] == "sym index":
        return CSR(mapped[0], mapped[1], weight)
    return cached(graph, (edge_set, "sym", True), lambda: CSR(mapped[0], mapped[1], 2 * weight),
                  nbytes=lambda rows: rows.weight.nbytes, budget=cache_budget(memory_limit))


def _temporal(graph, edge_set: str, memory_limit) -> TemporalAdjacency:
    """Every node's events in time order: the stored ``temporal`` index mapped, else built
    in RAM (:func:`~graphsys.storage.temporal_index.fill_temporal`) and kept."""
    mapped = map_temporal(graph, edge_set)
    if mapped is not None:
        return mapped
    time_dtype(graph, edge_set)
    need = RAM_BYTES_PER_ENTRY * 2 * graph.edge_set(edge_set).num_edges \
        + RAM_BYTES_PER_NODE * graph.num_nodes()
    limit = check(graph, edge_set, f"the temporal adjacency of edge set {edge_set!r}", need,
                  memory_limit, ("temporal",))

    def build() -> TemporalAdjacency:
        arrays = fill_temporal(graph, edge_set, lambda _, dtype, size: np.zeros(size, dtype))
        return TemporalAdjacency(*arrays[:4])

    return cached(graph, (edge_set, "temporal"), build, budget=limit,
                  nbytes=lambda t: t.indptr.nbytes + t.indices.nbytes + t.time.nbytes
                  + t.eid.nbytes)


@dataclass(frozen=True)
class Typed:
    """Per relation type of the graph (``graph.relation_types`` order) its out rows
    ``csr[k]`` (rows: type-local ids of the relation's source type; neighbours: global
    ids) and in rows ``csc[k]`` (rows: type-local ids of the destination type). Each row's
    neighbours ascend; parallel edges are kept.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> edges = pa.table({"src": [0, 0, 1], "dst": [1, 2, 2], "rel": ["a", "b", "b"]})
    >>> out = tempfile.mkdtemp() + "/kg"
    >>> _ = ingest_sources([EdgeSource(table=edges, src_col="src", dst_col="dst",
    ...                                rel_col="rel")], out, IngestOptions())
    >>> t = graphsys.open_graph(out).view("typed")  # relations a, b
    >>> t.csc[1].indptr.tolist(), t.csc[1].indices.tolist()  # b's in-neighbours: 2's
    ([0, 0, 0, 2], [0, 1])
    """

    csr: tuple[CSR, ...]
    csc: tuple[CSR, ...]

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(c.nbytes for c in self.csr + self.csc)


def _typed(graph, es, memory_limit) -> Typed:
    """Each relation's rows sliced from one CSR of each way (:func:`_sliced`): for an edge
    set of one relation the kept (or mapped) ``out`` and ``in`` rows; else the relations'
    rows stacked, built from one pass over the edges within the budget, and kept."""
    rts, toff = graph.relation_types, graph.type_offsets
    if not es.has_rel or len(rts) == 1:
        return Typed(*(_sliced(view(graph, kind, edge_set=es.name, memory_limit=memory_limit),
                               [toff[t]], [graph.num_nodes(t)])
                       for kind, t in (("out", rts[0].lhs), ("in", rts[0].rhs))))
    need = TYPED_BYTES_PER_EDGE * es.num_edges + 24 * sum(
        graph.num_nodes(r.lhs) + graph.num_nodes(r.rhs) + 1 for r in rts)
    limit = check(graph, es.name, f"the typed adjacency of edge set {es.name!r}", need,
                  memory_limit)

    def build() -> Typed:
        parts = list(graph.iter_edges(es.name))
        s, d, rel = (np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64)
                     for k in range(3))
        ways = []
        for rows, cols, types in ((s, d, [r.lhs for r in rts]), (d, s, [r.rhs for r in rts])):
            sizes = [graph.num_nodes(t) for t in types]
            first = np.cumsum([0] + sizes)  # each relation's first row in the stack
            key = (first[:-1] - np.array([toff[t] for t in types]))[rel] + rows
            indptr, nbr = from_pairs(int(first[-1]), key, cols, by=(cols,))
            ways.append(_sliced(CSR(indptr, nbr.astype(
                np.int32 if graph.num_nodes() < 2**31 else np.int64)), first[:-1], sizes))
        return Typed(*ways)

    return cached(graph, (es.name, "typed"), build, nbytes=Typed.nbytes.fget, budget=limit)


def _sliced(rows: CSR, starts, sizes) -> tuple[CSR, ...]:
    """Rows ``lo .. lo + n - 1`` of ``rows`` as rows ``0 .. n - 1`` for each start ``lo``
    and size ``n`` (one entity type's ids): the neighbours sliced, the offsets shifted (a
    copy) unless they start at 0."""
    out = []
    for lo, n in zip(starts, sizes, strict=True):
        ptr = rows.indptr[int(lo):int(lo) + n + 1]
        first, last = int(ptr[0]), int(ptr[-1])
        out.append(CSR(ptr - first if first else ptr, rows.indices[first:last]))
    return tuple(out)


def _oriented(graph, edge_set: str, memory_limit, directions: bool, sort: bool,
              beside: int) -> Oriented:
    """The degree-ordered view, kept; from ``sym`` rows built and kept already (the
    cheapest neighbour), else :func:`~graphsys.views.orient.oriented`."""
    limit = cache_budget(memory_limit)

    def build() -> Oriented:
        rows = None if directions else peek(graph, (edge_set, "sym", False))
        if rows is None:
            return oriented(graph, edge_set, directions=directions, memory_limit=memory_limit,
                            sort=sort, beside=beside)
        return _from_symmetric(rows.indptr, rows.indices, sort)

    return cached(graph, (edge_set, "oriented", "degree", directions, sort), build,
                  nbytes=Oriented.nbytes.fget, budget=limit, beside=beside)
