"""What mining calls take (:func:`as_graph`) and return: per-node values keyed back to the
graph's original ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from graphsys.errors import ParameterError
from graphsys.storage.graph import Graph, open_graph
from graphsys.views import one_type


def as_graph(graph) -> Graph:
    """An opened graph, or the graph at a path (``str`` or ``Path``), of one entity type.

    Raises
    ------
    GraphsysError
        The graph has several entity types (mining numbers the nodes of one).
    """
    if not isinstance(graph, Graph):
        if not (hasattr(graph, "__fspath__") or isinstance(graph, str)):
            raise ParameterError("graph", f"must be a Graph or a graph directory, got "
                                          f"{type(graph).__name__}")
        graph = open_graph(graph)
    return one_type(graph, "pattern mining")


def original_ids(graph: Graph, internal: np.ndarray) -> np.ndarray:
    """Original ids of an array of internal ids, same shape: int64, or ``object`` (str)
    for string ids."""
    ids = graph.node_ids()
    if not isinstance(ids, np.ndarray):
        ids = np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object)
    return ids[np.asarray(internal, np.int64)]


@dataclass(frozen=True)
class NodeValues:
    """A value per node (triangles, cliques, clustering coefficient), by internal id.

    ``values[v]`` belongs to the node of internal (global) id ``v``; :meth:`to_dict`,
    :meth:`to_table`, :meth:`top` and :meth:`value` speak the graph's original ids.

    Attributes
    ----------
    values : numpy.ndarray
        int64 counts or float64 coefficients, (N,), by internal id.
    graph : Graph
        The graph the values describe.
    name : str
        What the values are (``"triangles"``, ``"clustering"``, ``"4-cliques"``).

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
    name: str

    def __repr__(self) -> str:
        return f"NodeValues({self.name}: {self.values.dtype} {self.values.shape})"

    def __len__(self) -> int:
        return len(self.values)

    def to_dict(self) -> dict:
        """``{original_id: value}``, in internal id order."""
        return dict(zip(self.graph.node_ids().tolist(), self.values.tolist()))

    def to_table(self) -> pa.Table:
        """Columns ``node`` (original id) and the values, named :attr:`name`, one row per
        node in internal id order."""
        return pa.table({"node": pa.array(self.graph.node_ids()),
                         self.name: pa.array(self.values)})

    def top(self, k: int = 10, largest: bool = True) -> list[tuple]:
        """The ``k`` nodes with the largest (or smallest) values, ties by internal id, as
        ``(original_id, value)``."""
        order = np.argsort(-self.values if largest else self.values, kind="stable")[:k]
        ids = self.graph.to_original(order)
        return [(i.item() if hasattr(i, "item") else i, self.values[v].item())
                for i, v in zip(ids, order)]

    def value(self, node) -> float | int:
        """The value of the node of original id ``node``."""
        return self.values[int(self.graph.to_internal([node])[0])].item()
