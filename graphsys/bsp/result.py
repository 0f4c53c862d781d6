"""A finished BSP run's result: :class:`Result` (every node's value, the run's statistics,
the graph to speak original ids), returned by :func:`graphsys.bsp.engine.run` and the
algorithm front-ends."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from graphsys.bsp.stats import RunStats
from graphsys.storage.node_values import NodeValues
from graphsys.storage.previous import (  # noqa: F401 (re-exported)
    ORDER_VERSION,
    RESULT_METADATA,
    tagged,
)


@dataclass(repr=False, kw_only=True)
class Result(NodeValues):
    """A finished run: the value of every node and the run's statistics, a
    :class:`~graphsys.storage.node_values.NodeValues` (its methods, its rules) named
    ``value``.

    Values are indexed by *internal* (global) node id ``0..N-1``, the Graph API's
    partition-major numbering; :meth:`to_table`, :meth:`to_dict`, :meth:`top` and
    :meth:`value` speak the graph's *original* node ids.

    Attributes
    ----------
    values : numpy.ndarray
        float64 (N,) by internal id (on every rank of a distributed run), or (N, d) rows
        for a program whose :meth:`~graphsys.bsp.program.VertexProgram.result` returns
        rows (HITS: hub, authority).
    stats : RunStats
        The run's statistics (``print(result.stats)`` shows one screen of totals).
    graph : Graph
        The graph the run read (maps internal ids to original ones).
    provenance : dict
        What a later run needs to start from this one (set by the algorithm front-ends and
        ``graphsys run``): the algorithm, its source and parameters, and the edge sets read
        with the digests of their buckets (:mod:`graphsys.bsp.incremental`); written into
        :meth:`to_table`'s schema metadata.
    columns : tuple of str, optional
        The names of the columns of (N, d) values (HITS: ``("hub", "authority")``), which
        :meth:`top` ranks by name.
    order : numpy.ndarray, optional
        int64 (N,): each node's position in an order the run kept beside its values, from
        which a later run can update them (k-core's peeling order,
        :mod:`graphsys.bsp.incremental_cores`); written as :meth:`to_table`'s ``order``
        column; numbered from :attr:`peeled` when first read. None: the run kept none.
    peeled : numpy.ndarray, optional
        int32/int64 (N,): the nodes in the order the run removed them (k-core's peeling),
        where it kept that sequence rather than :attr:`order`.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy(np.array([10, 20, 30]), np.array([20, 30, 10]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> result = bsp.bfs(g, 10)
    >>> result.to_dict()
    {10: 0.0, 20: 1.0, 30: 2.0}
    >>> result.top(2, largest=False)
    [(10, 0.0), (20, 1.0)]
    >>> result.value(30)
    2.0
    >>> result.to_table().column_names
    ['node', 'value']
    """

    stats: RunStats
    provenance: dict | None = None
    order: np.ndarray | None = None  # a property (below) over _order
    peeled: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"Result({self.stats.algorithm}: values float64 {self.values.shape}, "
                f"{self.stats.num_supersteps} supersteps, "
                f"{'converged' if self.stats.converged else 'NOT converged'})")

    def to_table(self) -> pa.Table:
        """The values as a table keyed by original node id.

        Returns
        -------
        pyarrow.Table
            Columns ``node`` (original id: int64 or string) and ``value`` (float64, or
            ``fixed_size_list<float64>[d]`` for (N, d) values), one row per node in
            internal id order, and ``order`` (int64) where the run kept an
            :attr:`order`; the schema metadata ``graphsys.result`` holds :attr:`provenance`
            as JSON (with the ``order`` column's version, :data:`ORDER_VERSION`, and a
            checksum of it and the columns: :func:`~graphsys.storage.previous.tagged`),
            so a Parquet file of it can start a later run (``init=``), which refuses one
            edited since.
        """
        table, meta = super().to_table(), self.provenance
        if self.order is not None:
            table = table.append_column("order", pa.array(self.order, pa.int64()))
            meta = meta and {**meta, "order": ORDER_VERSION}
        return tagged(table, meta)


def _order(result: Result) -> np.ndarray | None:
    if result._order is None and result.peeled is not None:  # numbered when first read
        result._order = np.empty(len(result.peeled), np.int64)
        result._order[result.peeled] = np.arange(len(result.peeled))
    return result._order


Result.order = property(_order, lambda result, order: setattr(result, "_order", order))
