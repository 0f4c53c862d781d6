"""The partitioner interface: assign every node of one entity type to one of P partitions.

A strategy subclasses :class:`Partitioner` and implements :meth:`Partitioner.assign`, which
reads what it needs from a :class:`PartitionContext` (ingest provides one per entity type;
:class:`EdgeListContext` is an in-memory one for tests and experiments) and returns the
partition of every node. Register it by name in :data:`graphsys.plugins.PARTITIONERS` (or
through the ``graphsys.plugins`` entry-point group, as ``partitioner.NAME``) and ingest can
use it by that name.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import numpy as np


class PartitionContext(Protocol):
    """What a partitioner may read about the nodes of one entity type.

    Nodes are numbered densely ``0..num_nodes-1`` in the order of their sorted original ids
    (``ids``). ``degrees()`` and ``adjacency()`` are computed on demand by streaming the
    input edges, so a partitioner that does not call them costs no extra pass.
    """

    num_nodes: int
    #: Sorted unique original ids: an int64 NumPy array, or a pyarrow string array.
    ids: Any
    #: Memory budget in bytes that the partitioner should stay within.
    memory_limit: int

    def degrees(self) -> np.ndarray:
        """Out-degree + in-degree of every node over all input edges, int64, shape (N,)."""

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """Undirected adjacency among nodes of this type as CSR.

        Returns ``(indptr, indices)``: int64 arrays of shapes (N+1,) and (indptr[-1],);
        each input edge (u, v) with both ends of this type appears as v in u's row and
        u in v's row. The arrays may be ``np.memmap`` views of temporary files.
        """


class EdgeListContext:
    """A :class:`PartitionContext` over in-memory ids and edges.

    Parameters
    ----------
    ids : int or array-like
        Sorted unique original ids (an int64 NumPy array or a pyarrow string array), or
        an int ``N`` for the ids ``0 .. N-1``.
    src, dst : array-like of int, optional
        Edge endpoints as node indices in ``[0, N)`` (positions in ``ids``); default no
        edges.
    memory_limit : int, default 1 GiB
        The budget, in bytes, the partitioner is asked to stay within.

    Examples
    --------
    >>> from partitioners import EdgeListContext
    >>> ctx = EdgeListContext(4, src=[0, 0, 1], dst=[1, 2, 2])
    >>> ctx.degrees().tolist()
    [2, 2, 2, 0]
    >>> indptr, indices = ctx.adjacency()
    >>> indptr.tolist(), indices.tolist()
    ([0, 2, 4, 6, 6], [1, 2, 2, 0, 0, 1])
    """

    def __init__(self, ids: Any, src: Any = None, dst: Any = None,
                 memory_limit: int = 1 << 30):
        self.ids = np.arange(ids, dtype=np.int64) if isinstance(ids, int) else ids
        self.num_nodes = len(self.ids)
        self.src = np.zeros(0, np.int64) if src is None else np.asarray(src, np.int64)
        self.dst = np.zeros(0, np.int64) if dst is None else np.asarray(dst, np.int64)
        self.memory_limit = memory_limit

    def degrees(self) -> np.ndarray:
        """Out-degree + in-degree of every node, int64, shape (N,)."""
        ends = np.concatenate([self.src, self.dst])
        return np.bincount(ends, minlength=self.num_nodes).astype(np.int64)

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """Undirected CSR ``(indptr, indices)``: every edge in both endpoints' rows."""
        rows = np.concatenate([self.src, self.dst])
        cols = np.concatenate([self.dst, self.src])
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.num_nodes), out=indptr[1:])
        return indptr, cols[np.argsort(rows, kind="stable")]


class Partitioner(ABC):
    """Base class of partitioning strategies: which partition each node goes to.

    A subclass sets the class attribute :attr:`name` (its registry key), takes its own
    parameters as keyword arguments of ``__init__`` (passing the rest to this one, which
    refuses unknown names), reports them in :meth:`params` (recorded in the graph's
    manifest) and implements :meth:`assign`. Ingest calls :meth:`assign` once per entity
    type, when ``num_partitions > 1``.

    Parameters
    ----------
    num_partitions : int
        ``P >= 1``.
    seed : int, default 0
        Seed of every random choice the strategy makes, an integer in ``[-2**63, 2**64)``,
        taken modulo ``2**64``: a negative seed ``s`` is ``2**64 + s`` (seed -1 places
        nodes as seed ``2**64 - 1`` does). :attr:`seed` and :meth:`params`, which the
        manifest records, hold that value in ``[0, 2**64)``.
    **params
        Strategy-specific parameters; unknown names are errors.

    Raises
    ------
    ValueError
        ``num_partitions < 1``, a seed that is not such an integer, or an unknown parameter.

    See Also
    --------
    partitioners.get_partitioner : a registered strategy by name.

    Examples
    --------
    A strategy that puts even ids in partition 0 and odd ids in partition 1 (mod P):

    >>> import numpy as np
    >>> from partitioners import EdgeListContext, Partitioner
    >>> class ParityPartitioner(Partitioner):
    ...     name = "parity"
    ...     def assign(self, ctx):
    ...         return (np.asarray(ctx.ids) % 2 % self.num_partitions).astype(np.int32)
    >>> ParityPartitioner(2).assign(EdgeListContext(5)).tolist()
    [0, 1, 0, 1, 0]
    >>> ParityPartitioner(2, colour="red")
    Traceback (most recent call last):
    ...
    ValueError: partitioner 'parity' has no parameter(s) colour
    """

    name: ClassVar[str]

    def __init__(self, num_partitions: int, *, seed: int = 0, **params: Any):
        if isinstance(num_partitions, bool) or not isinstance(num_partitions, int) \
                or num_partitions < 1:
            raise ValueError(f"num_partitions must be an integer >= 1, got {num_partitions!r}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) \
                or not -(1 << 63) <= seed < 1 << 64:   # 2**64 placed nodes as seed 0
            raise ValueError(f"seed must be an integer in [-2**63, 2**64), got {seed!r}")
        self.num_partitions = num_partitions
        self.seed = int(seed) % (1 << 64)  # the seed the strategies use, as recorded
        if params:
            raise ValueError(f"partitioner {self.name!r} has no parameter(s) "
                             f"{', '.join(sorted(params))}")

    def params(self) -> dict[str, Any]:
        """Every parameter (defaults included) as JSON-able values, recorded in the manifest."""
        return {"seed": self.seed}

    @abstractmethod
    def assign(self, ctx: PartitionContext) -> np.ndarray:
        """The partition of every node of one entity type.

        Parameters
        ----------
        ctx : PartitionContext
            The nodes (``num_nodes``, sorted original ``ids``) and, on demand, their
            ``degrees()`` and undirected ``adjacency()``.

        Returns
        -------
        numpy.ndarray
            int32, shape ``(ctx.num_nodes,)``, values in ``[0, num_partitions)``; entry
            ``i`` is the partition of the node with id ``ctx.ids[i]``.
        """
