"""The one memory-budget rule of a view built in RAM, and its one refusal (:func:`check`,
which is :func:`graphsys.storage.csr.check_build`: storage's own in-RAM build of the out and
in rows refuses with it too, whoever calls it).

A build is first sized (its peak of anonymous bytes); it runs when that fits the budget:
``memory_limit`` if given, else the RAM the kernel reports available
(:func:`~graphsys.memory.available_memory`), so a graph too large for the machine is
refused in one line, never killed. The line names what would be built, both sizes, and the
way out: the ``graphsys index`` command that builds the index which is then mapped instead
(a time view maps none: it says so), else a larger budget.
"""

from __future__ import annotations

import time

from graphsys.errors import GraphsysError
from graphsys.memory import available_memory, budget
from graphsys.storage.csr import check_build as check
from graphsys.storage.csr import time_view_note

__all__ = ["budget", "cache_budget", "check", "one_type", "time_view_note"]

#: Seconds one read of the available RAM serves :func:`cache_budget` (reading
#: ``/proc/meminfo`` costs tens of microseconds: more than a call that finds its view cached
#: and scores a few pairs)
AVAILABLE_SECONDS = 1.0
_AVAILABLE = [-AVAILABLE_SECONDS - 1.0, 0]  # (monotonic seconds when read, bytes)


def cache_budget(memory_limit) -> int:
    """:func:`budget` for :func:`~graphsys.views.cache.cached`: its check of a structure
    already built allocates nothing, so where ``memory_limit`` is None the available RAM
    is read at most once every :data:`AVAILABLE_SECONDS`. A build's own check
    (:func:`check`) reads it afresh.

    Examples
    --------
    >>> cache_budget(1 << 20)
    1048576
    >>> cache_budget(None) > 0
    True
    """
    if memory_limit is not None:
        return budget(memory_limit)
    now = time.monotonic()
    if now - _AVAILABLE[0] > AVAILABLE_SECONDS:
        _AVAILABLE[:] = [now, available_memory()]
    return _AVAILABLE[1]


def one_type(graph, reader: str):
    """``graph``, refused in one line when it has several entity types (``reader``, e.g.
    ``"pattern mining"``, numbers the nodes of one).

    Parameters
    ----------
    graph : Graph
        An opened graph.
    reader : str
        What needs one entity type, named in the error.

    Returns
    -------
    Graph
        ``graph`` itself.

    Raises
    ------
    GraphsysError
        ``graph`` has several entity types.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.storage.format import RelationType
    >>> edges = pa.table({"src": ["u1", "u2"], "rel": ["rates"] * 2, "dst": ["i1", "i1"]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/g", rel_col="rel",
    ...                         relation_types=[RelationType("rates", "user", "item")])
    >>> one_type(g, "pattern mining")
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: pattern mining needs a graph of one entity type; ... (user, item)
    """
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"{reader} needs a graph of one entity type; {graph.path} has "
                            f"{len(graph.entity_types)} ({', '.join(graph.entity_types)})")
    return graph
