"""Adjacency indexes of a grown graph: renumbered on read, and merged across edge sets.

An append moves a node's global id by the number of nodes added before it, the same shift
for every node of one partition of one type, keeping their order (:func:`remap_ids`); the
append records each old index's partition sizes as its ``layout``
(:class:`~graphsys.storage.format.IndexInfo`) and :func:`remap_index` shifts its ids on read
(in RAM: 8 bytes per node and 4 or 8 per entry). Several edge sets read as one
(:mod:`graphsys.storage.edge_views`) read their members' indexes merged (:func:`merge`):
each row is the concatenation of the members' rows, stably sorted by neighbour, so it equals
the row of an index built over all the edges at once; for a ``sym`` index equal neighbours
are then merged into one entry whose weight is their sum.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.storage.format import Manifest


def layout(manifest: Manifest) -> tuple[int, ...]:
    """The partition sizes of every entity type in manifest order, one after the other:
    the global numbering an index is built in."""
    return tuple(int(s) for et in manifest.entity_types.values() for s in et.partition_sizes)


def grown_from(old: tuple[int, ...], new: tuple[int, ...]) -> bool:
    """Whether the numbering ``new`` extends ``old`` as an append does: as many partitions,
    none smaller."""
    return len(old) == len(new) and all(a <= b for a, b in zip(old, new))


def _shifts(old: tuple[int, ...], new: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(first old global id of each block, int64 (B,); what each block's ids move by)."""
    old_start = np.concatenate([[0], np.cumsum(old, dtype=np.int64)[:-1]]).astype(np.int64)
    new_start = np.concatenate([[0], np.cumsum(new, dtype=np.int64)[:-1]]).astype(np.int64)
    return old_start, new_start - old_start


@numba.njit(parallel=True, cache=True, nogil=True)
def _remap(ids, old_start, shift, out):
    for k in numba.prange(ids.shape[0]):
        v = ids[k]
        b = np.searchsorted(old_start, v, side="right") - 1
        out[k] = v + shift[b]


def remap_ids(ids: np.ndarray, old: tuple[int, ...], new: tuple[int, ...],
              dtype=np.int64) -> np.ndarray:
    """Global ids of the numbering ``old`` in the grown numbering ``new`` (a new array of
    ``dtype``): each id moves by the nodes appended to the partitions before its own.

    Examples
    --------
    >>> remap_ids(np.array([0, 1, 2, 3]), (1, 3), (2, 4)).tolist()  # one node added to each
    [0, 2, 3, 4]
    """
    old_start, shift = _shifts(old, new)
    out = np.empty(len(ids), dtype)
    _remap(np.asarray(ids), old_start, shift, out)
    return out


def moved_ids(old: tuple[int, ...], new: tuple[int, ...]) -> np.ndarray:
    """Every id of the numbering ``old``, in order, in the grown numbering ``new``: what
    :func:`remap_ids` gives ``np.arange(sum(old))``, by blocks (no kernel to load).

    Examples
    --------
    >>> moved_ids((1, 3), (2, 4)).tolist()
    [0, 2, 3, 4]
    """
    return np.repeat(_shifts(old, new)[1], old) + np.arange(sum(old), dtype=np.int64)


def remap_index(indptr: np.ndarray, indices: np.ndarray, old: tuple[int, ...],
                new: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A CSR-shaped index (``indptr`` int64 (N_old+1,), ``indices`` (M,)) of the numbering
    ``old`` in the grown numbering ``new``: (``indptr`` int64 (N_new+1,), ``indices`` (M,)
    in the same order, int32 while the ids fit). Per-entry columns (weights) keep their
    positions."""
    n_new = int(sum(new))
    rows = moved_ids(old, new)
    deg = np.zeros(n_new, np.int64)
    deg[rows] = np.diff(indptr)
    out = np.zeros(n_new + 1, np.int64)
    np.cumsum(deg, out=out[1:])
    return out, remap_ids(indices, old, new, index_dtype(n_new))


def index_dtype(num_nodes: int) -> type:
    """int32 neighbour ids while every id fits, else int64 (as stored indexes)."""
    return np.int32 if num_nodes < 2**31 else np.int64


@numba.njit(parallel=True, cache=True, nogil=True)
def _place(indptr, indices, weight, fill, out_idx, out_w):
    """Copy each row of one member after what earlier members put in it (``fill``: int64
    (N,), where the row's next entry goes, advanced)."""
    for r in numba.prange(indptr.shape[0] - 1):
        lo, hi = indptr[r], indptr[r + 1]
        at = fill[r]
        for k in range(lo, hi):
            out_idx[at + k - lo] = indices[k]
            if weight.shape[0]:
                out_w[at + k - lo] = weight[k]
        fill[r] = at + hi - lo


@numba.njit(parallel=True, cache=True, nogil=True)
def sort_rows(indptr, idx, weight, perm):
    """Sort every row of a CSR by ``idx`` in place, stably (a row in order is left as it is),
    carrying ``weight`` and ``perm`` along when they are not empty: neighbour ids with their
    weights and edge order, or a temporal index's stamps with its neighbours and edge ids."""
    for r in numba.prange(indptr.shape[0] - 1):
        lo, hi = indptr[r], indptr[r + 1]
        if hi - lo < 2:
            continue
        ordered = True
        for k in range(lo + 1, hi):
            if idx[k] < idx[k - 1]:
                ordered = False
                break
        if ordered:
            continue
        order = np.argsort(idx[lo:hi], kind="mergesort")
        keys = idx[lo:hi][order]
        idx[lo:hi] = keys
        if weight.shape[0]:
            weight[lo:hi] = weight[lo:hi][order]
        if perm.shape[0]:
            perm[lo:hi] = perm[lo:hi][order]


@numba.njit(parallel=True, cache=True, nogil=True)
def _unique_counts(indptr, idx, out):
    for r in numba.prange(indptr.shape[0] - 1):
        c = 0
        for k in range(indptr[r], indptr[r + 1]):
            if k == indptr[r] or idx[k] != idx[k - 1]:
                c += 1
        out[r] = c


@numba.njit(parallel=True, cache=True, nogil=True)
def _collapse(indptr, idx, weight, new_indptr, out_idx, out_w):
    """Sorted rows with equal neighbours merged into one entry (weights summed)."""
    for r in numba.prange(indptr.shape[0] - 1):
        at = new_indptr[r] - 1
        for k in range(indptr[r], indptr[r + 1]):
            if k == indptr[r] or idx[k] != idx[k - 1]:
                at += 1
                out_idx[at] = idx[k]
                if weight.shape[0]:
                    out_w[at] = weight[k]
            elif weight.shape[0]:
                out_w[at] += weight[k]


def merge(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]], num_nodes: int,
          *, dedupe: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One CSR from several over the same ``num_nodes`` nodes: row ``v`` holds the entries
    of row ``v`` of every part, sorted by neighbour (stable), and with ``dedupe`` (a
    ``sym`` index) equal neighbours merged into one entry of summed weight.

    Parameters
    ----------
    parts : list of (indptr, indices, weight or None)
        ``indptr`` int64 (N+1,), ``indices`` int32/int64 (M_k,), ``weight`` float32 or
        None: all weighted or none.
    num_nodes : int
        N.
    dedupe : bool, default False
        Merge equal neighbours of a row.

    Returns
    -------
    (indptr int64 (N+1,), indices int32 while N < 2**31 else int64, weight float32 or None)
        New arrays (RAM).

    Examples
    --------
    >>> a = (np.array([0, 2, 2]), np.array([0, 1]), None)
    >>> b = (np.array([0, 1, 2]), np.array([1, 0]), None)
    >>> [x.tolist() for x in merge([a, b], 2)[:2]]
    [[0, 3, 4], [0, 1, 1, 0]]
    >>> [x.tolist() for x in merge([a, b], 2, dedupe=True)[:2]]
    [[0, 2, 3], [0, 1, 0]]
    """
    weighted = all(w is not None for _, _, w in parts) and bool(parts)
    deg = np.zeros(num_nodes, np.int64)
    for indptr, _, _ in parts:
        deg += np.diff(indptr)
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    m = int(indptr[-1])
    idx = np.empty(m, index_dtype(num_nodes))
    w = np.empty(m if weighted else 0, np.float32)
    fill = indptr[:-1].copy()
    for p_indptr, p_idx, p_w in parts:
        _place(p_indptr, p_idx, p_w if weighted else np.zeros(0, np.float32), fill, idx, w)
    if len(parts) > 1:
        sort_rows(indptr, idx, w, np.zeros(0, np.int64))
    if dedupe:
        counts = np.empty(num_nodes, np.int64)
        _unique_counts(indptr, idx, counts)
        new_indptr = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(counts, out=new_indptr[1:])
        out_idx = np.empty(int(new_indptr[-1]), idx.dtype)
        out_w = np.zeros(len(out_idx) if weighted else 0, np.float32)
        _collapse(indptr, idx, w, new_indptr, out_idx, out_w)
        indptr, idx, w = new_indptr, out_idx, out_w
    return indptr, idx, (w if weighted else None)


@numba.njit(nogil=True)
def _position(keys, key):
    """Where ``key`` is in the sorted ``keys``, -1 if absent."""
    p = np.searchsorted(keys, key)
    return p if p < keys.shape[0] and keys[p] == key else -1


@numba.njit(nogil=True)
def _key(row, nbr, n, transpose):
    return np.int64(nbr) * n + row if transpose else np.int64(row) * n + nbr


@numba.njit(cache=True, nogil=True)
def _kept_counts(indptr, idx, rows, n, transpose, deleted, out):
    """Entries of each row of ``rows`` not among ``deleted``, into ``out`` (by row)."""
    for r in rows:
        c = indptr[r + 1] - indptr[r]
        for k in range(indptr[r], indptr[r + 1]):
            if _position(deleted, _key(r, idx[k], n, transpose)) >= 0:
                c -= 1
        out[r] = c


@numba.njit(parallel=True, cache=True, nogil=True)
def _changed_rows(indptr, idx, weight, new_indptr, touched, n, transpose, deleted, updated,
                  updated_w, out_idx, out_w):
    """Each row without its ``deleted`` entries, ``updated`` ones given their new weight."""
    for r in numba.prange(indptr.shape[0] - 1):
        at = new_indptr[r]
        for k in range(indptr[r], indptr[r + 1]):
            w = weight[k] if weight.shape[0] else np.float32(0.0)
            if touched[r]:
                key = _key(r, idx[k], n, transpose)
                if _position(deleted, key) >= 0:
                    continue
                p = _position(updated, key)
                if p >= 0:
                    w = updated_w[p]
            out_idx[at] = idx[k]
            if weight.shape[0]:
                out_w[at] = w
            at += 1


def kept_counts(indptr: np.ndarray, indices: np.ndarray, transpose: bool,
                deleted: np.ndarray, updated: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each row's entries of a CSR (``transpose``: a CSC) that are not among the pairs
    ``deleted`` (:func:`through_changes`'s keys), int64 (N,), in O(N) plus the rows
    holding a deleted or ``updated`` pair, which are searched (bool (N,), also
    returned)."""
    n = len(indptr) - 1
    touched = np.zeros(n, np.bool_)
    for keys in (deleted, updated if updated is not None else deleted):
        touched[(keys % n) if transpose else (keys // n)] = True
    counts = np.diff(indptr).astype(np.int64, copy=False)
    _kept_counts(indptr, indices, np.flatnonzero(touched), n, transpose,
                 np.asarray(deleted, np.int64), counts)
    return counts, touched


def through_changes(indptr: np.ndarray, indices: np.ndarray, weight: np.ndarray | None,
                    transpose: bool, deleted: np.ndarray, updated: np.ndarray,
                    updated_weight: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A CSR (``transpose``: a CSC) over global ids without the pairs ``deleted`` and with
    the pairs ``updated`` given ``updated_weight`` (where it has weights): keys ``u * N +
    v`` of a pair ``u -> v``, sorted int64, as a view reads its members through its change
    sets (:mod:`graphsys.storage.edge_changes`). Rows keep their order. Returns new arrays
    (``indptr`` int64 (N+1,), ``indices`` of ``indices``' dtype, ``weight`` float32 or
    None).

    Examples
    --------
    >>> ip, ix = np.array([0, 2, 3]), np.array([0, 1, 0], np.int32)
    >>> [a.tolist() for a in through_changes(ip, ix, None, False, np.array([1]),
    ...                                      np.zeros(0, np.int64), np.zeros(0))[:2]]
    [[0, 1, 2], [0, 0]]
    """
    n = len(indptr) - 1
    deleted, updated = np.asarray(deleted, np.int64), np.asarray(updated, np.int64)
    counts, touched = kept_counts(indptr, indices, transpose, deleted, updated)
    no_w = np.zeros(0, np.float32)
    new_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    out_idx = np.empty(int(new_indptr[-1]), indices.dtype)
    out_w = np.empty(len(out_idx) if weight is not None else 0, np.float32)
    _changed_rows(indptr, indices, no_w if weight is None else weight, new_indptr, touched,
                  n, transpose, deleted, updated,
                  np.asarray(updated_weight, np.float32), out_idx, out_w)
    return new_indptr, out_idx, (out_w if weight is not None else None)
