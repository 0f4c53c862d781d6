"""NetworkX in and out. Node keys are the original node ids (all int or all str)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphsys.errors import InputError, check_flag
from graphsys.interop._common import document, export_arrays, ingest_arrays, node_column_values
from graphsys.storage.graph import Graph

#: Default ``max_edges`` of :func:`to_networkx`: NetworkX holds ~0.5 KB of Python objects
#: per edge, so 10 M edges is about 5 GB.
NX_MAX_EDGES = 10_000_000


@document
def from_networkx(G, out: str | Path, *, node_attrs: tuple[str, ...] | None = None,
                  weight: str | None = "weight", **options) -> Graph:
    """Ingest a NetworkX graph into a graph directory.

    Node keys become the original ids (all ``int`` or all ``str``; isolated nodes kept). An
    undirected graph is stored with both directions of every edge (``undirected``).

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph
        The graph.
    out : str or Path
        The graph directory to create.
    node_attrs : tuple of str, optional
        Node attributes to carry as node columns, each a float vector, an int label, a bool
        mask or a string per node (default: every attribute that all nodes have and a
        column can hold; ``id``, which names the ids' own column, and attributes of other
        kinds, such as tuples of ints or dicts, are left out).
    weight : str or None, default "weight"
        The edge attribute read as edge weight when every edge has it (None: no weights);
        stored as float32, the format's weight type (``to_networkx`` gives 0.1 back as
        0.10000000149011612); a value that float32 cannot hold is refused.
    %(ingest)s

    Raises
    ------
    InputError
        No nodes, or node keys of mixed types.

    See Also
    --------
    to_networkx

    Examples
    --------
    >>> import tempfile, networkx as nx, graphsys
    >>> G = nx.karate_club_graph()
    >>> g = graphsys.from_networkx(G, tempfile.mkdtemp() + "/g", node_attrs=(),
    ...                            partitions=2)
    >>> g.num_nodes(), g.num_edges(), g.edge_set().undirected
    (34, 156, True)
    """
    import networkx as nx

    nodes = list(G.nodes)
    if not nodes:
        raise InputError("from_networkx: the graph has no nodes")
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in nodes):
        big = next((v for v in nodes if not -2**63 <= int(v) < 2**63), None)
        if big is not None:
            raise InputError(f"from_networkx: node {big} does not fit int64 (use str keys for "
                             f"such ids)")
        ids = np.asarray(nodes, dtype=np.int64)
    elif all(isinstance(v, str) for v in nodes):
        ids = np.asarray(nodes, dtype=object)
    else:
        kinds = sorted({type(v).__name__ for v in nodes})
        raise InputError(f"from_networkx: node keys must be all int or all str, got "
                         f"{', '.join(kinds)}")
    pos = {v: i for i, v in enumerate(nodes)}
    m = G.number_of_edges()
    src = np.fromiter((pos[u] for u, _ in G.edges()), np.int64, m)
    dst = np.fromiter((pos[v] for _, v in G.edges()), np.int64, m)
    w = None
    if weight is not None and m and all(weight in d for _, _, d in G.edges(data=True)):
        try:
            w = np.fromiter((d[weight] for _, _, d in G.edges(data=True)), np.float64, m)
        except (TypeError, ValueError):
            u, v, d = next((u, v, d) for u, v, d in G.edges(data=True)
                           if not _is_number(d[weight]))
            raise InputError(f"from_networkx: edge ({u!r}, {v!r}) has {weight}={d[weight]!r}, "
                             f"not a number (pass weight=None to ignore edge weights)") from None
    if node_attrs is None:
        columns = _storable_attributes(G, nodes)
    else:
        columns = {a: np.asarray([G.nodes[v][a] for v in nodes]) for a in node_attrs}
    opts = dict(options)
    if not G.is_directed():
        opts.setdefault("undirected", True)
    return ingest_arrays(ids[src], ids[dst], out, weight=w, node_columns=columns, node_ids=ids,
                         metadata={"source": "networkx", "directed": nx.is_directed(G)},
                         options=opts)


def _storable_attributes(G, nodes: list) -> dict[str, np.ndarray]:
    """The node attributes that every node has and a node column can hold (float vectors,
    int labels, bool masks, strings; not ``id``, the ids' own column), by name."""
    data = [G.nodes[v] for v in nodes]
    out = {}
    for name in (k for k in data[0] if k != "id" and all(k in d for d in data)):
        try:
            values = np.asarray([d[name] for d in data])
            node_column_values(name, values, len(nodes))
        except (InputError, ValueError):       # ragged or of a kind no column holds
            continue
        out[name] = values
    return out


def to_networkx(graph: Graph, *, edge_set: str | None = None,
                max_edges: int | None = NX_MAX_EDGES, node_columns: bool = True):
    """A stored graph as a NetworkX graph keyed by original node ids.

    ``nx.Graph`` when the edge set was stored undirected, else ``nx.DiGraph`` (parallel
    edges collapse).

    Parameters
    ----------
    graph : Graph
        A graph with one entity type.
    edge_set : str, optional
        The edge set (default: the only one, or ``default``/``train``).
    max_edges : int or None, default 10_000_000
        Refuse, in one line, a graph with more edges (None: no limit). NetworkX holds
        Python objects per edge, several hundred bytes each.
    node_columns : bool, default True
        Give each node its columns as attributes (features as float32 arrays, labels as
        int, masks as bool).

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        With edge attribute ``weight`` when weighted.

    Raises
    ------
    GraphsysError
        More than ``max_edges`` edges, or several entity types.

    Examples
    --------
    >>> import tempfile, networkx as nx, graphsys
    >>> G = nx.path_graph(["x", "y", "z"], create_using=nx.DiGraph)
    >>> g = graphsys.from_networkx(G, tempfile.mkdtemp() + "/g")
    >>> list(graphsys.to_networkx(g).edges())
    [('x', 'y'), ('y', 'z')]
    """
    import networkx as nx

    ex = export_arrays(graph, edge_set=edge_set, max_edges=max_edges, what="to_networkx",
                       columns=check_flag("node_columns", node_columns))
    G = nx.Graph() if ex.undirected else nx.DiGraph()
    ids = list(ex.ids.tolist() if isinstance(ex.ids, np.ndarray) else ex.ids)
    attrs: list[dict[str, Any]] = [{} for _ in ids]
    for name, col in ex.columns.items():
        for i, value in enumerate(col if col.ndim == 2 else col.tolist()):
            attrs[i][name] = value
    G.add_nodes_from(zip(ids, attrs))
    s = [ids[i] for i in ex.src.tolist()]
    d = [ids[i] for i in ex.dst.tolist()]
    if ex.weight is None:
        G.add_edges_from(zip(s, d))
    else:
        G.add_weighted_edges_from(zip(s, d, ex.weight.tolist()))
    return G


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, (str, bytes))
