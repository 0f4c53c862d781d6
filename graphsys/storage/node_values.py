"""The one per-node result of every engine: :class:`NodeValues`, a value (or a row of
values) per node by internal id, read back by the graph's original ids. The BSP engine's
:class:`~graphsys.bsp.result.Result` is one with the run's statistics; the mining counts and
the measures' eccentricities are plain ones. One set of rules: :meth:`NodeValues.top`
checks ``k``, ranks ties by internal id and puts NaN last."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from graphsys.errors import ParameterError, check_count, check_flag


@dataclass(repr=False)
class NodeValues:
    """A value per node, by internal id.

    ``values[v]`` belongs to the node of internal (global) id ``v``, the Graph API's
    partition-major numbering; :meth:`to_dict`, :meth:`to_table`, :meth:`top` and
    :meth:`value` speak the graph's original ids.

    Attributes
    ----------
    values : numpy.ndarray
        (N,) by internal id (int64 counts, float64 scores), or (N, d) rows.
    graph : Graph
        The graph the values describe.
    name : str
        What the values are (``"triangles"``, ``"eccentricity"``; ``"value"`` for a BSP
        run): the values' column in :meth:`to_table`.
    columns : tuple of str, optional
        The names of the columns of (N, d) values, which :meth:`top` ranks by name.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> g = graphsys.from_numpy(np.array([10, 20, 30, 30]), np.array([20, 30, 10, 40]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> t = mining.triangles(g)
    >>> t.to_dict()
    {10: 1, 20: 1, 30: 1, 40: 0}
    >>> t.top(1), t.value(40)
    ([(10, 1)], 0)
    >>> t.to_table().column_names
    ['node', 'triangles']
    """

    values: np.ndarray
    graph: object
    name: str = "value"
    columns: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return f"NodeValues({self.name}: {self.values.dtype} {self.values.shape})"

    def __len__(self) -> int:
        return len(self.values)

    def to_table(self) -> pa.Table:
        """The values as a table keyed by original node id.

        Returns
        -------
        pyarrow.Table
            Columns ``node`` (original id: int64 or string) and :attr:`name` (the values'
            type, or ``fixed_size_list[d]`` for (N, d) values), one row per node in
            internal id order.
        """
        if self.values.ndim == 2:
            value = pa.FixedSizeListArray.from_arrays(pa.array(self.values.reshape(-1)),
                                                      self.values.shape[1])
        else:
            value = pa.array(self.values)
        return pa.table({"node": pa.array(self.graph.node_ids()), self.name: value})

    def to_dict(self) -> dict:
        """The values keyed by original node id.

        Returns
        -------
        dict
            ``{original_id: value}`` in internal id order: a number, or a list of ``d``
            for (N, d) values.
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
        list of (original_id, value)
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
        check_count("k", k, minimum=0)
        largest = check_flag("largest", largest)  # "no" ranked the largest first
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

    def value(self, original_id):
        """The value of one node.

        Parameters
        ----------
        original_id : int or str
            The node's id in the graph (as ingested).

        Returns
        -------
        int or float
            Its value (a list of ``d`` for (N, d) values).

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


@dataclass(repr=False)
class FormerArray(NodeValues):
    """The :class:`NodeValues` of a function that returned the bare values array before
    (:func:`graphsys.measures.eccentricity`): for one release the array's own access
    (``[]``, ``.tolist()``, ``.max()``, ``numpy.asarray``) still works on it, with a
    ``DeprecationWarning`` naming :attr:`values`."""

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self.values, dtype)

    def __getitem__(self, index):
        _array_access("[]")
        return self.values[index]

    def __getattr__(self, attr: str):
        # the array's own attributes (.tolist(), .max(), ...), of a function that returned
        # the bare array before
        if attr.startswith("_") or attr in ("values", "graph", "name", "columns"):
            raise AttributeError(attr)
        if not hasattr(np.ndarray, attr):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")
        _array_access(f".{attr}")
        return getattr(self.values, attr)


def _array_access(what: str) -> None:
    warnings.warn(f"NodeValues{what}: the values array is .values (array access on the result "
                  f"itself is deprecated and goes in the next release)", DeprecationWarning,
                  stacklevel=3)


def _original_ids(graph, internal: np.ndarray | None) -> list:
    """Original ids (Python ints or strs) of the internal ids ``internal`` (None: all)."""
    ids = graph.node_ids() if internal is None else graph.to_original(internal)
    return ids.tolist() if isinstance(ids, np.ndarray) else ids.to_pylist()
