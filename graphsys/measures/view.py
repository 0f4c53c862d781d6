"""The undirected view of an edge set that the measures read, from the views of
:mod:`graphsys.views` (mapped where the graph stores the index, else built once per opened
graph within the memory budget):

* the ``sym`` view where it is mapped (the ``sym`` index, or the CSR index of an edge set
  ingested ``undirected`` with ``dedupe`` and one relation): each row sorted and without
  repeats;
* an edge set ingested ``undirected``: its ``out`` view (rows with repeats);
* a directed edge set: its ``out`` and ``in`` views, each row's union read as it is needed.

A view is kept in the opened graph's one cache (:mod:`graphsys.views.cache`) with its
per-node memo of neighbourhood sizes (:mod:`graphsys.measures.kernels_view`), so later
calls pay only for the nodes they touch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphsys import openmp, views
from graphsys.kernels.arrays import read_only
from graphsys.measures.kernels_view import DIRECTED, SYMMETRIC, UNIQUE, max_row_bound
from graphsys.storage.node_reads import checked_internal, internal_of


@dataclass
class View:
    """The rows of one edge set's undirected view.

    Attributes
    ----------
    graph : Graph
        The stored graph.
    edge_set : str
        The edge set's name.
    optr, oidx : numpy.ndarray
        The CSR: out-rows, each ascending. Read-only views, the ids int32 where every
        node id fits (as the view layer maps or builds them; int64 ids, as the ``sym`` rows
        are built, copied narrower once per view), so that stored and built rows reach one
        compiled signature of each kernel.
    iptr, iidx : numpy.ndarray
        The CSC of a directed edge set; the CSR again otherwise (as ``optr``/``oidx``).
    sym : int
        What the rows are (:data:`~graphsys.measures.kernels_view.DIRECTED`,
        ``SYMMETRIC`` or ``UNIQUE``).
    """

    graph: object
    edge_set: str
    optr: np.ndarray
    oidx: np.ndarray
    iptr: np.ndarray
    iidx: np.ndarray
    sym: int
    _memo: np.ndarray | None = field(default=None, repr=False)
    _bound: int | None = field(default=None, repr=False)

    def __post_init__(self):
        # one kernel signature for mapped and built rows: int32 ids where they fit (as a
        # stored index and a built view hold them), read-only views of both
        narrow = len(self.optr) - 1 <= np.iinfo(np.int32).max
        oidx = self.oidx.astype(np.int32, copy=False) if narrow else self.oidx
        iidx = oidx if self.iidx is self.oidx else (
            self.iidx.astype(np.int32, copy=False) if narrow else self.iidx)
        self.optr, self.oidx, self.iptr, self.iidx = read_only(self.optr, oidx, self.iptr,
                                                               iidx)

    @property
    def num_nodes(self) -> int:
        return len(self.optr) - 1

    @property
    def memo(self) -> np.ndarray:
        """int64 (N,) ``2 * |N(w)| + loop + 1`` per node, 0 until computed (zeroed pages,
        faulted in only where written)."""
        if self._memo is None:
            self._memo = np.zeros(self.num_nodes, np.int64)
        return self._memo

    @property
    def bound(self) -> int:
        """The largest out-row plus in-row length: the size of a gather buffer."""
        if self._bound is None:
            self._bound = int(max_row_bound(self.optr, self.iptr, self.sym))
        return self._bound

    def args(self) -> tuple:
        return self.optr, self.oidx, self.iptr, self.iidx, self.sym

    def original(self, internal: np.ndarray):
        """Original ids of internal ids (:meth:`Graph.to_original
        <graphsys.storage.graph.Graph.to_original>`)."""
        return self.graph.to_original(np.asarray(internal, np.int64))


def undirected_view(graph, edge_set: str | None = None, memory_limit: int | None = None
                    ) -> View:
    """The :class:`View` of ``graph``'s edge set, built on first use within
    ``memory_limit`` (:func:`graphsys.views.view`; default: the RAM available now) and kept
    while the Graph lives.

    Raises
    ------
    GraphsysError
        A graph with several entity types (the measures number nodes ``0..N-1`` of one),
        or a build over the budget (one line).
    """
    openmp.apply_wait_policy()  # the measures' kernels run parallel regions
    es = views.one_type(graph, "a measure").edge_set(edge_set)

    def build() -> View:
        sym = views.mapped_symmetric(graph, es.name)
        if sym is not None:
            return View(graph, es.name, sym[0], sym[1], sym[0], sym[1], UNIQUE)
        out = views.view(graph, "out", edge_set=es.name, memory_limit=memory_limit)
        if es.undirected:
            kind = UNIQUE if es.dedupe and not es.has_rel else SYMMETRIC
            return View(graph, es.name, out.indptr, out.indices, out.indptr, out.indices, kind)
        inn = views.view(graph, "in", edge_set=es.name, memory_limit=memory_limit)
        return View(graph, es.name, out.indptr, out.indices, inn.indptr, inn.indices,
                    DIRECTED)

    return views.cached(graph, (es.name, "measures"), build,
                        budget=views.cache_budget(memory_limit),
                        nbytes=lambda v: 8 * v.num_nodes)  # the memo it fills


def internal_ids(graph, ids, name: str, *, internal: bool) -> np.ndarray:
    """``ids`` (original ids, or internal ids when ``internal``) as int64 internal ids;
    one-line errors name ``name``."""
    if internal:
        return checked_internal(ids, graph.num_nodes(), name)
    return internal_of(graph, ids, name)
