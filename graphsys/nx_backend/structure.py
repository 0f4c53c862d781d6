"""NetworkX's structural tests over graphsys's components (:func:`graphsys.bsp.wcc`,
:func:`graphsys.bsp.scc` and the condensation of
:func:`graphsys.nx_backend.algorithms.condensation`): directed acyclic graphs, trees and
forests, attracting components, semiconnectedness, flow hierarchy and Kosaraju's
components; and the graph-returning k-core family and ego graphs, whose nodes graphsys
chooses (core numbers, BFS distances) and whose subgraph is NetworkX's
``G.subgraph(nodes).copy()`` of the graph converted (every attribute kept)."""

from __future__ import annotations

import numpy as np

from graphsys.nx_backend.algorithms import (
    _count,
    _is_connected,
    _labels,
    _nx,
    _parts,
    _scc_labels,
    condensation,
    single_source_shortest_path_length,
)
from graphsys.nx_backend.algorithms import (
    core_number as _core_numbers,
)


def is_directed_acyclic_graph(G):
    """``nx.is_directed_acyclic_graph``: directed, every strongly connected component a
    single node and no self-loop."""
    if not G.directed:
        return False
    if G.null:
        return True
    rows, cols = G.edges()
    return _count(G, _scc_labels(G)) == len(G) and not (rows == cols).any()


def is_bipartite(G):
    """``nx.is_bipartite``: a breadth-first search from each component's first node
    (graphsys's BFS kernel, :func:`graphsys.kernels.bfs.search`, over the undirected view
    of a directed graph); bipartite when no edge joins two nodes at distances of the same
    parity."""
    from graphsys.kernels import bfs

    if G.null:
        return True
    out = G.adjacency()  # read-only views, as bfs.levels hands them: one compiled search
    into = G.adjacency(transpose=True) if G.directed else out
    degree = np.diff(out[0]) + (np.diff(into[0]) if G.directed else 0)
    # one set of buffers for every component: a search sets the levels of its own
    # component only, and clears the bitmaps it uses
    dist, queue, front, nxt = bfs.buffers(len(G), out[1].dtype)
    labels = _labels(G)
    for root in np.flatnonzero(labels == np.arange(len(G))).tolist():
        bfs.search(*out, *into, G.directed, int(degree.max(initial=0)), dist, queue, front,
                   nxt, root, bfs.NO_LIMIT, 1, True)
    rows, cols = G.edges()
    return not ((dist[rows] - dist[cols]) % 2 == 0).any()


def _nonempty(G) -> None:
    if len(G) == 0:
        raise _nx().NetworkXPointlessConcept("G has no nodes.")


def is_tree(G):
    """``nx.is_tree``: ``N - 1`` edges and (weakly) connected."""
    _nonempty(G)
    return len(G) - 1 == len(G.edges()[0]) and _is_connected(G)


def is_forest(G):
    """``nx.is_forest``: every (weakly) connected component a tree, i.e. ``N - c``
    edges for ``c`` components."""
    _nonempty(G)
    return len(G.edges()[0]) == len(G) - _count(G)


def _sinks(G) -> tuple[np.ndarray, np.ndarray]:
    """Each node's component (sinks first) and which components have no edge out."""
    comp, edges = condensation(G)
    sink = np.ones(int(comp.max()) + 1 if len(comp) else 0, bool)
    sink[edges[0]] = False
    return comp, sink


def attracting_components(G):
    """``nx.attracting_components``: a generator of the node sets of the strongly
    connected components no edge leaves."""
    if G.null:
        return
    comp, sink = _sinks(G)
    parts = _parts(G, comp)
    yield from (parts[c] for c in np.flatnonzero(sink).tolist())


def number_attracting_components(G):
    """``nx.number_attracting_components``."""
    return 0 if G.null else int(_sinks(G)[1].sum())


def is_attracting_component(G):
    """``nx.is_attracting_component``: the whole graph is one attracting component."""
    ac = list(attracting_components(G))
    return len(ac) == 1 and len(ac[0]) == len(G)


def kosaraju_strongly_connected_components(G, source=None):
    """``nx.kosaraju_strongly_connected_components`` (``source`` declined): the same
    components as ``strongly_connected_components``."""
    from graphsys.nx_backend.algorithms import strongly_connected_components

    yield from strongly_connected_components(G)


def is_semiconnected(G):
    """``nx.is_semiconnected``: weakly connected and its condensation a path (each
    component reaches the next in topological order by an edge)."""
    if not _is_connected(G):  # the null graph: NetworkX's exception
        return False
    comp, edges = condensation(G)
    count = int(comp.max()) + 1
    # sinks first: component r + 1 must have an edge into component r
    steps = set(zip(edges[0].tolist(), edges[1].tolist()))
    return all((r + 1, r) in steps for r in range(count - 1))


def flow_hierarchy(G, weight=None):
    """``nx.flow_hierarchy``: the fraction of edges on no cycle (unweighted)."""
    from graphsys.nx_backend.measures import _unweighted

    nx = _nx()
    rows, cols = G.edges()
    if len(rows) == 0:
        raise nx.NetworkXError("flow_hierarchy not applicable to empty graphs")
    if not G.directed:
        raise nx.NetworkXError("G must be a digraph in flow_hierarchy")
    _unweighted(G, weight)
    comp = _scc_labels(G)
    return 1 - int((comp[rows] == comp[cols]).sum()) / len(rows)


def _source_graph(G):
    """The NetworkX graph ``G`` was converted from (a stored graph: NetworkX's copy of
    it, :meth:`BackendInterface.convert_to_nx`)."""
    source = G._source.graph() if G.converted else None
    if source is None:
        from graphsys.nx_backend import BackendInterface

        source = BackendInterface.convert_to_nx(G)
    return source


def _core_subgraph(G, keep, k=None, below: int = 0):
    """The subgraph of the nodes ``v`` of ``keep(v, k, core numbers)``; ``k`` by default
    the largest core number less ``below``."""
    core = _core_numbers(G)
    if k is None:
        k = max(core.values()) - below
    return _source_graph(G).subgraph([v for v in core if keep(v, k, core)]).copy()


def k_core(G, k=None, core_number=None):
    """``nx.k_core``: the subgraph of the nodes of core number at least ``k`` (default
    the largest)."""
    return _core_subgraph(G, lambda v, k, c: c[v] >= k, k)


def k_shell(G, k=None, core_number=None):
    """``nx.k_shell``: the nodes of core number ``k`` (default the largest)."""
    return _core_subgraph(G, lambda v, k, c: c[v] == k, k)


def k_crust(G, k=None, core_number=None):
    """``nx.k_crust``: the nodes of core number at most ``k`` (default the largest
    less one)."""
    return _core_subgraph(G, lambda v, k, c: c[v] <= k, k, below=1)


def k_corona(G, k, core_number=None):
    """``nx.k_corona``: the nodes of core number ``k`` with exactly ``k`` neighbours of
    core number at least ``k``."""
    core = _core_numbers(G)
    indptr, indices = G.adjacency()
    values = np.array([core[v] for v in G.keys], np.int64)
    rows = np.repeat(np.arange(len(G)), np.diff(indptr))
    high = np.bincount(rows[values[indices] >= k], minlength=len(G))
    nodes = [G.keys[i] for i in np.flatnonzero((values == k) & (high == k)).tolist()]
    return _source_graph(G).subgraph(nodes).copy()


def ego_graph(G, n, radius=1, center=True, undirected=False, distance=None):
    """``nx.ego_graph``: the subgraph of the nodes within ``radius`` hops of ``n``
    (graphsys's BFS; ``distance`` and ``undirected`` on a directed graph are declined by
    the checks)."""
    H = _source_graph(G).subgraph(single_source_shortest_path_length(G, n, radius)).copy()
    if not center:
        H.remove_node(n)
    return H
