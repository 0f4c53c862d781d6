"""Eccentricity and diameter in hops, over the undirected view of an edge set (a directed
edge set as NetworkX's ``G.to_undirected()``).

A disconnected graph has no finite diameter in NetworkX's sense (``nx.diameter`` refuses
it); here, as igraph's ``diameter(unconn=True)``, the diameter is the longest finite
distance (the largest diameter of a component) and a node's eccentricity is its largest
distance within its component. :func:`diameter` estimates by default: the 4-sweep of
Crescenzi et al. [1]_ in each component that could hold a longer path (a lower bound,
usually the diameter, from 4 breadth-first searches), with the upper bound that it proves;
``exact=True`` continues with iFUB [1]_ (searches from the nodes farthest from the
4-sweep's centre, level by level, until the bounds meet: up to 64 of a level in one
bit-parallel search, more spread over numba's threads).
:func:`eccentricity` of every node uses Takes and Kosters' bounds [2]_.

References
----------
.. [1] P. Crescenzi, R. Grossi, M. Habib, L. Lanzi and A. Marino, "On computing the
   diameter of real-world undirected graphs", Theoretical Computer Science 514, 2013.
.. [2] F. W. Takes and W. A. Kosters, "Computing the eccentricity distribution of large
   graphs", Algorithms 6(1), 2013.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from graphsys.errors import check_flag
from graphsys.execution import OPTION_DOCS, Execution, fill_doc, with_threads
from graphsys.kernels import bfs as kb
from graphsys.kernels import components as kc
from graphsys.measures import kernels_distance as kd
from graphsys.measures.kernels_view import DIRECTED
from graphsys.measures.view import internal_ids, undirected_view
from graphsys.progress import display
from graphsys.storage.node_reads import id_rank
from graphsys.storage.node_values import FormerArray, NodeValues


@dataclass
class Diameter:
    """The result of :func:`diameter`.

    Attributes
    ----------
    value : int
        The diameter in hops when ``exact``; else the estimate, its lower bound.
    lower, upper : int
        Proven bounds: ``lower <= diameter <= upper`` (equal when ``exact``).
    exact : bool
        Whether the bounds met.
    endpoints : tuple
        Original ids of two nodes ``value`` hops apart: a node of eccentricity ``value``
        that the search met (of several met at once, the smallest original id), then the
        smallest original id of the nodes ``value`` hops from it. The search chooses by
        degrees, distances and original ids only (never internal ids), so the same edges
        give the same endpoints whatever the ingest order, partitions or threads. As
        igraph's ``get_diameter``, the first pair found: the smallest pair over all that
        are ``value`` apart would need every node's eccentricity.
    searches : int
        Breadth-first searches made.
    components : int
        Connected components of the undirected view.

    Examples
    --------
    A path 0 - 4 beside a pair 10 - 11:

    >>> import tempfile, graphsys
    >>> from graphsys.measures import diameter
    >>> g = graphsys.from_numpy([0, 1, 2, 3, 10], [1, 2, 3, 4, 11], tempfile.mkdtemp() + "/g")
    >>> d = diameter(g)
    >>> d.value, (d.lower, d.upper), d.exact, sorted(d.endpoints), d.components
    (4, (4, 4), True, [0, 4], 2)
    """

    value: int
    lower: int
    upper: int
    exact: bool
    endpoints: tuple
    searches: int
    components: int

    def to_dict(self) -> dict:
        return {"diameter": self.value, "lower": self.lower, "upper": self.upper,
                "exact": self.exact, "endpoints": list(self.endpoints),
                "searches": self.searches, "components": self.components}


_NONE32 = np.empty(0, np.int32)
_NONE_BOOL = np.empty(0, np.bool_)


class _Searcher:
    """Breadth-first searches over one view (:func:`graphsys.kernels.bfs.search`), with
    reusable buffers."""

    def __init__(self, view):
        n = view.num_nodes
        self.view, self.args = view, view.args()
        #: the view's lists as the search reads them (:mod:`~graphsys.measures.kernels_distance`)
        self.lists = (*self.args[:4], view.sym == DIRECTED, view.bound)
        self.dist, self.queue, *self.bitmaps = kb.buffers(n, view.oidx.dtype)
        #: the tie-break of equal nodes: original-id order, so that the sweeps do not depend
        #: on how the graph is partitioned
        self.rank = id_rank(view.graph)
        #: an upper bound of every node's eccentricity, from the searches so far
        #: (``d(x, s) + ecc(s)``, Takes and Kosters' bound)
        self.upper = np.full(n, np.iinfo(np.int32).max, np.int32)
        self.searches = 0
        self._many: tuple | None = None
        self._words: tuple | None = None

    def scratch(self) -> tuple:
        """The view's lists and this searcher's buffers, as the kernels take them."""
        return (*self.lists, self.dist, self.queue, *self.bitmaps)

    def bfs(self, source: int) -> int:
        """One search, its large levels spread over numba's threads (the nodes reached in
        the same order on any number of threads); returns how many, listed in ``queue``."""
        self.searches += 1  # source as int64 whatever array it came from: one signature
        return int(kb.search(*self.scratch(), int(source), kb.NO_LIMIT,
                             numba.get_num_threads(), True)[0])

    def sweep(self, source: int, middle: bool = False,
              reached: np.ndarray | None = None) -> tuple[int, int, int, int]:
        """Search from ``source``: (a farthest node, its distance, when ``middle`` the node
        halfway back from it to ``source`` on a shortest path, and the farthest node of
        smallest original id, :meth:`first`); ``reached``: bool (N,), set True for every
        node reached (the source's component).

        The farthest node is :meth:`peripheral` of the last level, and each step back
        goes to the neighbour with the longest rows (:func:`kd.step_back
        <graphsys.measures.kernels_distance.step_back>`): as in Takes and Kosters' choice of
        the next source, the candidate least bounded by the searches so far, then the one of highest
        degree (a hub, likely central, as the middle of the path), ties in original-id order;
        both keys of the node alone, so the sweeps do not depend on the order a search listed
        a level in (nor on the number of threads or the partitions)."""
        count = self.bfs(source)
        level = self.queue[kd.last_level(self.dist, self.queue, count):count]
        far, end = self.peripheral(level), self.first(level)
        ecc = int(self.dist[far])
        mid = far
        for _ in range(ecc // 2 if middle else 0):
            mid = int(kd.step_back(mid, *self.args, self.dist, self.rank))
        kd.settle(self.upper, self.dist, self.queue, count, ecc,
                  _NONE_BOOL if reached is None else reached, _NONE32)
        return far, ecc, mid, end

    def first(self, nodes: np.ndarray) -> int:
        """Of ``nodes``, the one of smallest original id."""
        return int(nodes[np.argmin(self.rank[nodes])])

    def farthest(self, source: int) -> int:
        """One search: the node of smallest original id farthest from ``source``."""
        count = self.bfs(source)
        end = self.first(self.queue[kd.last_level(self.dist, self.queue, count):count])
        kd.reset(self.dist, self.queue, count)
        return end

    def peripheral(self, nodes: np.ndarray) -> int:
        """Of ``nodes`` (of one level of a search), the one with the largest eccentricity
        bound from the searches so far, then the highest degree, then the smallest original
        id (:func:`kd.peripheral <graphsys.measures.kernels_distance.peripheral>`)."""
        return int(kd.peripheral(nodes, self.upper, self.view.optr, self.view.iptr,
                                 self.view.sym, self.rank))

    def levels(self, source: int) -> tuple[np.ndarray, np.ndarray]:
        """The nodes reached from ``source`` in BFS order, and where each level starts."""
        count = self.bfs(source)
        order = self.queue[:count].copy()
        d = np.empty(count, np.int32)
        kd.settle(self.upper, self.dist, self.queue, count, int(self.dist[order[-1]]),
                  _NONE_BOOL, d)
        return order, np.searchsorted(d, np.arange(int(d[-1]) + 2))

    def many(self, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(eccentricity, a farthest node) of each source: up to 64 (``kd.WORD``) in one
        bit-parallel search on one thread, more spread over numba's threads."""
        ecc = np.empty(len(sources), np.int64)
        far = np.empty(len(sources), np.int64)
        if len(sources) == 1:
            count = self.bfs(sources[0])
            far[0] = kd.farthest(self.dist, self.queue, count)
            ecc[0] = self.dist[far[0]]
            kd.reset(self.dist, self.queue, count)
            return ecc, far
        if len(sources) <= kd.WORD:  # one search for them all, on one thread
            if self._words is None:
                n = self.view.num_nodes
                self._words = (np.zeros(n, np.uint64), np.zeros(n, np.uint64),
                               np.zeros(n, np.uint64), np.empty(2 * n, np.int64),
                               np.empty(n, np.int64))
            kd.multi_eccentricities(sources, *self.args, *self._words, ecc, far)
            self.searches += len(sources)
            return ecc, far
        if self._many is None:
            t, n = numba.get_num_threads(), self.view.num_nodes
            self._many = tuple(np.stack([b] * t) for b in kb.buffers(n, self.view.oidx.dtype))
        kd.eccentricities(sources, *self.lists, *self._many, ecc, far)
        self.searches += len(sources)
        return ecc, far


def components(view) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The connected components of a :class:`~graphsys.measures.view.View`: (members
    grouped by component, each component's start in it, sizes), components numbered in
    order of their smallest internal id (:func:`graphsys.kernels.components.numbered`)."""
    label, sizes = kc.numbered(kc.roots(view.optr, view.oidx, view.iptr, view.iidx,
                                        view.sym == DIRECTED))
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    return np.argsort(label, kind="stable"), starts, sizes


def _hub_first(view, reached: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(component of each node, sizes): the component ``reached`` (a search's) 0, the
    others after it in order of their smallest internal id, found by union-find over the
    rows of the nodes outside it only
    (:func:`graphsys.kernels.components.union_find_outside`)."""
    n = view.num_nodes
    comp = np.empty(n, np.int64)
    kc.union_find_outside(view.optr, view.oidx, reached, comp, view.sym != DIRECTED)
    rank = np.cumsum((comp == np.arange(n)) & ~reached)
    label = np.where(reached, 0, rank[comp])
    return label, np.bincount(label, minlength=int(rank[-1]) + 1)


def _degrees(view) -> np.ndarray:
    """Row lengths (out plus in for a directed view) of every node."""
    deg = np.diff(view.optr)
    return deg if view.sym else deg + np.diff(view.iptr)


@with_threads
@fill_doc(**OPTION_DOCS)
def diameter(graph, *, exact: bool = False, edge_set: str | None = None,
             progress: bool = False, execution: Execution | None = None) -> Diameter:
    """The diameter in hops: the longest shortest path of the undirected view, over all
    components (see the module docstring).

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    exact : bool, default False
        Prove the value (iFUB); else the 4-sweep's lower bound, with the upper bound it
        proves.
    edge_set : str, optional
        The edge set.
    %(progress)s
    %(execution)s

    Returns
    -------
    Diameter

    See Also
    --------
    eccentricity

    References
    ----------
    .. [1] P. Crescenzi, R. Grossi, M. Habib, L. Lanzi and A. Marino, "On computing the
       diameter of real-world undirected graphs", Theoretical Computer Science 514, 2013.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import diameter
    >>> g = graphsys.from_numpy([0, 1, 2, 3, 10], [1, 2, 3, 4, 11], tempfile.mkdtemp() + "/g")
    >>> d = diameter(g, exact=True)
    >>> d.value, d.exact, sorted(d.endpoints), d.components
    (4, True, [0, 4], 2)
    """
    exact = check_flag("exact", exact)
    ex = Execution.of(execution, progress=progress).in_memory("diameter", "distributed")
    progress, view = ex.progress, undirected_view(graph, edge_set, ex.memory_limit)
    if view.num_nodes == 0:
        return Diameter(0, 0, 0, True, (), 0, 0)
    search = _Searcher(view)
    # the component of the node of largest degree (the smallest original id of ties) first:
    # its first sweep labels it; then the other components (a search each, over the nodes
    # left), the largest first, ties by their smallest original id
    hub = int(np.lexsort((search.rank, -_degrees(view)))[0])
    reached = np.zeros(view.num_nodes, np.bool_)
    first, *_ = search.sweep(hub, reached=reached)
    label, sizes = _hub_first(view, reached)
    hubs = None
    lower, upper, ends = 0, 0, (hub, hub)
    first_id = np.full(len(sizes), view.num_nodes, np.int64)
    np.minimum.at(first_id, label, search.rank)
    with display(progress, unit="search", desc="diameter") as bar:
        for c in np.lexsort((first_id, -sizes)):
            if sizes[c] - 1 <= lower:
                break  # no path in this or a smaller component can be longer
            if c == 0:
                start = (hub, first)
            else:
                if hubs is None:
                    hubs = kd.hubs(label, len(sizes), view.optr, view.iptr, view.sym,
                                   search.rank)
                start = (int(hubs[c]), None)
            lo, hi, pair = _component(search, start, int(sizes[c]), exact, lower, bar)
            if lo > lower:
                lower, ends = lo, pair
            upper = max(upper, hi)
    upper = max(upper, lower)
    if ends[1] is None:  # a source of iFUB's: its farthest node of smallest original id
        ends = (ends[0], search.farthest(ends[0]))
    ids = view.original(np.array(ends))
    ends = tuple(ids.tolist() if isinstance(ids, np.ndarray) else ids.to_pylist())
    return Diameter(lower, lower, upper, lower == upper, ends, search.searches, len(sizes))


def _component(search: _Searcher, start: tuple[int, int | None], size: int, exact: bool,
               known: int, bar) -> tuple[int, int, tuple[int, int | None]]:
    """(lower bound, upper bound, endpoints of the lower bound) of the diameter of a
    component of ``size`` nodes, from its node of largest degree ``r1`` (and, when already
    searched, the farthest node from it, ``a1``). The endpoints are the source of the
    search that set the lower bound (of a batch of iFUB's sources, the smallest original
    id) and the farthest node from it of smallest original id (None after iFUB's batch:
    one more search finds it, for the final pair only, as the batch kernels' farthest
    nodes go by internal id).

    The 4-sweep: ``a1`` farthest from ``r1``, ``b1`` farthest from ``a1`` and ``r2`` halfway
    between them; ``a2`` farthest from ``r2``, ``b2`` from ``a2`` and ``u`` halfway. Every
    search also bounds every node's eccentricity (``d(x, s) + ecc(s)``), so the diameter is
    at most the largest bound: after the search from ``r2`` that often meets the lower
    bound already (a road network: three searches); when one search of the nodes farthest
    from ``r2`` ends iFUB from it, that search follows at once (email-Enron). Else iFUB
    from ``u`` while the bounds differ and ``exact``, searching only the fringe nodes whose
    bound exceeds the lower bound."""
    r1, a1 = start
    if a1 is None:
        a1, *_ = search.sweep(r1)
    _, e1, r2, b1 = search.sweep(a1, middle=True)
    lower, pair = e1, (a1, b1)
    order, starts = search.levels(r2)
    upper = min(2 * (len(starts) - 2), size - 1, int(search.upper[order].max()))
    bar.update(3)
    if lower >= upper:
        return lower, lower, pair
    e = len(starts) - 2
    a2 = search.peripheral(order[starts[e]:])
    # exact: iFUB from r2 at once when one search of its last level ends it (no node nearer
    # r2 than e is more than 2 (e - 1) < lower from another); an estimate takes the second
    # half of the 4-sweep
    done = exact and lower > 2 * (e - 1) and np.count_nonzero(
        search.upper[order[starts[e]:]] > lower) <= kd.WORD
    if a2 != a1 and not done:  # (a2 = a1: the searches from a1 and r2 again)
        _, e2, u, b2 = search.sweep(a2, middle=True)
        if e2 > lower:
            lower, pair = e2, (a2, b2)
        order, starts = search.levels(u)
        bar.update(2)
    ecc_u = len(starts) - 2
    # no node's eccentricity exceeds its bound from the searches made
    upper = min(upper, 2 * ecc_u, int(search.upper[order].max()))
    i = ecc_u
    while exact and lower < upper and max(lower, known) < upper:
        fringe = order[starts[i]:starts[i + 1]]
        fringe = fringe[search.upper[fringe] > lower]  # the others cannot beat lower
        if len(fringe):
            ecc, _ = search.many(fringe)
            bar.update(len(fringe))
            if ecc.max() > lower:
                lower = int(ecc.max())
                pair = (search.first(fringe[ecc == lower]), None)
        if lower > 2 * (i - 1):
            upper = lower
            break
        upper = min(upper, 2 * (i - 1))
        i -= 1
    return lower, max(upper, lower), pair


@with_threads
@fill_doc(**OPTION_DOCS)
def eccentricity(graph, nodes=None, *, edge_set: str | None = None, internal: bool = False,
                 progress: bool = False, execution: Execution | None = None
                 ) -> NodeValues | np.ndarray:
    """The eccentricity of nodes in hops: the largest distance from each to a node of its
    component, in the undirected view.

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    nodes : array-like, optional
        Original ids (internal ids when ``internal``); default every node, computed with
        Takes and Kosters' bounds (usually far fewer searches than nodes).
    edge_set : str, optional
        The edge set.
    internal : bool, default False
        ``nodes`` are internal ids.
    %(progress)s
    %(execution)s

    Returns
    -------
    NodeValues or numpy.ndarray
        Of every node (``nodes`` None): :class:`~graphsys.storage.node_values.NodeValues`
        named ``eccentricity``, int64 by internal id (``top``, ``value``, ``to_dict``,
        ``to_table``; the bare array it was before is ``.values``: array access on the
        result itself is deprecated). Of ``nodes``: int64, one per node of ``nodes``.

    References
    ----------
    .. [1] F. W. Takes and W. A. Kosters, "Computing the eccentricity distribution of large
       graphs", Algorithms 6(1), 2013.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import eccentricity
    >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 4], tempfile.mkdtemp() + "/g")
    >>> eccentricity(g).to_dict(), eccentricity(g, [2]).tolist()
    ({0: 4, 1: 3, 2: 2, 3: 3, 4: 4}, [2])
    """
    internal = check_flag("internal", internal)
    ex = Execution.of(execution, progress=progress).in_memory("eccentricity", "distributed")
    progress, view = ex.progress, undirected_view(graph, edge_set, ex.memory_limit)
    search = _Searcher(view)
    if nodes is not None:
        ecc, _ = search.many(internal_ids(graph, nodes, "nodes", internal=internal))
        return ecc
    out = np.zeros(view.num_nodes, np.int64)
    members, starts, sizes = components(view)
    with display(progress, total=len(sizes), unit="component", desc="eccentricity") as bar:
        for c in range(len(sizes)):
            comp = members[starts[c]:starts[c + 1]]
            if len(comp) <= 2:
                out[comp] = len(comp) - 1
            else:
                # on one thread: many short searches
                kd.bounding_eccentricities(comp, *search.scratch(), 1, out)
            bar.update()
    return FormerArray(out, graph, "eccentricity")
