"""The oriented structures a count keeps on an opened graph, so that the next count on it
does not orient the graph again.

One cache per opened :class:`~graphsys.storage.graph.Graph` (held while the Graph lives:
a weak key), its entries keyed by edge set and what was built (the order and its options,
e.g. ``("triangles", "degree")``). Each entry remembers the arrays it was built from: the
mapped stored index (``sym``, or an undirected edge set's ``csr``) when it came from one,
else the edge set's manifest record (the buckets an opened graph reads do not change under
it). An entry whose sources are no longer what the graph maps (an index built or rebuilt
since: :func:`~graphsys.storage.csr.forget_mapped`) is dropped and built again.

**Memory.** A kept structure is anonymous memory held between calls, and counts against
the budget of every call that uses the cache: a call finds its entry only when the entry's
bytes plus what the call needs beside it fit its ``memory_limit`` (else the entry is
dropped first and the call runs as without a cache: it may then build again, go out of
core, or be refused); before a new entry is built, the graph's other entries are dropped
when they would not fit beside it; an entry that does not fit the budget with nothing
else is not kept.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sources_of(graph, edge_set: str) -> tuple:
    """What an entry of ``edge_set`` is built from: the arrays of the stored index the
    mining views read (:func:`~graphsys.mining.oriented.mapped_symmetric`), else the edge
    set's manifest record."""
    from graphsys.mining.oriented import mapped_symmetric

    sym = mapped_symmetric(graph, edge_set)
    if sym is not None:
        return sym[0], sym[1]
    return (graph.edge_set(edge_set),)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def held_bytes(graph) -> int:
    """Bytes the cached structures of ``graph`` hold."""
    return sum(nbytes for _, nbytes, _ in _CACHES.get(graph, {}).values())


def forget(graph, edge_set: str | None = None) -> None:
    """Drop the cached structures of ``graph`` (of one edge set, when given)."""
    cache = _CACHES.get(graph, {})
    for key in [k for k in cache if edge_set is None or k[0] == edge_set]:
        del cache[key]


def cached(graph, key: tuple, build: Callable[[], Any], *, nbytes: Callable[[Any], int],
           budget: int, beside: int = 0) -> Any:
    """The structure ``key`` (``(edge set, what, ...)``) of ``graph``: the cached one when
    it is still built from the graph's current sources and it fits the budget, else
    ``build()`` (kept when it fits).

    Parameters
    ----------
    graph : Graph
        The opened graph the cache belongs to.
    key : tuple
        The edge set's name first, then what is built and its options.
    build : callable
        Builds the structure (called at most once).
    nbytes : callable
        The bytes a structure holds.
    budget : int
        The call's memory budget in bytes.
    beside : int, default 0
        Bytes the call needs beside the structure (scratch): a cached structure is used
        when ``its bytes + beside <= budget``.

    Returns
    -------
    object
        The structure.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> built = []
    >>> def build():
    ...     built.append(1)
    ...     return np.arange(4)
    >>> for _ in range(2):
    ...     _ = cached(g, ("default", "demo"), build, nbytes=lambda a: a.nbytes, budget=1 << 20)
    >>> len(built), held_bytes(g)
    (1, 32)
    >>> _ = cached(g, ("default", "demo"), build, nbytes=lambda a: a.nbytes, budget=16)
    >>> len(built), held_bytes(g)  # over a smaller budget: built again, not kept
    (2, 0)
    """
    cache = _CACHES.setdefault(graph, {})
    sources = sources_of(graph, key[0])
    hit = cache.pop(key, None)
    if hit is not None and _same(hit[0], sources) and hit[1] + beside <= budget:
        cache[key] = hit
        return hit[2]
    del hit
    if held_bytes(graph) + beside > budget:
        cache.clear()  # the others would not fit beside the new build
    value = build()
    size = int(nbytes(value))
    if size + beside <= budget and held_bytes(graph) + size + beside <= budget:
        cache[key] = (sources, size, value)
    return value
