"""Partitioning strategies: which of the P partitions each node of an entity type goes to.

Strategies register by name in :data:`PARTITIONERS` (one line each, in
:mod:`graphsys.plugins`); a graph's manifest records the chosen name and its
:meth:`Partitioner.params`.

==========  ====================================================================
``hash``    hash(original id, seed) mod P; the default, as in PyTorch-BigGraph
``range``   contiguous runs of the sorted ids, equal node counts
``degree``  greedy LPT balance of the sum of degrees (edge endpoints) per partition
``fennel``  FENNEL streaming edge-cut minimization under a node capacity
==========  ====================================================================
"""

from __future__ import annotations

from typing import Any

from graphsys.plugins import DEFAULT_PARTITIONER, PARTITIONERS
from partitioners.base import EdgeListContext, PartitionContext, Partitioner
from partitioners.degree import DegreePartitioner
from partitioners.fennel import FennelPartitioner
from partitioners.hash import HashPartitioner
from partitioners.range import RangePartitioner


def get_partitioner(name: str, num_partitions: int, *, seed: int = 0,
                    **params: Any) -> Partitioner:
    """Instantiate the partitioning strategy registered as ``name``.

    Parameters
    ----------
    name : str
        A registered strategy: ``"hash"``, ``"range"``, ``"degree"``, ``"fennel"``, or a
        plug-in's name.
    num_partitions : int
        ``P >= 1``.
    seed : int, default 0
        Seed of the strategy's random choices.
    **params
        The strategy's own parameters (``gamma``, ``nu``, ``alpha``, ``order`` for
        Fennel).

    Returns
    -------
    Partitioner
        The strategy; call its :meth:`~Partitioner.assign` with a
        :class:`PartitionContext`.

    Raises
    ------
    ValueError
        One line naming the unknown strategy and the known names
        (:class:`~graphsys.registry.UnknownPluginError`), or the parameter that is
        unknown or out of range.

    Examples
    --------
    >>> from partitioners import EdgeListContext, get_partitioner
    >>> get_partitioner("range", 2).assign(EdgeListContext(5)).tolist()
    [0, 0, 0, 1, 1]
    >>> get_partitioner("fennel", 2, gamma=1.5).params()["gamma"]
    1.5
    """
    return PARTITIONERS.get(name)(num_partitions, seed=seed, **params)


__all__ = [
    "DEFAULT_PARTITIONER",
    "PARTITIONERS",
    "DegreePartitioner",
    "EdgeListContext",
    "FennelPartitioner",
    "HashPartitioner",
    "PartitionContext",
    "Partitioner",
    "RangePartitioner",
    "get_partitioner",
]
