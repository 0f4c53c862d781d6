"""The one memory-budget rule of a view built in RAM, and its one refusal.

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
from graphsys.storage.adjacency_index import build_command
from graphsys.storage.time_view import TimeView
from graphsys.units import format_size

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
    ``"pattern mining"``, numbers the nodes of one)."""
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"{reader} needs a graph of one entity type; {graph.path} has "
                            f"{len(graph.entity_types)} ({', '.join(graph.entity_types)})")
    return graph


def time_view_note(view: TimeView) -> str:
    """Why a time view maps no index, and the way to one: a stored index holds every edge,
    also those after the view's time."""
    return (f"ingest the view as a graph of its own and index it (a view "
            f"{view.window} maps none of the indexes of {view.path}: they hold the edges "
            f"stamped later too)")


def check(graph, edge_set: str | None, what: str, need: int, memory_limit,
          kinds: tuple[str, ...] | None = None, then: str = "") -> int:
    """The budget of ``memory_limit`` (:func:`budget`), refusing in one line a build of
    ``need`` bytes over it.

    Parameters
    ----------
    graph : Graph
        The opened graph.
    edge_set : str or None
        The edge set.
    what : str
        What would be built, as the message names it.
    need : int
        Its size in bytes.
    memory_limit : int or None
        The budget in bytes; None: the RAM available now.
    kinds : tuple of str, optional
        The stored indexes that would be mapped instead (None: none can).
    then : str, default ""
        What else those indexes allow, for the message.

    Returns
    -------
    int
        The budget in bytes.

    Raises
    ------
    GraphsysError
        ``need`` exceeds the budget: one line naming both sizes and the way out (the
        ``graphsys index`` command that builds ``kinds``).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> try:
    ...     check(g, None, "the symmetric adjacency", 10**9, 10**6, ("sym",))
    ... except GraphsysError as exc:
    ...     print(str(exc).replace(str(g.path), "G"))
    building the symmetric adjacency in RAM needs about 1 GB, more than the 1 MB of
    memory_limit; build its index on disk once and it is mapped instead: graphsys index G
    --undirected
    """
    limit = budget(memory_limit)
    if need <= limit:
        return limit
    if isinstance(graph, TimeView):
        fix = f"raise memory_limit, or {time_view_note(graph)}"
    elif kinds:
        fix = (f"build its index on disk once and it is mapped instead{then}: "
               f"{build_command(graph, kinds, edge_set)}")
    else:
        fix = "no stored index can serve it: raise memory_limit or use a machine with more RAM"
    raise GraphsysError(f"building {what} in RAM needs about {format_size(need)}, more than "
                        f"the {format_size(limit)} of "
                        f"{'memory_limit' if memory_limit is not None else 'available RAM'}; "
                        f"{fix}")
