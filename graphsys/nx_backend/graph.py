"""The graph the graphsys backend hands its functions: a stored graphsys
:class:`~graphsys.storage.graph.Graph` and the NetworkX node keys of its nodes."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Any

import numpy as np

from graphsys.errors import GraphsysError


class BackendGraph:
    """A graphsys graph as NetworkX's dispatcher sees it (``__networkx_backend__``).

    Made by :func:`from_networkx` (a NetworkX graph converted into a temporary graph
    directory, node ``i`` of ``list(G)`` at internal id ``i``) or :func:`from_graph` (a
    stored graph, keyed by its original ids). Pass one to any dispatched NetworkX function
    to run graphsys on it without a conversion.

    Attributes
    ----------
    graph : Graph
        The stored graph.
    keys : list
        NetworkX node key of each internal id.
    directed : bool
        Whether it stands for a ``DiGraph`` (a ``Graph`` is stored undirected).
    weight : str or None
        The edge attribute stored as the edge weight, if any.
    """

    __networkx_backend__ = "graphsys"

    def __init__(self, graph, keys: list, directed: bool, weight: str | None,
                 exact_weights: bool = True):
        self.graph, self.keys, self.directed, self.weight = graph, keys, directed, weight
        #: Whether every weight was stored exactly (graphsys stores float32): sums of them
        #: (path lengths) then equal NetworkX's float64 ones
        self.exact_weights = exact_weights
        self._index: dict | None = None

    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return False

    def number_of_nodes(self) -> int:
        return len(self.keys)

    def number_of_edges(self) -> int:
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

    def node_dict(self, values) -> dict:
        """``{key: value}`` for every node, values as Python scalars."""
        return dict(zip(self.keys, np.asarray(values).tolist()))

    def __repr__(self) -> str:
        return (f"BackendGraph({'directed' if self.directed else 'undirected'}, "
                f"{len(self.keys)} nodes, {self.graph!r})")


def from_graph(graph, *, edge_set: str | None = None) -> BackendGraph:
    """A stored graph for NetworkX's dispatcher: keyed by original ids, directed unless
    its edge set was ingested ``undirected``, weighted when it has weights.

    With graphsys installed as a NetworkX backend, ``nx.pagerank(from_graph(g))`` runs
    graphsys's PageRank on the stored graph, results keyed by original ids.

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
    if edge_set is not None and len(graph.edge_sets) > 1:
        raise GraphsysError("from_graph: a graph with several edge sets is not supported")
    es = graph.edge_set(edge_set)
    ids = graph.node_ids()
    keys = ids.tolist() if isinstance(ids, np.ndarray) else ids.to_pylist()
    return BackendGraph(graph, keys, not es.undirected, "weight" if es.has_weight else None)


def memory_dir() -> str | None:
    """Where converted graphs go: ``nx.config.backends.graphsys.tmpdir`` when set, else
    ``/dev/shm`` (memory: no disk writes, no fsync wait) when it is a writable directory,
    else the system's temporary directory (None)."""
    import networkx as nx

    chosen = nx.config.backends.graphsys.get("tmpdir")
    if chosen:
        return str(chosen)
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def from_networkx(G, weight: str | None, default: Any = 1, *,
                  dir: str | None = None) -> BackendGraph:
    """``G`` ingested into a temporary graph directory (under ``dir``, default
    :func:`memory_dir`; removed with the returned graph): one partition, node ``i`` of
    ``list(G)`` at internal id ``i``, a ``Graph`` stored undirected, ``weight`` (an edge
    attribute, ``default`` where missing) as the weights.

    Raises
    ------
    NotImplementedError
        A multigraph (NetworkX then runs the call itself, where falling back is allowed).
    """
    from graphsys.interop._common import ingest_arrays

    if G.is_multigraph():
        raise NotImplementedError("graphsys: multigraphs are not supported")
    keys = list(G)
    n = len(keys)
    directed = G.is_directed()
    if n == 0:
        return BackendGraph(None, keys, directed, weight)
    pos = {k: i for i, k in enumerate(keys)}
    m = G.number_of_edges()
    src = np.fromiter((pos[u] for u, _ in G.edges()), np.int64, m)
    dst = np.fromiter((pos[v] for _, v in G.edges()), np.int64, m)
    w = None
    if weight is not None and m:
        w = np.fromiter((d.get(weight, default) for _, _, d in G.edges(data=True)),
                        np.float64, m)
        if np.all(w == 1.0):
            w = None  # all ones: the same as no weights (and the unweighted fast paths)
    exact = w is None or bool(np.all(w.astype(np.float32) == w))
    root = tempfile.mkdtemp(prefix="graphsys-nx-", dir=dir or memory_dir())
    try:
        g = ingest_arrays(src, dst, f"{root}/g", num_nodes=n, weight=w,
                          metadata={"source": "networkx backend"},
                          options={"undirected": not directed})
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    out = BackendGraph(g, keys, directed, weight if w is not None else None, exact)
    weakref.finalize(out, shutil.rmtree, root, True)
    return out
