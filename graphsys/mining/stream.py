"""Streaming enumeration: the matches of a pattern delivered as they are found.

:func:`chunks` runs the matcher of :mod:`graphsys.mining.pattern` one chunk at a
time (:func:`graphsys.mining.match_kernels.match_resume`): the depth-first search keeps its
stack (one candidate row per level, ``k x`` the longest row) between chunks and stops when
``chunk`` matches are written, so memory stays ``chunk x k`` ids plus the stack whatever
the number of matches, and nothing is searched past the last match taken. Closing the
iterator (or a callback of :func:`graphsys.mining.matches` returning False) stops the
search: an existence query costs the search up to its first match. (The public entry
points, :func:`~graphsys.mining.pattern.iter_matches` and
:func:`~graphsys.mining.pattern.matches`, live with the patterns.)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from graphsys.errors import check_count
from graphsys.mining import match_kernels
from graphsys.mining.edge_labels import NO_LISTS
from graphsys.mining.results import original_ids

#: Matches per chunk the search writes before handing them over.
DEFAULT_CHUNK = 1024


def symmetric_rows(view, directed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The symmetric rows of an oriented view (:meth:`~graphsys.views.Oriented.full`) and,
    for a directed pattern, each entry's stored directions (uint8; bit 1: the row's vertex
    to the entry, bit 2: back; the view built with ``directions=True``), else an empty
    array."""
    ptr, idx = view.full()
    bits = np.zeros(0, np.uint8)
    if directed:
        bits = np.empty(len(idx), np.uint8)
        match_kernels.full_directions(view.indptr, view.indices, view.dirs, ptr, bits)
    return ptr, idx, bits


def chunks(g, view, node_labels, plan, chunk: int = DEFAULT_CHUNK,
           internal: bool = False, rows: tuple | None = None) -> Iterator[np.ndarray]:
    """The matches of a compiled ``plan`` (:meth:`~graphsys.mining.Pattern.plan`) over an
    oriented ``view`` as arrays of at most ``chunk`` rows (column ``i``: pattern node
    ``i``): original ids, or internal ids with ``internal=True``. ``rows``: the rows to
    walk, ``(ptr, idx, bits, elists)`` (:func:`graphsys.mining.pattern.match_rows`; default:
    :func:`symmetric_rows`, no edge labels)."""
    chunk = check_count("chunk", chunk)
    if rows is None:
        rows = (*symmetric_rows(view, plan.directed), NO_LISTS)
    ptr, idx, bits, elists = rows
    k = len(plan.order)
    max_row = int(view.degree.max()) if view.num_nodes else 0
    state = np.zeros(2, np.int64)
    cand = np.empty((k, max(max_row, 1)), np.int64)
    ncand, pos, m = (np.zeros(k, np.int64) for _ in range(3))
    out = np.empty((chunk, k), np.int64)
    while True:
        got = int(match_kernels.match_resume(ptr, idx, node_labels,
                                             *plan.constraints(bits, elists), state, cand,
                                             ncand, pos, m, out))
        if got:
            rows = np.empty((got, k), np.int64)
            rows[:, plan.order] = view.order[out[:got]]
            yield rows if internal else original_ids(g, rows)
        if got < chunk:
            return


def rows_of(blocks: Iterator[np.ndarray]) -> Iterator[tuple]:
    """One tuple per row of each block, the blocks' iterator closed when this one is."""
    try:
        for rows in blocks:
            yield from (tuple(r) for r in rows.tolist())
    finally:
        blocks.close()


def deliver(rows: Iterator[tuple], callback, limit: int | None) -> int:
    """``callback(row)`` per row until it returns False or ``limit`` rows were delivered;
    the rows' iterator is closed. Returns the rows delivered."""
    done = 0
    try:
        if limit == 0:
            return 0
        for row in rows:
            done += 1
            if callback(row) is False or done == limit:
                break
    finally:
        rows.close()
    return done
