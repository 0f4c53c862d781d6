"""The subgraph methods of :class:`~graphsys.storage.graph.Graph` (a base class of it):
each selects nodes or edges and writes the result through :mod:`graphsys.storage.subgraph`,
imported on first use (the ingest path it reaches stays out of importing the graph API).
"""

from __future__ import annotations

from pathlib import Path


class SubgraphMethods:
    """``subgraph``, ``edge_subgraph`` and ``ego_graph`` of a stored graph (the written
    directory is opened by the subclass's ``_open_written(path)``)."""

    def subgraph(self, nodes=None, out: str | Path | None = None, *, where=None,
                 internal: bool = False, edge_sets=None, dir: str | Path | None = None,
                 **options) -> SubgraphMethods:
        """The subgraph induced by a node set: the nodes (isolated ones too, with their
        original ids and node columns) and every edge between two of them (weights,
        relations, edge columns kept), as a new graph directory
        (:mod:`graphsys.storage.subgraph`).

        Parameters
        ----------
        nodes : array-like, optional
            Original ids (internal ids when ``internal``), or a bool mask (N,) by internal id.
        out : str or Path, optional
            The graph directory to create; default a temporary one (under ``dir``),
            removed when the returned Graph is garbage collected.
        where : pyarrow.compute.Expression or callable, optional
            Keep the nodes whose row of the node table (``id`` and the node columns)
            satisfies it; a callable gets the table and returns one bool per node. With
            ``nodes``: the nodes of ``nodes`` that satisfy it.
        internal : bool, default False
            ``nodes`` are internal ids.
        edge_sets : str or list of str, optional
            The edge sets to keep (default all).
        dir : str or Path, optional
            Where the temporary directory goes when ``out`` is None.
        **options
            :class:`~graphsys.storage.ingest.IngestOptions` fields (``partitions``,
            ``partitioner``, ``memory_limit``, ...).

        Returns
        -------
        Graph

        Examples
        --------
        >>> import tempfile, numpy as np, pyarrow.compute as pc, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 0], tempfile.mkdtemp() + "/g",
        ...                         num_nodes=5, node_columns={"label": np.array([0, 1, 1, 0, 1])})
        >>> h = g.subgraph([0, 1, 4])
        >>> h.node_ids().tolist(), h.num_edges(), h.node_column("label").tolist()
        ([0, 1, 4], 1, [0, 1, 1])
        >>> g.subgraph(where=pc.field("label") == 1).node_ids().tolist()
        [1, 2, 4]
        """
        from graphsys.storage import subgraph as sub

        keep = sub.node_mask(self, nodes, where, internal=internal)
        return sub.open_result(sub.write_subgraph(self, keep, out, edge_sets=edge_sets,
                                                  dir=dir, options=options), self._open_written)

    def edge_subgraph(self, edges=None, out: str | Path | None = None, *, where=None,
                      internal: bool = False, edge_set: str | None = None,
                      dir: str | Path | None = None, **options) -> SubgraphMethods:
        """The subgraph of some edges and the nodes they join (``nx.edge_subgraph``), as a
        new graph directory (:mod:`graphsys.storage.subgraph`).

        Parameters
        ----------
        edges : array-like, optional
            ``(u, v)`` pairs of original ids (internal ids when ``internal``): every stored
            edge ``u -> v`` (and ``v -> u`` in an undirected edge set) is kept.
        out : str or Path, optional
            The graph directory to create; default a temporary one (see :meth:`subgraph`).
        where : pyarrow.compute.Expression or callable, optional
            Keep the edges whose row (``src``, ``dst`` original ids, ``weight``, ``rel``
            relation name, edge columns) satisfies it. With ``edges``: both must hold.
        internal : bool, default False
            ``edges`` hold internal ids.
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`); the result has only it.
        dir : str or Path, optional
            Where the temporary directory goes when ``out`` is None.
        **options
            :class:`~graphsys.storage.ingest.IngestOptions` fields.

        Returns
        -------
        Graph

        Examples
        --------
        >>> import tempfile, pyarrow.compute as pc, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 3], tempfile.mkdtemp() + "/g",
        ...                         weight=[0.5, 2.0, 3.0])
        >>> h = g.edge_subgraph(where=pc.field("weight") > 1)
        >>> h.node_ids().tolist(), [w.tolist() for _, _, _, w in h.iter_edges()]
        ([1, 2, 3], [[2.0, 3.0]])
        """
        from graphsys.storage import subgraph as sub

        es = self.edge_set(edge_set)
        keep = sub.edge_mask_fn(self, edges, where, internal=internal, edge_set=es.name)
        return sub.open_result(sub.write_subgraph(self, None, out, keep_edges=keep,
                                                  edge_sets=es.name, dir=dir,
                                                  options=options), self._open_written)

    def ego_graph(self, center, radius: int = 1, out: str | Path | None = None, *,
                  undirected: bool = False, edge_set: str | None = None,
                  internal: bool = False, dir: str | Path | None = None,
                  **options) -> SubgraphMethods:
        """The subgraph induced by the nodes within ``radius`` hops of ``center``
        (``nx.ego_graph``), as a new graph directory (:mod:`graphsys.storage.subgraph`).

        Parameters
        ----------
        center : int, str or array-like
            An original node id (internal when ``internal``), or several: the union of
            their neighbourhoods.
        radius : int, default 1
            Hops.
        out : str or Path, optional
            The graph directory to create; default a temporary one (see :meth:`subgraph`).
        undirected : bool, default False
            In a directed edge set, follow edges either way (else out-edges only, as
            NetworkX does for a ``DiGraph``).
        edge_set : str, optional
            The edge set whose hops count; every edge set is kept, induced.
        internal : bool, default False
            ``center`` holds internal ids.
        dir : str or Path, optional
            Where the temporary directory goes when ``out`` is None.
        **options
            :class:`~graphsys.storage.ingest.IngestOptions` fields.

        Returns
        -------
        Graph

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 4], tempfile.mkdtemp() + "/g")
        >>> g.ego_graph(2).node_ids().tolist(), g.ego_graph(2, undirected=True).node_ids().tolist()
        ([2, 3], [1, 2, 3])
        """
        from graphsys.storage import subgraph as sub

        keep = sub.ego_mask(self, center, radius, undirected=undirected, edge_set=edge_set,
                            internal=internal)
        return sub.open_result(sub.write_subgraph(self, keep, out, dir=dir, options=options),
                               self._open_written)
