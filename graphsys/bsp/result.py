"""A finished BSP run's result: :class:`Result` (every node's value, the run's statistics,
the graph to speak original ids), returned by :func:`graphsys.bsp.engine.run` and the
algorithm front-ends."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from graphsys.bsp.stats import RunStats
from graphsys.errors import ParameterError

#: The schema metadata key of :meth:`Result.to_table` that holds the run's provenance.
RESULT_METADATA = "graphsys.result"

@dataclass(repr=False)
class Result:
    """A finished run: the value of every node and the run's statistics.

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

    values: np.ndarray
    stats: RunStats
    graph: object
    provenance: dict | None = None
    columns: tuple[str, ...] | None = None

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
            internal id order; the schema metadata ``graphsys.result`` holds
            :attr:`provenance` as JSON, so a Parquet file of it can start a later run
            (``init=``).
        """
        if self.values.ndim == 2:
            value = pa.FixedSizeListArray.from_arrays(
                pa.array(self.values.reshape(-1), pa.float64()), self.values.shape[1])
        else:
            value = pa.array(self.values, pa.float64())
        table = pa.table({"node": pa.array(self.graph.node_ids()), "value": value})
        if self.provenance:
            table = table.replace_schema_metadata(
                {RESULT_METADATA: json.dumps(self.provenance, sort_keys=True)})
        return table

    def to_dict(self) -> dict:
        """The values keyed by original node id.

        Returns
        -------
        dict
            ``{original_id: value}``: a float, or a list of ``d`` floats for (N, d) values.
        """
        return dict(zip(_original_ids(self.graph, None), self.values.tolist()))

    def top(self, k: int = 10, largest: bool = True, column: int | str | None = None
            ) -> list[tuple]:
        """The ``k`` nodes with the largest (or smallest) values.

        Parameters
        ----------
        k : int, default 10
            How many nodes (fewer when the graph has fewer).
        largest : bool, default True
            Largest values first; False: smallest first (BFS levels, distances).
        column : int or str, optional
            (N, d) values: the column ranked, by position or by a name of :attr:`columns`
            (HITS: ``"hub"`` or ``"authority"``); default the last one (HITS: the
            authority scores). One value per node: leave it out.

        Returns
        -------
        list of (original_id, float)
            Sorted by value (of ``column``); equal values by internal id. ``inf``
            (unreachable) counts as large, NaN comes last.

        Raises
        ------
        ParameterError
            ``k`` is not a non-negative integer, or ``column`` is not a column of the
            values.

        Examples
        --------
        >>> import tempfile, numpy as np, graphsys
        >>> from graphsys import bsp
        >>> g = graphsys.from_numpy(np.array([1, 1, 2, 3]), np.array([2, 3, 3, 1]),
        ...                         tempfile.mkdtemp() + "/g")
        >>> [(node, round(a, 3)) for node, a in bsp.hits(g, tol=1e-12).top(2)]
        [(3, 0.618), (2, 0.382)]
        >>> bsp.hits(g, tol=1e-12).top(1, column="hub")[0][0]
        1
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ParameterError("k", f"must be a non-negative integer, got {k!r}")
        values = self._ranked_column(column)
        key = -values if largest else values  # ascending key: best first
        n, k = len(key), min(int(k), len(key))
        if k == 0:
            return []
        if k < n and not np.isnan(key).any():
            kth = key[np.argpartition(key, k - 1)[k - 1]]
            cand = np.flatnonzero(key <= kth)  # the k best and any ties at the k-th value
        else:
            cand = np.arange(n)
        best = cand[np.lexsort((cand, key[cand]))][:k]
        return list(zip(_original_ids(self.graph, best), values[best].tolist()))

    def _ranked_column(self, column: int | str | None) -> np.ndarray:
        """The (N,) values :meth:`top` ranks: the values, or one column of (N, d) ones."""
        if self.values.ndim == 1:
            if column is not None:
                raise ParameterError("column", f"applies to (N, d) values; this result has "
                                               f"one value per node, got {column!r}")
            return self.values
        names = tuple(self.columns or ())
        d = self.values.shape[1]
        if column is None:
            return self.values[:, d - 1]
        if isinstance(column, str) and column in names:
            return self.values[:, names.index(column)]
        if isinstance(column, (int, np.integer)) and not isinstance(column, bool) \
                and -d <= column < d:
            return self.values[:, int(column)]
        known = ", ".join(names) if names else f"positions 0 to {d - 1}"
        raise ParameterError("column", f"must be one of the result's columns ({known}), got "
                                        f"{column!r}")

    def value(self, original_id) -> float:
        """The value of one node.

        Parameters
        ----------
        original_id : int or str
            The node's id in the graph (as ingested).

        Returns
        -------
        float
            Its value (a list of ``d`` floats for (N, d) values).

        Raises
        ------
        GraphsysError
            ``original_id`` is not a node of the graph (or not of its id type).
        ParameterError
            ``original_id`` is not one id (e.g. a list).
        """
        if not (np.isscalar(original_id) or isinstance(original_id, str)):
            raise ParameterError("original_id", f"must be one node id, got {original_id!r}")
        idx = int(self.graph.to_internal([original_id])[0])
        return self.values[idx].tolist()


def _original_ids(graph, internal: np.ndarray | None) -> list:
    """Original ids (Python ints or strs) of the internal ids ``internal`` (None: all)."""
    ids = graph.node_ids() if internal is None else graph.to_original(internal)
    return ids.tolist() if isinstance(ids, np.ndarray) else ids.to_pylist()
