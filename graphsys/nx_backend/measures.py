"""graphsys's measures (:mod:`graphsys.measures`) behind NetworkX's signatures: link
prediction scores, density, reciprocity, degree assortativity, eccentricity, diameter,
radius, center and periphery (hops)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from graphsys import measures, views
from graphsys.nx_backend.algorithms import _nx

#: Pairs scored per call when NetworkX asks for every non-edge (``ebunch=None``).
CHUNK = 1 << 16


def _checked(G, ebunch) -> list | None:
    """``ebunch`` as a list of pairs whose nodes are all in ``G`` (NetworkX checks them
    before it scores any), or None for every non-edge."""
    if ebunch is None:
        return None
    pairs = list(ebunch)
    for u, v in pairs:
        for node in (u, v):
            if node not in G:
                raise _nx().NodeNotFound(f"Node {node} not in G.")
    return pairs


def _pairs(G, pairs) -> Iterator[tuple[list, np.ndarray, np.ndarray]]:
    """(key pairs, first internal ids, second internal ids) in chunks: ``pairs``, or
    every pair of distinct non-adjacent nodes (``nx.non_edges``) when None."""
    if pairs is not None:
        if pairs:
            yield pairs, G.internal([p[0] for p in pairs]), G.internal([p[1] for p in pairs])
        return
    n = len(G)
    if G.null:
        return
    c = views.view(G.graph, "out")
    for u in range(n):
        adjacent = np.zeros(n - u - 1, bool)
        row = np.asarray(c.indices[c.indptr[u]:c.indptr[u + 1]], np.int64)
        row = row[row > u] - u - 1
        adjacent[row] = True
        vs = u + 1 + np.flatnonzero(~adjacent)
        for lo in range(0, len(vs), CHUNK):
            part = vs[lo:lo + CHUNK]
            us = np.full(len(part), u, np.int64)
            yield [(G.keys[u], G.keys[v]) for v in part.tolist()], us, part


def _predict(G, ebunch, method: str, integral: bool = False):
    """The scores of ``ebunch``'s pairs (every non-edge when None), NetworkX's types: the
    int 0 where NetworkX sums no common neighbour (Adamic-Adar, resource allocation) or
    divides none by no union (Jaccard of two isolated nodes), ints with ``integral``."""
    pairs = _checked(G, ebunch)
    isolated = G.degree() == 0 if method == "jaccard" and not G.null else None

    def scores():
        for keys, us, vs in _pairs(G, pairs):
            values = measures.link_scores(G.graph, np.column_stack([us, vs]), method,
                                          internal=True).tolist()
            for (u, v), s, a, b in zip(keys, values, us.tolist(), vs.tolist()):
                if s == np.inf:  # a common neighbour of degree 1: u == v, 1 / log(1)
                    raise ZeroDivisionError("float division by zero")
                if integral or s == 0 and (isolated is None or isolated[a] and isolated[b]):
                    s = int(s)
                yield u, v, s

    return scores()


def _link_prediction(method: str, integral: bool = False):
    """NetworkX's link prediction function ``nx.<name>(G, ebunch=None)`` scoring by
    graphsys's ``method`` (:func:`_predict`)."""

    def scores(G, ebunch=None):
        return _predict(G, ebunch, method, integral)

    return scores


jaccard_coefficient = _link_prediction("jaccard")
adamic_adar_index = _link_prediction("adamic_adar")
resource_allocation_index = _link_prediction("resource_allocation")
# integer products, as NetworkX's
preferential_attachment = _link_prediction("preferential_attachment", integral=True)


def density(G, nodes=None):
    """NetworkX's dispatched ``density``, which is ``nx.bipartite.density(B, nodes)``:
    the edges over ``len(nodes) * (N - len(nodes))`` (twice that on a directed graph),
    0.0 without edges. Without ``nodes`` (a direct call): ``nx.density``'s value,
    graphsys's :func:`graphsys.measures.density`."""
    if nodes is None:
        return 0.0 if G.null else measures.density(G.graph)
    m = len(G.edges()[0])
    nb = len(nodes)
    nt = len(G) - nb
    if m == 0:
        return 0.0
    return m / (2 * nb * nt) if G.directed else m / (nb * nt)


def _nbunch(G, nodes) -> list:
    """The nodes of ``nodes`` (a container of nodes) that are in ``G``, in its order;
    NetworkX's errors (``G.nbunch_iter``) where it is a node not in ``G`` or holds an
    unhashable item."""
    nx = _nx()
    try:
        items = iter(nodes)
    except TypeError:
        raise nx.NetworkXError(f"Node {nodes} is not in the graph.") from None
    index, out = G.index, []
    for k in items:
        try:
            if k in index:
                out.append(k)
        except TypeError:
            raise nx.NetworkXError(f"Node {k} in sequence nbunch is not a valid "
                                   f"node.") from None
    return out


def _ids(G, nodes) -> list[int]:
    """The internal ids ``nodes`` asks for: every node's for None, a node of ``G``'s
    alone, else those of :func:`_nbunch`."""
    if nodes is None:
        return list(range(len(G)))
    if nodes in G:
        return [G.index[nodes]]
    return [G.index[k] for k in _nbunch(G, nodes)]


def overall_reciprocity(G):
    """``nx.overall_reciprocity`` (0 on an undirected graph with edges, as NetworkX's)."""
    if not G.directed and G.number_of_edges() > 0:
        return 0.0
    value = measures.reciprocity(G.graph) if not G.null else float("nan")
    if np.isnan(value):
        raise _nx().NetworkXError("Not defined for empty graphs")
    return value


def reciprocity(G, nodes=None):
    """``nx.reciprocity``: overall, of one node, or a dict over ``nodes``."""
    nx = _nx()
    if nodes is None:
        return overall_reciprocity(G)
    if nodes in G:
        value = float(measures.reciprocity(G.graph, [G.index[nodes]], internal=True)[0])
        if np.isnan(value):
            raise nx.NetworkXError("Not defined for isolated nodes.")
        return value
    keys = _nbunch(G, nodes)
    if G.null:
        return {k: None for k in keys}
    values = measures.reciprocity(G.graph, G.internal(keys), internal=True)
    return {k: (None if np.isnan(v) else v) for k, v in zip(keys, values.tolist())}


def degree_assortativity_coefficient(G, x="out", y="in", weight=None, nodes=None):
    """``nx.degree_assortativity_coefficient`` (and the same Pearson coefficient of
    ``nx.degree_pearson_correlation_coefficient``)."""
    return float("nan") if G.null else measures.degree_assortativity(G.graph, x, y)


def degree_pearson_correlation_coefficient(G, x="out", y="in", weight=None, nodes=None):
    """``nx.degree_pearson_correlation_coefficient``: the coefficient of
    :func:`degree_assortativity_coefficient`, over NetworkX's degree pairs (one per
    out-neighbour entry: each edge of a ``DiGraph``, each direction of a ``Graph``'s edge,
    a self-loop once); fewer than two pairs raise NetworkX's ``ValueError``, as its
    ``scipy.stats.pearsonr`` does."""
    if G.null or len(G.adjacency()[1]) < 2:
        raise ValueError("`x` and `y` must have length at least 2.")
    return degree_assortativity_coefficient(G, x, y, weight, nodes)


def _unweighted(G, weight) -> None:
    if G.weighted(weight):
        raise NotImplementedError("graphsys: weights other than 1 are not supported here")


def _check_connected(G) -> None:
    from graphsys.measures.distance import components
    from graphsys.measures.view import undirected_view

    if len(components(undirected_view(G.graph))[2]) > 1:
        raise _nx().NetworkXError(
            "Found infinite path length because the graph is not connected")


def _eccentricities(G, weight) -> np.ndarray:
    _unweighted(G, weight)
    if G.null:
        return np.zeros(0, np.int64)
    _check_connected(G)
    return measures.eccentricity(G.graph).values


def eccentricity(G, v=None, sp=None, weight=None):
    """``nx.eccentricity``: of one node, or a dict over ``v`` (default every node; nodes
    of ``v`` not in ``G`` left out, none left: an empty dict)."""
    keys = None if v is None or v in G else _nbunch(G, v)
    if keys == []:
        return {}
    ecc = _eccentricities(G, weight)
    if v is None:
        return G.node_dict(ecc)
    if keys is None:
        return int(ecc[G.index[v]])
    return {k: int(ecc[G.index[k]]) for k in keys}


def diameter(G, e=None, usebounds=False, weight=None):
    """``nx.diameter`` (iFUB; connected undirected graphs, as NetworkX requires)."""
    _unweighted(G, weight)
    if G.null:
        raise ValueError("max() iterable argument is empty")
    _check_connected(G)
    return measures.diameter(G.graph, exact=True).value


def radius(G, e=None, usebounds=False, weight=None):
    """``nx.radius``."""
    return int(_eccentricities(G, weight).min())


def center(G, e=None, usebounds=False, weight=None):
    """``nx.center`` (of the null graph: ``NetworkXPointlessConcept`` unweighted and
    without ``usebounds``, as NetworkX's tree test raises, else ``ValueError``)."""
    if len(G) == 0 and weight is None and usebounds is not True:
        raise _nx().NetworkXPointlessConcept("G has no nodes.")
    ecc = _eccentricities(G, weight)
    return [G.keys[i] for i in np.flatnonzero(ecc == ecc.min()).tolist()]


def periphery(G, e=None, usebounds=False, weight=None):
    """``nx.periphery``."""
    ecc = _eccentricities(G, weight)
    return [G.keys[i] for i in np.flatnonzero(ecc == ecc.max()).tolist()]
