r"""Link scores of node pairs, and the best-scoring candidates of each node: common
neighbours, Jaccard, Adamic-Adar, resource allocation and preferential attachment, as
NetworkX defines them [1]_ [2]_.

Over the undirected view of the edge set (a directed one as NetworkX's
``G.to_undirected()``: an edge in either direction makes two nodes neighbours; parallel
and reciprocal edges count once). With :math:`\Gamma(u)` the neighbours of :math:`u`
(:math:`u` itself when it has a self-loop) and :math:`d(w)` NetworkX's degree
(:math:`|\Gamma(w)|`, a self-loop counting twice):

- ``common``: :math:`|\Gamma(u) \cap \Gamma(v) \setminus \{u, v\}|`
  (``len(nx.common_neighbors(G, u, v))``);
- ``jaccard``: that count over :math:`|\Gamma(u) \cup \Gamma(v)|`, 0 when the union is
  empty (``nx.jaccard_coefficient``);
- ``adamic_adar``: :math:`\sum_w 1/\log d(w)` over the common neighbours
  (``nx.adamic_adar_index``; ``inf`` where NetworkX divides by zero, a common neighbour of
  degree 1, possible only for ``u == v``);
- ``resource_allocation``: :math:`\sum_w 1/d(w)` (``nx.resource_allocation_index``);
- ``preferential_attachment``: :math:`d(u)\,d(v)` (``nx.preferential_attachment``).

A pair costs :math:`O(d_s \log d_l)` for its endpoints' row lengths :math:`d_s \le d_l`
(the shorter row is gathered, each entry looked up in the longer by binary search), plus,
for Adamic-Adar and resource allocation, the rows of each common neighbour the first time
its degree is needed (kept per opened graph). No pass over the graph, except building the
CSR (and, for a directed edge set, the CSC) once when the graph has no stored adjacency
index (``graphsys index``). Pairs run in parallel on numba's threads.

References
----------
.. [1] D. Liben-Nowell and J. Kleinberg, "The link-prediction problem for social
   networks", Journal of the American Society for Information Science and Technology
   58(7), 2007.
.. [2] T. Zhou, L. Lu and Y.-C. Zhang, "Predicting missing links via local information",
   European Physical Journal B 71, 2009.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from graphsys.errors import ParameterError, check_count, check_flag
from graphsys.execution import OPTION_DOCS, Execution, fill_doc, with_threads
from graphsys.measures import kernels_similarity as ks
from graphsys.measures.kernels_view import UNIQUE, gather
from graphsys.measures.view import internal_ids, undirected_view
from graphsys.progress import display

#: The methods by name.
METHODS = {
    "common": ks.CN,
    "jaccard": ks.JACCARD,
    "adamic_adar": ks.ADAMIC_ADAR,
    "resource_allocation": ks.RESOURCE_ALLOCATION,
    "preferential_attachment": ks.PREFERENTIAL_ATTACHMENT,
}
#: Queries per :func:`top_links` kernel call (one progress step).
TOP_CHUNK = 1 << 14


def _method(method: str) -> int:
    if method not in METHODS:
        raise ParameterError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    return METHODS[method]


def _pairs(pairs) -> tuple[object, object]:
    """(first ids, second ids) of an (P, 2) array-like of pairs."""
    if isinstance(pairs, np.ndarray) and pairs.ndim == 2 and pairs.shape[1] == 2:
        return pairs[:, 0], pairs[:, 1]
    try:
        rows = list(pairs)
        firsts = [p[0] for p in rows]
        seconds = [p[1] for p in rows]
    except (TypeError, IndexError, KeyError):
        raise ParameterError("pairs", "must be a sequence of (u, v) node pairs, or an "
                                      "(P, 2) array") from None
    if any(len(p) != 2 for p in rows):
        raise ParameterError("pairs", "must hold pairs: every item two node ids")
    return firsts, seconds


def link_scores(graph, pairs, method: str = "jaccard", *, edge_set: str | None = None,
                internal: bool = False) -> np.ndarray:
    """The link score of each node pair (see the module docstring for the definitions).

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    pairs : array-like
        ``(u, v)`` pairs of original node ids: an (P, 2) array or a sequence of pairs.
    method : {"jaccard", "common", "adamic_adar", "resource_allocation", \
"preferential_attachment"}, default "jaccard"
        The score.
    edge_set : str, optional
        The edge set (default: see :meth:`~graphsys.storage.graph.Graph.edge_set`).
    internal : bool, default False
        The pairs hold internal ids (``0..N-1``) instead of original ones.

    Returns
    -------
    numpy.ndarray
        float64 (P,), in the order of ``pairs`` (counts and products are exact integers).

    Raises
    ------
    ParameterError
        An unknown method, or pairs that are not pairs.
    GraphsysError
        A node id that is not in the graph.

    See Also
    --------
    top_links : The best-scoring candidates of each node.

    References
    ----------
    .. [1] D. Liben-Nowell and J. Kleinberg, "The link-prediction problem for social
       networks", JASIST 58(7), 2007.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import link_scores
    >>> g = graphsys.from_numpy([0, 0, 1, 2, 3], [1, 2, 2, 3, 4], tempfile.mkdtemp() + "/g",
    ...                         undirected=True)
    >>> link_scores(g, [(0, 3), (1, 3), (0, 4)], "common").tolist()
    [1.0, 1.0, 0.0]
    >>> link_scores(g, [(0, 3), (2, 4)], "jaccard").tolist()  # 1/3: {2} of {1, 2, 4}
    [0.3333333333333333, 0.3333333333333333]
    >>> link_scores(g, [(0, 3)], "preferential_attachment").tolist()
    [4.0]
    """
    code, internal = _method(method), check_flag("internal", internal)  # "no" was True
    view = undirected_view(graph, edge_set)
    us, vs = _pair_ids(graph, pairs, internal)
    out = np.empty(len(us), np.float64)
    if len(us):
        if view.sym == UNIQUE:
            # rows read in place: no gather buffer, and the work from a sample of the pairs
            bound = 1
            work = ks.pair_work(us, vs, view.optr, view.iptr, view.sym,
                                max(len(us) // PAIRS_WORK_SAMPLE, 1))[1]
        else:
            bound, work = ks.pair_work(us, vs, view.optr, view.iptr, view.sym, 1)
        threads = 1 if work < PAIRS_PARALLEL_MIN_WORK else numba.get_num_threads()
        buf = np.empty((threads, max(bound, 1)), np.int64)
        args = (us, vs, *view.args(), code, view.memo, buf, out)
        if threads > 1:
            ks.pair_scores(*args)
        else:
            # the same parallel kernel on the calling thread alone: numba compiles its loop
            # body tighter than a serial copy of it
            # (set and restored here: a context manager would cost a fair share of a
            # small call)
            before = numba.get_num_threads()
            numba.set_num_threads(1)
            try:
                ks.pair_scores(*args)
            finally:
                numba.set_num_threads(before)
    return out


#: :func:`link_scores` runs on threads from this much work (the shorter row bound of every
#: pair, plus one a pair), below it on the calling thread alone: the rule is that the second
#: thread must take more than its wake-up costs, and on a machine whose other cores are busy
#: that wake-up waits for a scheduler slice, so the team pays off only from a few hundred
#: thousand lookups (the 10,000 degree-biased pairs of a social graph); with idle cores it
#: would pay off sooner, but then a small call is short either way
PAIRS_PARALLEL_MIN_WORK = 1 << 17
#: The pairs whose rows estimate that work where the rows need no gather buffer (evenly
#: spaced; every pair of a call with fewer): the estimate only chooses the threads
PAIRS_WORK_SAMPLE = 256


def _pair_ids(graph, pairs, internal: bool) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous int64 internal ids of the pairs' first and second ends (one compiled
    specialisation of the kernels for every caller's pairs)."""
    if internal and isinstance(pairs, np.ndarray) and pairs.ndim == 2 and pairs.shape[1] == 2 \
            and pairs.dtype.kind in "iu":
        # both columns split and range-checked in one pass; the per-column check below
        # names a bad id
        us, vs, ok = ks.pair_columns(np.ascontiguousarray(pairs, np.int64), graph.num_nodes())
        if ok:
            return us, vs
    first, second = _pairs(pairs)
    us = internal_ids(graph, first, "pairs", internal=internal)
    vs = internal_ids(graph, second, "pairs", internal=internal)
    return np.ascontiguousarray(us, np.int64), np.ascontiguousarray(vs, np.int64)


def _row_lengths(view, nodes: np.ndarray) -> np.ndarray:
    d = view.optr[nodes + 1] - view.optr[nodes]
    if not view.sym:
        d = d + (view.iptr[nodes + 1] - view.iptr[nodes])
    return d


def common_neighbors(graph, u, v, *, edge_set: str | None = None, internal: bool = False):
    """The common neighbours of ``u`` and ``v``, neither of them (as
    ``nx.common_neighbors``), in the undirected view of the edge set.

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    u, v : int or str
        Original node ids (internal ids when ``internal``).
    edge_set : str, optional
        The edge set.
    internal : bool, default False
        ``u``, ``v`` and the result are internal ids.

    Returns
    -------
    numpy.ndarray or pyarrow.Array
        The common neighbours' ids, ascending by internal id: original ids (int64, or a
        string array for a graph with string ids), or int64 internal ids.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import common_neighbors
    >>> g = graphsys.from_numpy([0, 0, 1, 2, 3], [1, 2, 2, 3, 4], tempfile.mkdtemp() + "/g",
    ...                         undirected=True)
    >>> common_neighbors(g, 0, 3).tolist()
    [2]
    """
    internal, view = check_flag("internal", internal), undirected_view(graph, edge_set)
    a, b = internal_ids(graph, [u, v], "u, v", internal=internal).tolist()
    nu, nv = (np.empty(int(_row_lengths(view, np.array([x]))[0]), np.int64) for x in (a, b))
    nu = nu[:_gather(view, a, nu)]
    nv = nv[:_gather(view, b, nv)]
    common = np.intersect1d(nu, nv, assume_unique=True)
    common = common[(common != a) & (common != b)]
    return common if internal else view.original(common)


def _gather(view, u: int, buf: np.ndarray) -> int:
    return gather(u, view.optr, view.oidx, view.iptr, view.iidx, view.sym, buf)


@dataclass
class TopLinks:
    """The best candidates of each query node, from :func:`top_links`: one row per
    (source, candidate), sources in query order, each source's candidates best first.

    Attributes
    ----------
    source, target : numpy.ndarray or pyarrow.Array
        Original ids of the query node and of its candidate.
    score : numpy.ndarray
        float64 scores.
    source_internal, target_internal : numpy.ndarray
        The same nodes as int64 internal ids.
    method : str
        The score's name.

    Examples
    --------
    The best Jaccard candidate of nodes 1 and 4 on a 4-cycle 0-1-2-3 with a tail 0-4:

    >>> import tempfile, graphsys
    >>> from graphsys.measures import top_links
    >>> g = graphsys.from_numpy([0, 1, 2, 3, 0], [1, 2, 3, 0, 4], tempfile.mkdtemp() + "/g",
    ...                         undirected=True)
    >>> links = top_links(g, [1, 4], k=1)
    >>> len(links), links.method, links.to_table().to_pydict()
    (2, 'jaccard', {'source': [1, 4], 'target': [3, 1], 'score': [1.0, 0.5]})
    """

    source: object
    target: object
    score: np.ndarray
    source_internal: np.ndarray
    target_internal: np.ndarray
    method: str

    def __len__(self) -> int:
        return len(self.score)

    def __iter__(self) -> Iterator[tuple]:
        """``(u, v, score)`` triples of Python values, as NetworkX's link predictors
        yield."""
        src = self.source.tolist() if hasattr(self.source, "tolist") else list(self.source)
        dst = self.target.tolist() if hasattr(self.target, "tolist") else list(self.target)
        return iter(zip(src, dst, self.score.tolist()))

    def to_table(self) -> pa.Table:
        """The rows as a :class:`pyarrow.Table` (``source``, ``target``, ``score``)."""
        return pa.table({"source": self.source, "target": self.target, "score": self.score})


@with_threads
@fill_doc(**OPTION_DOCS)
def top_links(graph, nodes=None, k: int = 10, method: str = "jaccard", *,
              edge_set: str | None = None, internal: bool = False,
              progress: bool = False, execution: Execution | None = None) -> TopLinks:
    """The ``k`` best link candidates of each node: the nodes two hops away (sharing a
    neighbour with it, neither it nor one of its neighbours), by score.

    Scores as :func:`link_scores` (see the module docstring); ``preferential_attachment``
    ranks the same two-hop candidates by degree product. Ties go to the smaller internal id.
    A query expands its neighbours' neighbourhoods: :math:`O(\\sum_{w \\in \\Gamma(u)} d(w))`.
    Queries run in parallel on numba's threads, each with dense scratch over the nodes it
    touches (at most 24 bytes per node per thread, faulted in as touched).

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    nodes : array-like, optional
        The query nodes (original ids); default every node.
    k : int, default 10
        Candidates per node (fewer where fewer nodes are two hops away).
    method : str, default "jaccard"
        As for :func:`link_scores`.
    edge_set : str, optional
        The edge set.
    internal : bool, default False
        ``nodes`` are internal ids.
    %(progress)s
    %(execution)s

    Returns
    -------
    TopLinks

    Raises
    ------
    ParameterError
        An unknown method or a negative ``k``.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import top_links
    >>> g = graphsys.from_numpy([0, 0, 1, 2, 3], [1, 2, 2, 3, 4], tempfile.mkdtemp() + "/g",
    ...                         undirected=True)
    >>> list(top_links(g, [0, 4], k=2, method="common"))
    [(0, 3, 1.0), (4, 2, 1.0)]
    """
    code = _method(method)
    k, internal = check_count("k", k, minimum=0), check_flag("internal", internal)
    ex = Execution.of(execution, progress=progress).in_memory("top_links", "distributed")
    progress, view = ex.progress, undirected_view(graph, edge_set, ex.memory_limit)
    n = view.num_nodes
    k = min(k, max(n - 1, 0))  # no more candidates exist (k = 10**9 failed to allocate)
    queries = (np.arange(n, dtype=np.int64) if nodes is None
               else internal_ids(graph, nodes, "nodes", internal=internal))
    q = len(queries)
    out_nodes = np.full((q, k), -1, np.int64)
    out_scores = np.full((q, k), np.nan, np.float64)
    counts = np.zeros(q, np.int64)
    if q:
        scratch = ks.top_k_scratch(numba.get_num_threads(), n, k, view.bound)
        with display(progress, total=q, unit="node", desc=f"top-{k} {method}") as bar:
            for lo in range(0, q, TOP_CHUNK):
                hi = min(lo + TOP_CHUNK, q)
                ks.top_k(queries[lo:hi], k, *view.args(), code, view.memo, scratch,
                         out_nodes[lo:hi], out_scores[lo:hi], counts[lo:hi])
                bar.update(hi - lo)
    keep = np.arange(k)[None, :] < counts[:, None]
    src = np.repeat(queries, counts)
    dst = out_nodes[keep]
    return TopLinks(view.original(src), view.original(dst), out_scores[keep], src, dst,
                    method)
