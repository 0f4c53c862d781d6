"""The one cache of derived structures per opened graph.

Every view built in RAM (and what an engine derives from one: an oriented graph, the
measures' memo) is kept on the opened :class:`~graphsys.storage.graph.Graph` it came from
(``graph._view_cache``, freed with the Graph), keyed by edge set and what was built, e.g.
``("default", "oriented", "degree")``. Each entry remembers what it was built from: the
edge set's manifest record and the records of its stored indexes. An entry whose sources
are no longer the graph's (an index built or rebuilt since, which replaces its record) is
dropped and built again.

**Memory.** A kept structure is anonymous memory held between calls, and counts against
the budget of every call that uses the cache: a call finds its entry only when the entry's
bytes plus what the call needs beside it fit the budget (else the entry is dropped first
and the call runs as without a cache: it may then build again, go out of core, or be
refused); before a new entry is built, the graph's other entries are dropped when they
would not fit beside it; an entry that does not fit the budget with nothing else is not
kept. A view mapped from a stored index holds no anonymous memory (0 bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _entries(graph) -> dict:
    return graph.__dict__.setdefault("_view_cache", {})


def sources_of(graph, edge_set: str) -> tuple:
    """What an entry of ``edge_set`` is built from: its manifest record, and the records
    of the stored indexes of it (and of its members) that the manifest lists."""
    es = graph.edge_set(edge_set)
    indexes = graph.manifest.indexes
    infos = [info for name in (es.name, *(es.members or ()))
             for _, info in sorted(indexes.get(name, {}).items())]
    return (es, *infos)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def held_bytes(graph) -> int:
    """Anonymous bytes the cached structures of ``graph`` hold (a mapped view: 0).

    Parameters
    ----------
    graph : Graph
        An opened graph.

    Returns
    -------
    int
        The sum of the kept entries' sizes.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.views import view
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> held_bytes(g)
    0
    >>> view(g, "sym").indices.tolist()  # built in RAM and kept
    [1, 0, 2, 1]
    >>> held_bytes(g) > 0
    True
    """
    return sum(nbytes for _, nbytes, _ in _entries(graph).values())


def forget(graph, edge_set: str | None = None) -> None:
    """Drop the cached structures of ``graph`` (of one edge set, when given); the next
    call that needs one builds it again.

    Parameters
    ----------
    graph : Graph
        An opened graph.
    edge_set : str, optional
        The edge set whose entries go (default: all of them).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.views import view
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> _ = view(g, "sym")
    >>> forget(g, "other")  # another edge set's entries only
    >>> held_bytes(g) > 0
    True
    >>> forget(g)
    >>> held_bytes(g)
    0
    """
    cache = _entries(graph)
    for key in [k for k in cache if edge_set is None or k[0] == edge_set]:
        del cache[key]


def peek(graph, key: tuple) -> Any:
    """The cached structure ``key`` of ``graph`` if it is still built from the graph's
    sources, else None (nothing is built or dropped)."""
    hit = _entries(graph).get(key)
    return hit[2] if hit is not None and _same(hit[0], sources_of(graph, key[0])) else None


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
        The anonymous bytes a structure holds.
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
    cache = _entries(graph)
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
        cache[key] = (sources_of(graph, key[0]), size, value)
    return value
