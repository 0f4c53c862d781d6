"""Degree statistics and distribution, density, reciprocity and degree assortativity, with
NetworkX's conventions.

Degrees count edge ends as stored: in an edge set ingested ``undirected`` (both directions
stored, a self-loop once) a node's degree is ``G.degree`` of the NetworkX graph, a self-loop
counting twice; in a directed one, out- and in-degree are ``G.out_degree``/``G.in_degree``
and ``"both"`` their sum. Parallel edges (an ingest without ``dedupe``) count with their
multiplicity, as in a NetworkX multigraph. Degrees, density and assortativity stream the
edge buckets once (no CSR); reciprocity reads the sorted rows (the stored adjacency index,
or a CSR/CSC built once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphsys import views
from graphsys.errors import ParameterError, check_flag
from graphsys.measures import kernels_degrees as kg
from graphsys.measures.view import undirected_view

#: The percentiles :class:`DegreeStats` reports.
PERCENTILES = (50, 90, 99, 99.9)


@dataclass
class _Counts:
    out: np.ndarray
    inn: np.ndarray
    loops: np.ndarray
    undirected: bool

    def degree(self, direction: str) -> np.ndarray:
        if self.undirected:
            return self.out + self.loops  # a stored self-loop is one of its two ends
        if direction == "out":
            return self.out
        if direction == "in":
            return self.inn
        return self.out + self.inn


def _counts(graph, edge_set: str | None) -> _Counts:
    es = views.one_type(graph, "a measure").edge_set(edge_set)
    n = graph.num_nodes()
    out, inn, loops = (np.zeros(n, np.int64) for _ in range(3))
    for s, d, _, _ in graph.iter_edges(es.name):
        kg.count_batch(s, d, out, inn, loops)
    return _Counts(out, inn, loops, bool(es.undirected))


def _direction(direction: str) -> str:
    if direction not in ("out", "in", "both"):
        raise ParameterError("direction", f"must be out, in or both, got {direction!r}")
    return direction


@dataclass
class DegreeStats:
    """Degree statistics of one edge set, from :func:`degree_stats`.

    Attributes
    ----------
    direction : str
        ``out``, ``in`` or ``both`` (``both`` for an undirected edge set).
    num_nodes, num_edges : int
        Nodes, and edges as NetworkX counts them (an undirected edge once).
    min, max : int
        Smallest and largest degree.
    mean, median, std : float
        Mean, median and (population) standard deviation.
    percentiles : dict of float to float
        The :data:`PERCENTILES` of the degrees (linear interpolation).
    isolated : int
        Nodes of degree 0.
    self_loops : int
        Self-loops.
    histogram : numpy.ndarray
        int64 (max + 1,): ``histogram[d]`` nodes of degree ``d`` (``nx.degree_histogram``).

    Examples
    --------
    The in-degrees of 0 -> 1, 2, 3 and 1 -> 2, with node 4 isolated:

    >>> import tempfile, graphsys
    >>> from graphsys.measures import degree_stats
    >>> g = graphsys.from_numpy([0, 0, 0, 1], [1, 2, 3, 2], tempfile.mkdtemp() + "/g", num_nodes=5)
    >>> s = degree_stats(g, direction="in")
    >>> s.direction, s.max, s.median, s.percentiles[90], round(s.std, 3)
    ('in', 2, 1.0, 1.6, 0.748)
    >>> degrees, nodes = s.distribution()
    >>> degrees.tolist(), nodes.tolist()
    ([0, 1, 2], [2, 2, 1])
    """

    direction: str
    num_nodes: int
    num_edges: int
    min: int
    max: int
    mean: float
    median: float
    std: float
    percentiles: dict = field(default_factory=dict)
    isolated: int = 0
    self_loops: int = 0
    histogram: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """(degrees, node counts) of the degrees that occur, ascending."""
        d = np.flatnonzero(self.histogram)
        return d, self.histogram[d]

    def to_dict(self) -> dict:
        """JSON-able: every field, the histogram as ``distribution`` pairs
        ``[[degree, nodes], ...]`` of the degrees that occur."""
        d, c = self.distribution()
        return {"direction": self.direction, "nodes": self.num_nodes,
                "edges": self.num_edges, "min": self.min, "max": self.max,
                "mean": self.mean, "median": self.median, "std": self.std,
                "percentiles": {str(k): v for k, v in self.percentiles.items()},
                "isolated": self.isolated, "self_loops": self.self_loops,
                "distribution": np.column_stack([d, c]).tolist()}


def degree_stats(graph, direction: str = "both", *, edge_set: str | None = None
                 ) -> DegreeStats:
    """Degree statistics and the degree distribution of an edge set (one pass over it).

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    direction : {"both", "out", "in"}, default "both"
        For a directed edge set, which degree (``both``: out + in, NetworkX's
        ``G.degree`` of a ``DiGraph``); an undirected one has only the one degree.
    edge_set : str, optional
        The edge set.

    Returns
    -------
    DegreeStats

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import degree_stats
    >>> g = graphsys.from_numpy([0, 0, 0, 1], [1, 2, 3, 2], tempfile.mkdtemp() + "/g",
    ...                         num_nodes=5, undirected=True)
    >>> s = degree_stats(g)
    >>> s.num_edges, s.min, s.max, s.mean, s.isolated, s.histogram.tolist()
    (4, 0, 3, 1.6, 1, [1, 1, 2, 1])
    """
    direction = _direction(direction)
    return _stats(_counts(graph, edge_set), direction)


def _stats(counts: _Counts, direction: str) -> DegreeStats:
    deg = counts.degree(direction)
    n = len(deg)
    loops = int(counts.loops.sum())
    stored = int(counts.out.sum())
    m = (stored + loops) // 2 if counts.undirected else stored
    if n == 0:
        return DegreeStats("both" if counts.undirected else direction, 0, m, 0, 0, 0.0, 0.0,
                           0.0)
    hist = np.bincount(deg)
    pct = np.percentile(deg, PERCENTILES)
    return DegreeStats(
        "both" if counts.undirected else direction, n, m, int(deg.min()), int(deg.max()),
        float(deg.mean()), float(np.median(deg)), float(deg.std()),
        {p: float(v) for p, v in zip(PERCENTILES, pct)}, int(hist[0]), loops, hist)


def density(graph, *, edge_set: str | None = None) -> float:
    """Edges over possible edges, as ``nx.density``: ``2m / (n (n - 1))`` undirected,
    ``m / (n (n - 1))`` directed, 0 for fewer than two nodes or no edges; ``m`` counts
    self-loops (and parallel edges, see the module docstring).

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    edge_set : str, optional
        The edge set.

    Returns
    -------
    float

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import density
    >>> g = graphsys.from_numpy([0, 1], [1, 2], tempfile.mkdtemp() + "/g", undirected=True)
    >>> density(g)
    0.6666666666666666
    """
    es = graph.edge_set(edge_set)
    n = graph.num_nodes()
    if es.undirected:
        loops = sum(int(np.count_nonzero(s == d))
                    for s, d, _, _ in graph.iter_edges(es.name))
        m = (es.num_edges + loops) // 2
    else:
        m = es.num_edges
    if n <= 1 or m == 0:
        return 0.0
    return (2.0 if es.undirected else 1.0) * m / (n * (n - 1))


def _reciprocal(graph, edge_set: str | None) -> list[np.ndarray]:
    """Per node (:func:`~graphsys.measures.kernels_degrees.reciprocal_counts`): distinct
    successors and predecessors, the nodes that are both, and whether it has a self-loop."""
    view = undirected_view(graph, edge_set)
    arrs = [np.zeros(view.num_nodes, np.int64) for _ in range(4)]
    es = graph.edge_set(edge_set)
    if view.sym and not es.undirected:  # a stored sym index: the view lost the directions
        out, inn = views.view(graph, "out", edge_set=es.name), views.view(graph, "in",
                                                                          edge_set=es.name)
        kg.reciprocal_counts(out.indptr, out.indices, inn.indptr, inn.indices, *arrs)
    elif view.sym:  # every edge has its reverse: rows in = rows out
        kg.reciprocal_counts(view.optr, view.oidx, view.optr, view.oidx, *arrs)
    else:
        kg.reciprocal_counts(view.optr, view.oidx, view.iptr, view.iidx, *arrs)
    return arrs


def reciprocity(graph, nodes=None, *, edge_set: str | None = None, internal: bool = False):
    """The share of edges whose reverse edge exists, as ``nx.reciprocity``.

    Overall (``nodes`` None): reciprocated edges over edges, each ``u -> v`` counted once
    whatever its multiplicity, a self-loop unreciprocated (``nx.overall_reciprocity``); 1.0
    for an undirected edge set (every edge has its reverse, as igraph says; NetworkX
    refuses undirected graphs), NaN for one without edges. Per node ``u``:
    ``2 |succ(u) & pred(u)| / (|succ(u)| + |pred(u)|)``, ``u`` itself in both when it has a
    self-loop, NaN for a node without edges (NetworkX raises there).

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    nodes : array-like, optional
        Original ids (internal ids when ``internal``) for per-node values.
    edge_set : str, optional
        The edge set.
    internal : bool, default False
        ``nodes`` are internal ids.

    Returns
    -------
    float or numpy.ndarray
        The overall share, or float64 per node of ``nodes``.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import reciprocity
    >>> g = graphsys.from_numpy([0, 1, 1], [1, 0, 2], tempfile.mkdtemp() + "/g")
    >>> reciprocity(g), reciprocity(g, [1]).tolist()
    (0.6666666666666666, [0.6666666666666666])
    """
    from graphsys.measures.view import internal_ids

    internal = check_flag("internal", internal)
    out, inn, overlap, loop = _reciprocal(graph, edge_set)
    if nodes is None:
        total = int(out.sum())
        if total == 0:
            return float("nan")
        if graph.edge_set(edge_set).undirected:
            return 1.0
        return float((overlap - loop).sum()) / total
    idx = internal_ids(graph, nodes, "nodes", internal=internal)
    both = out[idx] + inn[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(both > 0, 2.0 * overlap[idx] / both, np.nan)


def degree_assortativity(graph, x: str = "out", y: str = "in", *,
                         edge_set: str | None = None) -> float:
    """The Pearson correlation of the degrees at the two ends of the edges, as
    ``nx.degree_assortativity_coefficient`` [1]_.

    Each stored edge ``u -> v`` gives the pair (x-degree of ``u``, y-degree of ``v``); an
    undirected edge gives both of its directions and plain degrees (``x``, ``y`` ignored),
    a self-loop one pair. Two passes: node sums for the means and variances, one stream of
    the edges for the centred cross products.

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    x, y : {"out", "in", "both"}, default "out", "in"
        The degree of the source and of the target (directed edge sets).
    edge_set : str, optional
        The edge set.

    Returns
    -------
    float
        In [-1, 1]; NaN when either side's degrees do not vary (NetworkX divides by zero).

    References
    ----------
    .. [1] M. E. J. Newman, "Mixing patterns in networks", Physical Review E 67, 026126,
       2003.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.measures import degree_assortativity
    >>> g = graphsys.from_numpy([0, 0, 0, 1], [1, 2, 3, 2], tempfile.mkdtemp() + "/g",
    ...                         undirected=True)
    >>> round(degree_assortativity(g), 6)
    -0.714286
    """
    x, y = _direction(x), _direction(y)
    es = graph.edge_set(edge_set)
    counts = _counts(graph, es.name)
    dx = counts.degree(x).astype(np.float64)
    dy = counts.degree(y).astype(np.float64)
    edges = int(counts.out.sum())
    if edges == 0:
        return float("nan")
    # the pairs' x side: each node once per stored out-edge; y side once per in-edge
    mx = float(counts.out @ dx) / edges
    my = float(counts.inn @ dy) / edges
    varx = float(counts.out @ (dx - mx) ** 2)
    vary = float(counts.inn @ (dy - my) ** 2)
    cov = sum(kg.centred_products(s, d, dx, dy, mx, my)
              for s, d, _, _ in graph.iter_edges(es.name))
    if varx <= 0 or vary <= 0:
        return float("nan")
    return float(cov / np.sqrt(varx * vary))
