"""The arrays a kernel is handed, made alike at the boundary so that one compiled signature
serves every caller.

numba compiles a kernel once per combination of its arguments' types, and an array's type
includes whether it is writable: a stored adjacency index is a mapped, read-only array, one
built in memory is writable, so the same call on the two compiles the kernel twice (each a
parallel kernel's seconds). :func:`read_only` hands a kernel read-only views of the arrays
it only reads, whatever their source, so that both reach the one signature;
:func:`old_adjacency` hands the adjacency of the edge sets a previous result read so (what
the runs from a previous result, :mod:`graphsys.storage.previous`, update from).
"""

from __future__ import annotations

import numpy as np

from graphsys.storage import index_merge
from graphsys.storage.csr import index_file, map_index, map_offsets, mapped_index


def read_only(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Read-only views of ``arrays`` (no copy; the arrays themselves are left as they are).

    Parameters
    ----------
    *arrays : numpy.ndarray
        Arrays a kernel reads and never writes.

    Returns
    -------
    tuple of numpy.ndarray
        One view per array, ``flags.writeable`` False.

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.kernels.arrays import read_only
    >>> a = np.arange(3)
    >>> (v,) = read_only(a)
    >>> v.flags.writeable, a.flags.writeable, bool(np.shares_memory(a, v))
    (False, True, True)
    """
    out = tuple(a.view() for a in arrays)
    for v in out:
        v.flags.writeable = False
    return out


def old_adjacency(graph, old: list, kind: str, weighted: bool, check_ids: bool = True):
    """The edges ``old`` read as ``kind`` (``csr``, ``csc``): ``(indptr, indices, weights
    or empty)`` and the numbering ``lay`` of :mod:`graphsys.kernels.repair`. One edge set
    with a stored index is mapped as built (an index built before an append is not
    renumbered: the kernels translate the ids they touch); otherwise
    :meth:`~graphsys.storage.graph.Graph.csr` / ``csc`` (a merged or built adjacency), its
    neighbour ids of a stored index's dtype. Either way the arrays are read-only (views),
    so that one compiled signature of the repair kernels serves both. A stored index's
    offsets are checked (O(N)); its ids too (O(M)) unless ``check_ids`` is False, for a
    kernel that checks each id it reads (:func:`graphsys.kernels.repair._nbr`) and reads
    few of them."""
    empty = np.zeros(0, np.int64)
    info = graph.manifest.indexes.get(old[0], {}).get(kind) if len(old) == 1 else None
    mapped = None
    current = info is not None and (not info.layout or tuple(info.layout) == index_merge.layout(
        graph.manifest))
    if current and check_ids:  # in the graph's numbering: mapped and checked once per Graph
        mapped = mapped_index(graph, old[0], kind)
    elif info is not None:
        for column in info.columns():
            graph.check_hash(index_file(old[0], kind, column))
        if not check_ids:
            map_offsets(graph, old[0], kind)  # the ids are checked as they are read
        mapped = map_index(graph, old[0], kind, check_values=check_ids, renumber=False)
    if mapped is None:
        adj = graph.csr(old, weights=weighted) if kind == "csr" else graph.csc(
            old, weights=weighted)
        indptr, indices, weight, lay = adj.indptr, adj.indices, adj.weight, (empty,) * 3
    else:
        indptr, indices, weight = mapped.indptr, mapped.indices, mapped.weight
        lay = _layout(tuple(mapped.info.layout), index_merge.layout(graph.manifest))
    w = weight if weighted and weight is not None else np.zeros(0, np.float32)
    return (*read_only(indptr, indices, w), lay)


def _layout(old: tuple, new: tuple) -> tuple:
    """``(old_start, new_start, old_size)`` of each partition block, or empty arrays where
    the numbering has not moved."""
    if not old or old == new:
        return (np.zeros(0, np.int64),) * 3
    size = np.asarray(old, np.int64)
    starts = [np.concatenate([[0], np.cumsum(x, dtype=np.int64)[:-1]]).astype(np.int64)
              for x in (size, np.asarray(new, np.int64))]
    return starts[0], starts[1], size


def flags(n: int, *key_sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding a key of ``key_sets``: (by source, by target) bool (N,)."""
    out, into = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
    for keys in key_sets:
        out[keys // n] = True
        into[keys % n] = True
    return out, into
