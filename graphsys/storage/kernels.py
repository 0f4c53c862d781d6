"""Numba kernels of the storage layer: id lookup, local offsets, bucket routing, CSR build."""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa


@numba.njit(cache=True, nogil=True)
def _cmp_bytes(a_data, a_start, a_end, b_data, b_start, b_end):
    la = a_end - a_start
    lb = b_end - b_start
    n = la if la < lb else lb
    for k in range(n):
        x = a_data[a_start + k]
        y = b_data[b_start + k]
        if x != y:
            return -1 if x < y else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


@numba.njit(cache=True, nogil=True)
def _search_strings(s_off, s_data, q_off, q_data, out):
    n = s_off.shape[0] - 1
    for i in range(q_off.shape[0] - 1):
        lo = 0
        hi = n
        while lo < hi:
            mid = (lo + hi) >> 1
            c = _cmp_bytes(s_data, s_off[mid], s_off[mid + 1], q_data, q_off[i], q_off[i + 1])
            if c < 0:
                lo = mid + 1
            else:
                hi = mid
        if lo < n and _cmp_bytes(s_data, s_off[lo], s_off[lo + 1],
                                 q_data, q_off[i], q_off[i + 1]) == 0:
            out[i] = lo
        else:
            out[i] = -1


def string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64 (n+1,), data uint8) of a pyarrow string/large_string array, zero-based."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type == pa.string():
        arr = arr.cast(pa.large_string())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(
        0, np.uint8)
    return offsets, data


def lookup_strings(sorted_ids: pa.Array, queries: pa.Array) -> np.ndarray:
    """Index of every query in ``sorted_ids`` (byte-wise sorted, unique), -1 where absent.

    Returns int64 (len(queries),). Binary search over the Arrow buffers, no Python objects.
    """
    s_off, s_data = string_buffers(sorted_ids)
    q_off, q_data = string_buffers(queries)
    out = np.empty(len(queries), dtype=np.int64)
    _search_strings(s_off, s_data, q_off, q_data, out)
    return out


def lookup_ints(sorted_ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Index of every query in the sorted unique int64 ``sorted_ids``, -1 where absent."""
    pos = np.searchsorted(sorted_ids, queries)
    pos_c = np.minimum(pos, len(sorted_ids) - 1) if len(sorted_ids) else pos
    found = (pos < len(sorted_ids)) & (sorted_ids[pos_c] == queries) if len(sorted_ids) else (
        np.zeros(len(queries), bool))
    return np.where(found, pos, -1).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def local_offsets(part, num_partitions):
    """Local offset of every node within its partition (rank in dense-index order).

    Args: part int32 (N,). Returns (local int64 (N,), sizes int64 (P,)).
    """
    sizes = np.zeros(num_partitions, np.int64)
    local = np.empty(part.shape[0], np.int64)
    for v in range(part.shape[0]):
        p = part[v]
        local[v] = sizes[p]
        sizes[p] += 1
    return local, sizes


@numba.njit(cache=True, nogil=True)
def mark_seen(ids, seen):
    """Set ``seen[id] = 1`` for every id (all in range); return nothing."""
    for k in range(ids.shape[0]):
        seen[ids[k]] = 1


@numba.njit(cache=True, nogil=True)
def csr_fill(rows, cols, cursor, indices, w_in, w_out, perm, edge_base):
    """Scatter one chunk of edges into CSR arrays: row ``rows[k]`` gets ``cols[k]`` at
    ``cursor[row]`` (then advanced). ``w_out``/``perm`` (when non-empty) receive the edge's
    weight ``w_in[k]`` / its stream position ``edge_base + k``."""
    for k in range(rows.shape[0]):
        r = rows[k]
        pos = cursor[r]
        indices[pos] = cols[k]
        if w_out.shape[0] > 0:
            w_out[pos] = w_in[k]
        if perm.shape[0] > 0:
            perm[pos] = edge_base + k
        cursor[r] = pos + 1


@numba.njit(parallel=True, cache=True, nogil=True)
def gather(values, index, out):
    """``out[k] = values[index[k]]`` in parallel (``out`` may be ``index`` itself when the
    dtypes agree; the BSP engine gathers in place so). Returns ``out``."""
    for k in numba.prange(index.shape[0]):
        out[k] = values[index[k]]
    return out


@numba.njit(cache=True, nogil=True)
def gather_rows(table, index, out):
    """``out[k] = table[index[k]]`` for rows of a 2-D ``table`` (N, d), row by row on this
    thread and GIL-free (a minibatch producer leaves the GIL and the other core to the
    training step); ``index`` int64 (B,) in ``[0, N)`` (the caller checks); ``out`` (B, d)
    of ``table``'s dtype. Returns ``out``."""
    d = table.shape[1]
    for k in range(index.shape[0]):
        r = index[k]
        for j in range(d):
            out[k, j] = table[r, j]
    return out


@numba.njit(cache=True, nogil=True, parallel=True)
def bucket_keys(src, dst, part_l, part_r, local_l, local_r, num_partitions):
    """Bucket id ``part_l[src]*P + part_r[dst]`` (int32) and sort key
    ``local_l[src] << 32 | local_r[dst]`` (uint64) of every edge, given dense node indices."""
    n = src.shape[0]
    bucket = np.empty(n, np.int32)
    key = np.empty(n, np.uint64)
    for k in numba.prange(n):
        a = src[k]
        b = dst[k]
        bucket[k] = part_l[a] * num_partitions + part_r[b]
        key[k] = (np.uint64(local_l[a]) << np.uint64(32)) | np.uint64(local_r[b])
    return bucket, key


@numba.njit(cache=True, nogil=True)
def group_by_bucket(bucket, num_buckets, key, rel, weight):
    """Stable counting sort of edges by bucket id. Returns (starts int64 (B+1,), key, rel,
    weight) with each bucket's rows contiguous; ``rel``/``weight`` may be empty (absent)."""
    starts = np.zeros(num_buckets + 1, np.int64)
    for k in range(bucket.shape[0]):
        starts[bucket[k] + 1] += 1
    for b in range(num_buckets):
        starts[b + 1] += starts[b]
    pos = starts[:-1].copy()
    key_out = np.empty_like(key)
    rel_out = np.empty_like(rel)
    w_out = np.empty_like(weight)
    for k in range(bucket.shape[0]):
        b = bucket[k]
        p = pos[b]
        key_out[p] = key[k]
        if rel.shape[0] > 0:
            rel_out[p] = rel[k]
        if weight.shape[0] > 0:
            w_out[p] = weight[k]
        pos[b] = p + 1
    return starts, key_out, rel_out, w_out


@numba.njit(cache=True, nogil=True)
def count_into(index, counts):
    """``counts[index[k]] += 1`` for every k (a bincount that accumulates in place)."""
    for k in range(index.shape[0]):
        counts[index[k]] += 1
