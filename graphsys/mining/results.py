"""What mining calls return: per-node values keyed back to the graph's original ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


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
