"""What a graph's manifest says, read without opening a data file: its schema (entity
types, relation types, edge sets) and its counts (nodes, edges, partition sizes and offsets,
edges per bucket).

:class:`GraphSchema` is the base of :class:`~graphsys.storage.graph.Graph`, which adds the
reads of the files (buckets, CSR/CSC, node ids and columns); every method here answers from
:attr:`GraphSchema.manifest` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphsys.errors import GraphsysError
from graphsys.storage import edge_changes, edge_views
from graphsys.storage.format import EdgeSet, EntityType, Manifest, RelationType


class GraphSchema:
    """The schema and counts of a stored graph, from its manifest: the base of
    :class:`~graphsys.storage.graph.Graph` (documented there, with its examples).

    Attributes
    ----------
    manifest : Manifest
        The parsed manifest (:class:`~graphsys.storage.format.Manifest`).
    """

    def __init__(self, manifest: Manifest):
        self.manifest = manifest

    # -- schema ------------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        """Number of node partitions ``P`` (the graph has ``P x P`` buckets)."""
        return self.manifest.num_partitions

    @property
    def entity_types(self) -> list[str]:
        """Names of the entity (node) types, in manifest order."""
        return list(self.manifest.entity_types)

    @property
    def relation_types(self) -> list[RelationType]:
        """The relation types (name, lhs and rhs entity types), in index order."""
        return list(self.manifest.relation_types)

    @property
    def edge_sets(self) -> list[str]:
        """Names of the edge sets of edges, in manifest order (not the change sets:
        :attr:`change_sets`)."""
        return [n for n, es in self.manifest.edge_sets.items() if not es.change]

    @property
    def change_sets(self) -> list[str]:
        """Names of the change sets (deletions and weight updates,
        :mod:`graphsys.storage.edge_changes`), in manifest order: the order they apply in."""
        return [n for n, es in self.manifest.edge_sets.items() if es.change]

    def entity_type(self, entity_type: str | None = None) -> EntityType:
        """The manifest record of one entity type: name, node count, partition sizes, columns.

        Parameters
        ----------
        entity_type : str, optional
            Its name; None for the only one.

        Returns
        -------
        EntityType

        Raises
        ------
        GraphsysError
            An unknown name, or None in a graph of several entity types.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.entity_type()
        EntityType(name='node', id_type='int64', partition_sizes=[1, 3], columns=[])
        """
        if entity_type is None:
            if len(self.manifest.entity_types) != 1:
                raise GraphsysError(f"graph has entity types {self.entity_types}: name one")
            return next(iter(self.manifest.entity_types.values()))
        try:
            return self.manifest.entity_types[entity_type]
        except KeyError:
            raise GraphsysError(f"unknown entity type {entity_type!r} (types: "
                                f"{', '.join(self.entity_types)})") from None

    def _stored(self, name: str | Sequence[str] | None) -> EdgeSet:
        """The record of one stored edge set as stored, a change set's included (what the
        readers of its pairs and of bucket files use); any other name as :meth:`edge_set`."""
        sets = self.manifest.edge_sets
        return sets[name] if isinstance(name, str) and name in sets else self.edge_set(name)

    def edge_set(self, name: str | Sequence[str] | None = None) -> EdgeSet:
        """The manifest record of an edge set, or of several read as one: name, edge count,
        edges per bucket, flags.

        Parameters
        ----------
        name : str or sequence of str, optional
            A stored edge set; several, as a list or joined by commas (``"default,day2"``);
            ``"all"`` for every one; None for the default view: the default edge set (the
            only one, else ``default``, else ``train``) with the edge sets appended to it
            (:mod:`graphsys.storage.edge_views`).

        Returns
        -------
        EdgeSet
            A stored edge set's record, or for several the view's (its ``name`` joins the
            names with commas, ``members`` lists them).

        Raises
        ------
        GraphsysError
            An unknown name, None that matches no edge set, edge sets of different shapes
            (weighted and not, ...) named together, or a change set named without the edge
            sets it changes (alone included: its pairs are what goes or changes weight, not
            edges).

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> es = g.edge_set()
        >>> es.name, es.num_edges, es.has_weight
        ('default', 5, False)
        """
        names = edge_views.members(self.manifest, name)
        sets = self.manifest.edge_sets
        if len(names) == 1:
            if sets[names[0]].change:   # its pairs go or change weight: they are no edges
                edge_changes.check_targets(self.manifest, names)
            return sets[names[0]]
        if getattr(self, "_views_of", None) is not sets:  # the manifest's edge sets changed
            self._views_of, self._views = sets, {}
        if names not in self._views:
            self._views[names] = edge_views.union(self.manifest, names)
        return self._views[names]

    # -- counts ------------------------------------------------------------------------------
    def num_nodes(self, entity_type: str | None = None) -> int:
        """Number of nodes of one entity type, or of all types.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None counts the nodes of every type.

        Returns
        -------
        int

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.num_nodes()
        4
        """
        if entity_type is None:
            return sum(e.num_nodes for e in self.manifest.entity_types.values())
        return self.entity_type(entity_type).num_nodes

    def num_edges(self, edge_set: str | Sequence[str] | None = None) -> int:
        """Number of edges of one edge set.

        Parameters
        ----------
        edge_set : str or sequence of str, optional
            The edge set (default: see :meth:`edge_set`).

        Returns
        -------
        int

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.num_edges()
        5
        """
        return self.edge_set(edge_set).num_edges

    def partition_sizes(self, entity_type: str | None = None) -> np.ndarray:
        """Nodes per partition.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray
            int64 (P,).

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.partition_sizes().tolist()
        [1, 3]
        """
        return np.asarray(self.entity_type(entity_type).partition_sizes, dtype=np.int64)

    def partition_offsets(self, entity_type: str | None = None) -> np.ndarray:
        """Internal id (within the entity type) of each partition's first node.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray
            int64 (P+1,); the last entry is the node count.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.partition_offsets().tolist()
        [0, 1, 4]
        """
        out = np.zeros(self.num_partitions + 1, np.int64)
        np.cumsum(self.partition_sizes(entity_type), out=out[1:])
        return out

    @property
    def type_offsets(self) -> dict[str, int]:
        """Global id of each entity type's first node (types in manifest order)."""
        out, base = {}, 0
        for name, et in self.manifest.entity_types.items():
            out[name] = base
            base += et.num_nodes
        return out

    def bucket_counts(self, edge_set: str | Sequence[str] | None = None) -> np.ndarray:
        """Edges per bucket.

        Parameters
        ----------
        edge_set : str or sequence of str, optional
            The edge set (default: see :meth:`edge_set`).

        Returns
        -------
        numpy.ndarray
            int64 (P, P); row ``i`` = source partition ``i``.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.bucket_counts().tolist()
        [[0, 1], [1, 3]]
        """
        p = self.num_partitions
        counts = np.zeros((p, p), np.int64)
        for (i, j), n in self._stored(edge_set).buckets.items():  # a change set's too
            counts[i, j] = n
        return counts
