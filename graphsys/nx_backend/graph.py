"""The graph the graphsys backend hands its functions: a stored graphsys
:class:`~graphsys.storage.graph.Graph` and the NetworkX node keys of its nodes."""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile
import weakref
from fractions import Fraction
from operator import itemgetter
from typing import Any

import numba
import numpy as np

from graphsys.errors import GraphsysError
from graphsys.kernels.arrays import read_only


class BackendGraph:
    """A graphsys graph as NetworkX's dispatcher sees it (``__networkx_backend__``).

    Made by :func:`from_networkx` (a NetworkX graph converted into arrays in memory, node
    ``i`` of ``list(G)`` at internal id ``i``; a temporary graph directory written from
    them only when a function asks for :attr:`graph`) or :func:`from_graph` (a stored
    graph, keyed by its original ids). Pass one to any dispatched NetworkX function to run
    graphsys on it without a conversion.

    Attributes
    ----------
    graph : Graph or None
        The stored graph (None without nodes); for a conversion, written on first use
        (:attr:`in_memory` until then).
    keys : list
        NetworkX node key of each internal id.
    directed : bool
        Whether it stands for a ``DiGraph`` (a ``Graph`` is stored undirected).
    weight : str or None
        The edge attribute stored as the edge weight, if any.

    Examples
    --------
    A NetworkX graph converted (as dispatch does), then passed to a backend function:

    >>> import networkx as nx
    >>> from graphsys.nx_backend import BackendInterface
    >>> G = BackendInterface.convert_from_nx(nx.path_graph(4))
    >>> type(G).__name__, G.directed, G.keys, G.weight
    ('BackendGraph', False, [0, 1, 2, 3], None)
    >>> BackendInterface.shortest_path_length(G, 0, 3)
    3
    """

    __networkx_backend__ = "graphsys"

    def __init__(self, graph, keys: list, directed: bool, weight: str | None,
                 exact_weights: bool = True):
        self._graph, self.keys, self.directed, self.weight = graph, keys, directed, weight
        #: A conversion's edges not yet written as a graph directory: ``(src, dst, w,
        #: dir)`` by internal id (each edge once), see :attr:`graph`
        self._pending: tuple | None = None
        #: Whether every weight was stored exactly (graphsys stores float32): sums of them
        #: (path lengths) then equal NetworkX's float64 ones
        self.exact_weights = exact_weights
        #: Whether every weight is a Python int (a conversion's): NetworkX's sums of them,
        #: path lengths, are ints
        self.integral = False
        self._index: dict | None = None
        #: What :meth:`refresh` compares: the NetworkX graph converted (a weak reference),
        #: the weight attribute and default asked for, the weights read and, for a view,
        #: a digest of its nodes and edges
        self._source: Source | None = None
        #: Arrays read once per conversion (:meth:`adjacency`, :meth:`degree`); replaced
        #: with the rest of the graph's state by :meth:`refresh`
        self._cache: dict = {}

    def refresh(self) -> None:
        """Convert again, in place, when the NetworkX graph this was converted from
        changed since: NetworkX keeps the conversion in ``G.__networkx_cache__``, which
        its methods (``add_edge``, ...) clear but an edit of an edge attribute
        (``G.edges[u, v]["weight"] = x``) or of a view's underlying graph does not.

        Raises
        ------
        NotImplementedError
            The graph now holds weights graphsys cannot store (NetworkX then runs the
            call itself, see :func:`edge_weights`).
        """
        source = self._source
        G = source.graph() if source is not None else None
        if G is None or source.same(G):
            return
        fresh = from_networkx(G, source.weight, source.default, dir=source.dir)
        self.__dict__.update(fresh.__dict__)

    @property
    def graph(self):
        """The stored graph: a conversion's edges are written into a temporary graph
        directory (removed with the graph) the first time a function asks for it."""
        if self._graph is None and self._pending is not None:
            src, dst, w, dir = self._pending
            self._graph = _ingest(src, dst, len(self.keys), w, self.directed, dir)
            self._pending = None
        return self._graph

    @graph.setter
    def graph(self, graph) -> None:
        self._graph, self._pending = graph, None

    @property
    def null(self) -> bool:
        """Whether there is no graph at all (no nodes): neither stored nor in memory."""
        return self._graph is None and self._pending is None

    @property
    def in_memory(self) -> bool:
        """Whether this conversion's edges are still only in memory (no graph directory
        written yet): the functions that read :meth:`adjacency` run on them as they are."""
        return self._graph is None and self._pending is not None

    @property
    def converted(self) -> bool:
        """Whether this is a conversion of a NetworkX graph (which NetworkX can run a
        declined call on), not a stored graph of :func:`from_graph`."""
        return self._source is not None

    def is_directed(self) -> bool:
        return self.directed

    def weighted(self, weight) -> bool:
        """Whether a function's ``weight`` argument names the stored weights. Another
        attribute (``weight="cost"`` on a stored graph whose weights are ``weight``) is
        held by no edge, so NetworkX weighs every edge 1, as None does."""
        return weight is not None and weight == self.weight

    def length_type(self, weight) -> type:
        """The type of NetworkX's path lengths over ``weight``: int for hops or Python int
        weights, else float."""
        return float if self.weighted(weight) and not self.integral else int

    def is_multigraph(self) -> bool:
        return False

    def parallel_edges(self) -> bool:
        """Whether a stored graph (:func:`from_graph`) holds some pair more than once, which
        NetworkX reads as one edge (:meth:`BackendInterface.convert_to_nx
        <graphsys.nx_backend.BackendInterface.convert_to_nx>` builds a simple graph):
        graphsys's kernels would count it twice, so its calls are declined. Found once per
        graph, in one pass over its out-rows, unless its one edge set was ingested with
        ``dedupe``; a conversion of a NetworkX graph has none."""
        if self.converted or self.null:
            return False
        if "parallel" not in self._cache:
            self._cache["parallel"] = _has_parallel_edges(self.graph)
        return self._cache["parallel"]

    def number_of_nodes(self) -> int:
        return len(self.keys)

    def number_of_edges(self) -> int:
        if self.in_memory:
            return len(self._pending[0])
        if self.graph is None:
            return 0
        from graphsys.measures import degree_stats

        return degree_stats(self.graph).num_edges

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self):
        return iter(self.keys)

    def __contains__(self, key) -> bool:
        try:
            return key in self.index
        except TypeError:  # unhashable
            return False

    @property
    def index(self) -> dict:
        """NetworkX node key -> internal id."""
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index

    def internal(self, keys) -> np.ndarray:
        """Internal ids of NetworkX node keys (KeyError for a key not in the graph)."""
        index = self.index
        return np.fromiter((index[k] for k in keys), np.int64)

    def adjacency(self, transpose: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` of every node's out-neighbours (in-neighbours with
        ``transpose``) by internal id, int64 (an undirected graph's neighbours either way;
        a self-loop once); read-only views (:mod:`graphsys.kernels.arrays`), so a kernel
        compiles once for in-memory and stored graphs."""
        key = ("adjacency", transpose and self.directed)
        if key not in self._cache and self.in_memory:
            self._cache[key] = read_only(*_csr(self._pending, len(self), key[1],
                                               not self.directed, weights=False)[:2])
        if key not in self._cache:
            if self.graph is None:
                out = np.zeros(len(self) + 1, np.int64), np.zeros(0, np.int64)
            else:
                c = (self.graph.csc if key[1] else self.graph.csr)(weights=False)
                out = np.asarray(c.indptr, np.int64), np.asarray(c.indices, np.int64)
            self._cache[key] = read_only(*out)
        return self._cache[key]

    def degree(self, direction: str = "both") -> np.ndarray:
        """NetworkX's degree of every node by internal id: ``"out"``, ``"in"`` or
        ``"both"`` (their sum) of a directed graph; of an undirected one, its neighbours
        with a self-loop counted twice, whatever ``direction``."""
        if not self.directed:
            indptr, indices = self.adjacency()
            rows = np.repeat(np.arange(len(self)), np.diff(indptr))
            return np.diff(indptr) + np.bincount(rows[rows == indices], minlength=len(self))
        out = np.diff(self.adjacency()[0])
        into = np.diff(self.adjacency(transpose=True)[0])
        return {"out": out, "in": into}.get(direction, out + into)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Each edge once (an undirected edge as ``u <= v``), as internal ids."""
        indptr, indices = self.adjacency()
        rows = np.repeat(np.arange(len(self)), np.diff(indptr))
        keep = slice(None) if self.directed else rows <= indices
        return rows[keep], indices[keep]

    def node_dict(self, values) -> dict:
        """``{key: value}`` for every node, values as Python scalars."""
        return dict(zip(self.keys, np.asarray(values).tolist()))

    def __repr__(self) -> str:
        return (f"BackendGraph({'directed' if self.directed else 'undirected'}, "
                f"{len(self.keys)} nodes, "
                f"{'in memory' if self.in_memory else repr(self._graph)})")


def _has_parallel_edges(graph) -> bool:
    """Whether a pair repeats among the stored graph's edges (the default view): a row of
    its out-rows (mapped, or built within the RAM available) holding a neighbour twice."""
    es = graph.edge_set()
    if es.dedupe and not es.members:
        return False
    c = graph.csr(weights=False)
    return bool(_row_repeats(c.indptr, c.indices))


@numba.njit(cache=True)
def _row_repeats(indptr, indices) -> bool:
    """Whether some row holds a neighbour twice: adjacent entries compared where the row
    ascends, else in a sorted copy of the row (no per-edge array: scratch of the widest
    row)."""
    widest = 0
    for r in range(len(indptr) - 1):
        widest = max(widest, indptr[r + 1] - indptr[r])
    scratch = np.empty(widest, indices.dtype)
    for r in range(len(indptr) - 1):
        lo, hi = indptr[r], indptr[r + 1]
        ascending = True
        for k in range(lo + 1, hi):
            if indices[k] == indices[k - 1]:
                return True
            ascending = ascending and indices[k] > indices[k - 1]
        if not ascending:
            row = scratch[:hi - lo]
            row[:] = indices[lo:hi]
            row.sort()
            for k in range(1, hi - lo):
                if row[k] == row[k - 1]:
                    return True
    return False


def from_graph(graph, *, edge_set: str | None = None) -> BackendGraph:
    """A stored graph for NetworkX's dispatcher: keyed by original ids, directed unless
    its edge set was ingested ``undirected``, weighted when it has weights. NetworkX reads
    it as a simple graph: where a pair is stored more than once (an ingest without
    ``dedupe``), graphsys declines its calls (:meth:`BackendGraph.parallel_edges`).

    With graphsys installed as a NetworkX backend, ``nx.pagerank(from_graph(g))`` runs
    graphsys's PageRank on the stored graph, results keyed by original ids.

    Parameters
    ----------
    graph : Graph, str or path-like
        An opened graph, or the directory of one.
    edge_set : str, optional
        The edge set (a graph of one edge set only); None: the default view.

    Raises
    ------
    ParameterError
        ``graph`` is neither a graphsys graph nor a path.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.nx_backend import BackendInterface, from_graph
    >>> g = graphsys.from_numpy([1, 2, 3], [2, 3, 1], tempfile.mkdtemp() + "/g")
    >>> G = from_graph(g)
    >>> G.is_directed(), list(G)
    (True, [1, 2, 3])
    >>> {k: round(v, 3) for k, v in BackendInterface.pagerank(G).items()}
    {1: 0.333, 2: 0.333, 3: 0.333}
    """
    from graphsys.storage.graph import Graph, open_graph
    from graphsys.views.limits import one_type

    if not isinstance(graph, Graph):
        if not (isinstance(graph, str) or hasattr(graph, "__fspath__")):
            from graphsys.errors import ParameterError

            kind = type(graph)
            raise ParameterError("graph", f"must be a graphsys Graph or a graph directory, "
                                          f"got {kind.__module__}.{kind.__qualname__}")
        graph = open_graph(graph)
    # several entity types: node_ids() said "name one", which from_graph cannot
    one_type(graph, "the NetworkX backend")
    if edge_set is not None and len(graph.edge_sets) > 1:
        raise GraphsysError("from_graph: a graph with several edge sets is not supported")
    es = graph.edge_set(edge_set)
    ids = graph.node_ids()
    keys = ids.tolist() if isinstance(ids, np.ndarray) else ids.to_pylist()
    return BackendGraph(graph, keys, not es.undirected, "weight" if es.has_weight else None)


class Source:
    """The NetworkX graph a :class:`BackendGraph` was converted from and what was read of
    it: the weights (Python values, as the edges held them) and, for a view (whose cache
    NetworkX does not clear when the graph under it changes), a digest of its nodes and
    edges."""

    def __init__(self, G, weight: str | None, default: Any, values: list | None,
                 dir: str | None):
        self.graph = weakref.ref(G)
        self.weight, self.default, self.values, self.dir = weight, default, values, dir
        self.digest = _digest(G)

    def same(self, G) -> bool:
        """Whether ``G`` still holds what was converted (one pass over its edges when
        weights were read; a view's nodes and edges once more)."""
        if self.digest is not None and _digest(G) != self.digest:
            return False
        try:
            return self.weight is None or (_values(G, self.weight, self.default) == self.values
                                           and not _two_weights(G, self.weight, self.default))
        except (TypeError, ValueError):  # a value whose == is no bool (an array): changed
            return False


def _digest(G) -> int | None:
    """A hash of a view's nodes and edges (None for a graph that is no view: NetworkX
    clears its cache on every change of its nodes or edges)."""
    if getattr(G, "_graph", None) is None:
        return None
    return hash((tuple(G), tuple(G.edges())))


def _values(G, weight: str, default: Any) -> list:
    return [value for _, _, value in G.edges(data=weight, default=default)]


def _edge_list(G, weight: str | None, default: Any) -> tuple[list, list | None]:
    """``G``'s edges in one pass (``G.edges()``'s order): ``(u, v)`` or, given ``weight``,
    ``(u, v, value)`` tuples (``default`` where an edge has none), and the values."""
    if weight is None:
        return [e for e in G.edges()], None  # (a comprehension: list() would count first)
    edges = [e for e in G.edges(data=weight, default=default)]
    return edges, [e[2] for e in edges]


#: The positive magnitudes a float32 weight holds with float32's full precision (graphsys
#: stores float32 weights): a smaller one is subnormal or 0, a larger one infinite.
FLOAT32_RANGE = (float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max))


def edge_weights(values: list) -> np.ndarray:
    """Edge weights (Python values) as float64, when graphsys can store each as float32
    without changing the answer: real numbers, finite, non-negative (the walks and paths
    of the dispatched functions refuse negative weights) and 0 or of a magnitude between
    :data:`FLOAT32_RANGE`.

    Raises
    ------
    NotImplementedError
        Naming the first weight that is not, so that NetworkX runs the call itself (its
        answer or its own exception).
    """
    for kind in set(map(type, values)):
        if not issubclass(kind, numbers.Real):
            bad = next(v for v in values if type(v) is kind)
            raise NotImplementedError(f"graphsys: a weight {bad!r} is not a real number")
    try:
        w = np.array(values, np.float64)
    except (OverflowError, TypeError, ValueError):
        raise NotImplementedError("graphsys: a weight does not fit a float64") from None
    lo, hi = FLOAT32_RANGE
    bad = ~((w == 0) | ((w >= lo) & (w <= hi)))  # NaN, inf, negative, out of float32
    if bad.any():
        raise NotImplementedError(f"graphsys: a weight of {values[int(np.argmax(bad))]!r} "
                                  f"is not stored (weights are float32, finite and "
                                  f"non-negative)")
    return w


def _exact(values: list, w: np.ndarray) -> bool:
    """Whether float32 holds every weight exactly: its float64 ``w`` and, for a weight that
    is no float (an int beyond 2**53, a Fraction), the value itself (2**60 + 1 is 2**60 in
    float64, which float32 holds: its path lengths were 1 short of NetworkX's exact
    ones). Where a weight is no float, NetworkX's sums of them are exact too, so float64
    must hold every sum of weights as well: the sum of all of them, counted in the
    largest power of two every weight is a multiple of, within 2**53 (2**70 and 4 are each
    exact, but the distance 2**70 + 4 summed in float64 was 4 short)."""
    if not np.all(w.astype(np.float32) == w):
        return False
    if all(type(v) is float for v in values):
        return True  # NetworkX sums floats in float64 too
    if not all(v == x for v, x in zip(values, w.tolist()) if type(v) is not float):
        return False
    if np.all(w == np.rint(w)) and w.sum() <= 2.0**52:
        return True  # integers, their float64 sum well within 2**53
    parts = [Fraction(x) for x in w.tolist() if x]  # each a dyadic rational, exactly
    unit = min((Fraction(p.numerator & -p.numerator, p.denominator) for p in parts),
               default=1)
    return sum(parts) <= unit * 2**53


def memory_dir() -> str | None:
    """Where converted graphs go: ``nx.config.backends.graphsys.tmpdir`` when set, else
    ``/dev/shm`` (memory: no disk writes, no fsync wait) when it is a writable directory,
    else the system's temporary directory (None).

    Raises
    ------
    ParameterError
        ``tmpdir`` is set but is no writable directory (a raw ``FileNotFoundError``
        naming no path before).
    """
    import networkx as nx

    chosen = nx.config.backends.graphsys.get("tmpdir")
    if chosen:
        if not (isinstance(chosen, str) or hasattr(chosen, "__fspath__")) or \
                not os.path.isdir(chosen) or not os.access(chosen, os.W_OK | os.X_OK):
            from graphsys.errors import ParameterError

            raise ParameterError("nx.config.backends.graphsys.tmpdir",
                                 f"must be a writable directory, got {chosen!r}")
        return os.fspath(chosen)
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _two_weights(G, weight: str, default: Any) -> bool:
    """Whether ``G`` is an undirected view over a directed graph
    (``D.to_undirected(as_view=True)``, or a view of one) with an edge that weighs
    differently from its two ends: its row of ``u`` holds ``u -> v``'s attributes and its
    row of ``v`` ``v -> u``'s, and NetworkX reads an edge's weight from the end it leaves."""
    seen = G
    while not G.is_directed() and (seen := getattr(seen, "_graph", None)) is not None:
        if seen.is_directed():
            return any((x := G[v][u].get(weight, default)) is not w and x != w
                       for u, v, w in G.edges(data=weight, default=default))
    return False


def from_networkx(G, weight: str | None, default: Any = 1, *,
                  dir: str | None = None) -> BackendGraph:
    """``G`` as graphsys's arrays: node ``i`` of ``list(G)`` at internal id ``i``, each
    edge once by internal ids, ``weight`` (an edge attribute, ``default`` where missing)
    as the weights. Functions that read the adjacency (:meth:`BackendGraph.adjacency`:
    CSR built in memory) run on these; the first that asks for the stored graph
    (:attr:`BackendGraph.graph`) writes them into a temporary graph directory (under
    ``dir``, default :func:`memory_dir`; removed with the returned graph): one partition,
    a ``Graph`` stored undirected.

    The returned graph remembers ``G`` (:meth:`BackendGraph.refresh`): a call on the
    conversion NetworkX cached converts again where ``G``'s weights (or a view's nodes
    and edges) changed since.

    Raises
    ------
    NotImplementedError
        A multigraph, weights graphsys cannot store (:func:`edge_weights`), or an
        undirected view of a DiGraph whose edge weighs differently from each end
        (:func:`_two_weights`): NetworkX then runs the call itself, where falling back
        is allowed.
    """
    if G.is_multigraph():
        raise NotImplementedError("graphsys: multigraphs are not supported")
    edges, values = _edge_list(G, weight, default)
    if values and _two_weights(G, weight, default):
        raise NotImplementedError("graphsys: an undirected view of a DiGraph whose edge "
                                  "holds another weight at each end")
    w = edge_weights(values) if values else None
    exact = w is None or _exact(values, w)
    if exact and w is not None and np.all(w == 1.0):
        w = None  # all ones: the same as no weights (and the unweighted fast paths)
    keys = list(G)
    out = BackendGraph(None, keys, G.is_directed(), weight if w is not None else None,
                       exact)
    out.integral = w is not None and all(type(v) is int for v in values)
    if keys:
        index = {k: i for i, k in enumerate(keys)}.__getitem__
        m = len(edges)
        src = np.fromiter(map(index, map(itemgetter(0), edges)), np.int64, m)
        dst = np.fromiter(map(index, map(itemgetter(1), edges)), np.int64, m)
        out._pending = (src, dst, w, dir)
    out._source = Source(G, weight, default, values, dir)
    return out


def _csr(pending: tuple, n: int, transpose: bool, undirected: bool,
         weights: bool = True) -> tuple:
    """``(indptr, indices, weight or None)`` of a conversion's edges (``pending``:
    ``(src, dst, w, dir)``, each edge once) as the stored graph's CSR holds them: rows by
    internal id, neighbours ascending; ``transpose``: in-neighbours; ``undirected``: both
    directions, a self-loop once."""
    src, dst, w, _ = pending
    if transpose:
        src, dst = dst, src
    if undirected:
        other = src != dst
        src, dst = np.concatenate([src, dst[other]]), np.concatenate([dst, src[other]])
        w = None if w is None else np.concatenate([w, w[other]])
    from graphsys.views.rows import from_pairs

    return from_pairs(n, src, dst, w if weights else None, by=(dst,))


def _ingest(src: np.ndarray, dst: np.ndarray, n: int, w: np.ndarray | None,
            directed: bool, dir: str | None):
    """The edges ``src -> dst`` (internal ids, each edge once) of ``n`` nodes stored in a
    temporary directory, removed with the returned graph."""
    from graphsys.interop._common import ingest_arrays

    root = tempfile.mkdtemp(prefix="graphsys-nx-", dir=dir or memory_dir())
    try:
        g = ingest_arrays(src, dst, f"{root}/g", num_nodes=n, weight=w,
                          metadata={"source": "networkx backend"},
                          options={"undirected": not directed})
    except GraphsysError as exc:  # what graphsys cannot store: NetworkX runs the call
        shutil.rmtree(root, ignore_errors=True)
        raise NotImplementedError(f"graphsys: {exc}") from exc
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    weakref.finalize(g, shutil.rmtree, root, True)  # with the graph, whoever holds it
    return g
