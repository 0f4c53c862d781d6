"""Streaming enumeration: the matches of a pattern delivered as they are found.

:func:`iter_matches` runs the matcher of :mod:`graphsys.mining.pattern` one chunk at a
time (:func:`graphsys.mining.match_kernels.match_resume`): the depth-first search keeps its
stack (one candidate row per level, ``k x`` the longest row) between chunks and stops when
``chunk`` matches are written, so memory stays ``chunk x k`` ids plus the stack whatever
the number of matches, and nothing is searched past the last match taken. Closing the
iterator (or a callback of :func:`graphsys.mining.matches` returning False) stops the
search: an existence query costs the search up to its first match.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from graphsys.errors import ParameterError
from graphsys.mining import match_kernels
from graphsys.mining._docs import document
from graphsys.mining.results import original_ids

#: Matches per chunk the search writes before handing them over.
DEFAULT_CHUNK = 1024


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(name, f"must be a positive integer, got {value!r}")
    return int(value)


def chunks(graph, pattern, *, induced: bool = False, labels=None,
           edge_set: str | None = None, memory_limit: int | None = None,
           chunk: int = DEFAULT_CHUNK, internal: bool = False) -> Iterator[np.ndarray]:
    """The matches as arrays of at most ``chunk`` rows (column ``i``: pattern node ``i``),
    original ids, or internal ids with ``internal=True``."""
    from graphsys.mining.pattern import _prepare

    chunk = _positive("chunk", chunk)
    g, p, view, node_labels = _prepare(graph, pattern, labels, edge_set, memory_limit)
    plan = p.plan(bool(induced))
    ptr, idx = view.full()
    k = p.num_nodes
    max_row = int(view.degree.max()) if view.num_nodes else 0
    state = np.zeros(2, np.int64)
    cand = np.empty((k, max(max_row, 1)), np.int64)
    ncand, pos, m = (np.zeros(k, np.int64) for _ in range(3))
    out = np.empty((chunk, k), np.int64)
    while True:
        got = int(match_kernels.match_resume(ptr, idx, node_labels, plan.adj, plan.nonadj,
                                             plan.greater, plan.less, plan.labels, state,
                                             cand, ncand, pos, m, out))
        if got:
            rows = np.empty((got, k), np.int64)
            rows[:, plan.order] = view.order[out[:got]]
            yield rows if internal else original_ids(g, rows)
        if got < chunk:
            return


@document
def iter_matches(graph, pattern, *, induced: bool = False, labels=None,
                 edge_set: str | None = None, memory_limit: int | None = None,
                 chunk: int = DEFAULT_CHUNK) -> Iterator[tuple]:
    """The matches of ``pattern``, one tuple of original node ids per matched subgraph,
    found as they are taken.

    The search runs ``chunk`` matches ahead of the consumer and keeps its stack between
    chunks; stop iterating (or ``close()`` the iterator) and it stops. The order is
    :func:`graphsys.mining.matches`' (by the node placed first, in ascending degree, then
    depth first), the same on every run.

    Parameters
    ----------
    %(graph)s
    %(match)s
    %(edge_set)s
    %(memory_limit)s
    chunk : int, default 1024
        Matches the search writes at a time: the memory of the matches in flight.

    Yields
    ------
    tuple
        The graph node of each pattern node (``t[i]`` for pattern node ``i``).

    Examples
    --------
    Every triangle of a 4-clique, taken until one holds node 4:

    >>> import tempfile, itertools, numpy as np, graphsys
    >>> pairs = np.array(list(itertools.combinations([1, 2, 3, 4], 2)))
    >>> k4 = graphsys.from_numpy(pairs[:, 0], pairs[:, 1], tempfile.mkdtemp() + "/k4")
    >>> it = graphsys.mining.iter_matches(k4, "triangle")
    >>> next(t for t in it if 4 in t) is not None
    True
    >>> it.close()                                   # the search stops here
    >>> sum(1 for _ in graphsys.mining.iter_matches(k4, "4-cycle", chunk=1))
    3
    """
    for rows in chunks(graph, pattern, induced=induced, labels=labels, edge_set=edge_set,
                       memory_limit=memory_limit, chunk=chunk):
        yield from (tuple(r) for r in rows.tolist())


def deliver(graph, pattern, callback, limit, *, induced, labels, edge_set,
            memory_limit) -> int:
    """:func:`graphsys.mining.matches` with a callback: ``callback(row)`` per match until it
    returns False or ``limit`` rows were delivered. Returns the rows delivered."""
    if not callable(callback):
        raise ParameterError("callback", f"must be callable, got {type(callback).__name__}")
    if limit == 0:
        return 0
    chunk = DEFAULT_CHUNK if limit is None else min(int(limit), DEFAULT_CHUNK)
    done = 0
    it = iter_matches(graph, pattern, induced=induced, labels=labels, edge_set=edge_set,
                      memory_limit=memory_limit, chunk=chunk)
    try:
        for row in it:
            done += 1
            if callback(row) is False or done == limit:
                break
    finally:
        it.close()
    return done
