"""NumPy twins of the ingest's numba kernels (:mod:`graphsys.storage.kernels`), for inputs
small enough that numba's one-time start-up in a process (its lazy imports, LLVM, loading
each kernel's cached machine code) costs more than the work itself.

An ingest of in-memory tables of at most :data:`SMALL_INGEST_EDGES` edges (the
``from_numpy`` / ``from_scipy`` / ``from_pyg`` / ``from_dgl`` / ``from_networkx`` sizes)
runs on these; larger ones, and every ingest of files, on the numba kernels. Each function
has its twin's signature and contract, and writes the same bytes: the stored graph does not
depend on which ran (tests/storage/test_kernels_small.py compares them, and two ingests'
file digests).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Largest in-memory edge count (rows of every edge table together) ingested with these
#: kernels; above it numba's faster kernels repay their start-up.
SMALL_INGEST_EDGES = 1 << 22
#: Non-zero bitmap words unpacked at a time by :func:`seen_ids` (64 bytes of scratch each).
_UNPACK_WORDS = 1 << 16
_LOW = np.int64(0xFFFFFFFF)


def count_into(index, counts):
    """``counts[index[k]] += 1`` for every k."""
    if len(index):
        counts += np.bincount(index, minlength=len(counts))[:len(counts)]


def mark_seen(ids, seen):
    """Set bit ``v & 63`` of word ``v >> 6`` of ``seen`` (uint64) for every id ``v``."""
    v = np.asarray(ids).astype(np.uint64, copy=False)
    np.bitwise_or.at(seen, v >> np.uint64(6), np.left_shift(np.uint64(1), v & np.uint64(63)))


def seen_ids(seen):
    """The ids whose bits :func:`mark_seen` set, ascending (int64)."""
    words = np.flatnonzero(seen)
    out = []
    lanes = np.arange(64, dtype=np.int64)
    for lo in range(0, len(words), _UNPACK_WORDS):
        w = words[lo:lo + _UNPACK_WORDS]
        bits = np.unpackbits(np.ascontiguousarray(seen[w]).view(np.uint8),
                             bitorder="little").reshape(-1, 64).astype(bool)
        out.append(((w.astype(np.int64) << 6)[:, None] + lanes)[bits])
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def id_buckets(sorted_ids):
    """None: :func:`lookup_ints` searches the whole sorted array."""
    return None


def lookup_ints(sorted_ids, queries, buckets=None):
    """Index of every query in the sorted unique int64 ``sorted_ids``, -1 where absent."""
    queries = np.asarray(queries)
    if len(sorted_ids) == 0:
        return np.full(len(queries), -1, np.int64)
    pos = np.searchsorted(sorted_ids, queries)
    found = sorted_ids[np.minimum(pos, len(sorted_ids) - 1)] == queries
    return np.where(found, pos, -1).astype(np.int64, copy=False)


def lookup_strings(sorted_ids, queries):
    """Index of every query in the string array ``sorted_ids``, -1 where absent."""
    if isinstance(queries, pa.ChunkedArray):
        queries = queries.combine_chunks()
    found = pc.index_in(queries.cast(pa.large_string()),
                        value_set=sorted_ids.cast(pa.large_string()))
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def gather(values, index, out):
    """``out[k] = values[index[k]]``; returns ``out``."""
    out[:] = values[index]
    return out


def local_offsets(part, num_partitions):
    """Local offset of every node within its partition (rank in dense-index order):
    ``(local, sizes)``, int64 (N,) and (P,)."""
    part = np.asarray(part)
    sizes = np.bincount(part, minlength=num_partitions).astype(np.int64)
    order = np.argsort(part, kind="stable")
    local = np.empty(len(part), np.int64)
    local[order] = np.arange(len(part), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes,
                                                                    sizes)
    return local, sizes


def route_codes(part, local, dense, out):
    """``out[i] = part[v] << 32 | local[v]`` for node ``v = dense[i]`` (``v = i`` when
    ``dense`` is empty), -1 where ``v < 0``. Returns ``out``."""
    v = dense if len(dense) else np.arange(len(out), dtype=np.int64)
    if len(part) == 0:
        out[:] = -1
        return out
    valid = v >= 0
    at = np.where(valid, v, 0)
    out[:] = np.where(valid, (part[at].astype(np.int64) << 32) | local[at], -1)
    return out


def _routed(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected, key_bits=0):
    """The routed rows of one chunk, in routing order (see the numba twins: loops dropped
    when asked, each non-loop edge followed by its reverse when ``undirected``): their
    bucket (int64), key ``local_src << key_bits | local_dst`` (uint64) and input row
    (int64)."""
    src, dst = np.asarray(src), np.asarray(dst)
    k = np.arange(len(src), dtype=np.int64)
    if drop_loops:
        keep = src != dst
        src, dst, k = src[keep], dst[keep], k[keep]
    if undirected:
        reps = 1 + (src != dst)
        s, d, k = np.repeat(src, reps), np.repeat(dst, reps), np.repeat(k, reps)
        second = (np.cumsum(reps) - 1)[reps == 2]  # each reversed copy, after its edge
        s[second], d[second] = dst[reps == 2], src[reps == 2]
        src, dst = s, d
    a, b = codes_l[src], codes_r[dst]
    bucket = (a >> 32) * num_partitions + (b >> 32)
    key = ((a & _LOW).astype(np.uint64) << np.uint64(key_bits)) | (b & _LOW).astype(np.uint64)
    return bucket, key, k


def count_routes(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected, counts):
    """Count one chunk's routed rows by bucket into ``counts``; returns how many there are
    (see the numba twin)."""
    bucket, _, _ = _routed(src, dst, codes_l, codes_r, num_partitions, drop_loops,
                           undirected)
    count_into(bucket, counts)
    return len(bucket)


def _places(bucket, cursor):
    """Where a stable scatter by bucket puts each row, from ``cursor`` (advanced)."""
    n = len(bucket)
    # a stable sort of 16-bit keys is numpy's radix sort (P*P <= 65,536 buckets: P <= 256)
    narrow = bucket.astype(np.uint16) if len(cursor) <= 1 << 16 else bucket
    order = np.argsort(narrow, kind="stable")
    counts = np.bincount(bucket, minlength=len(cursor))[:len(cursor)]
    firsts = np.cumsum(counts) - counts
    by_order = bucket[order]
    places = np.empty(n, np.int64)
    places[order] = cursor[by_order] + np.arange(n, dtype=np.int64) - firsts[by_order]
    cursor += counts
    return places


def scatter_routes(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected,
                   cursor, key_out, key_bits, rel, rel_fill, rel_out, weight, w_out, dest):
    """The scatter of a stable counting sort by bucket of one chunk's routed rows (see the
    numba twin)."""
    bucket, key, row = _routed(src, dst, codes_l, codes_r, num_partitions, drop_loops,
                               undirected, key_bits)
    places = _scatter_at(_places(bucket, cursor), key, row, key_out, rel, rel_fill, rel_out,
                         weight, w_out)
    if dest.shape[0] > 0:
        dest[:len(places)] = places


def _scatter_at(places, key, row, key_out, rel, rel_fill, rel_out, weight, w_out):
    """Routed rows (``key``, input ``row``) into rows ``places`` of the outputs that are
    non-empty; returns ``places``."""
    key_out[places] = key
    if rel_out.shape[0] > 0:
        rel_out[places] = rel[row] if rel.shape[0] > 0 else rel_fill
    if w_out.shape[0] > 0:
        w_out[places] = weight[row] if weight.shape[0] > 0 else np.float32(1.0)
    return places


def scatter_column(src, dst, drop_loops, undirected, dest, values, out):
    """:func:`scatter_routes` for one more column: ``out[dest[r]] = values[k]`` for each
    routed row ``r`` of input row ``k``."""
    src, dst = np.asarray(src), np.asarray(dst)
    k = np.arange(len(src), dtype=np.int64)
    if drop_loops:
        k = k[src != dst]
    if undirected:
        k = np.repeat(k, 1 + (src[k] != dst[k]))
    out[dest[:len(k)]] = values[k]


def route_keys(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected, bucket,
               key, key_bits, row, counts):
    """Route one chunk of edges into ``bucket``/``key``/``row`` from index 0 and count them
    by bucket into ``counts`` (see the numba twin); returns how many rows were written."""
    b, k, r = _routed(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected,
                      key_bits)
    n = len(b)
    bucket[:n] = b
    key[:n] = k
    if row.shape[0] > 0:
        row[:n] = r
    count_into(b, counts)
    return n


def scatter_by_bucket(bucket, key, row, cursor, key_out, rel, rel_fill, rel_out, weight,
                      w_out):
    """The scatter of a stable counting sort by bucket (see the numba twin)."""
    _scatter_at(_places(bucket, cursor), key, row, key_out, rel, rel_fill, rel_out, weight,
                w_out)


def scatter_column_rows(bucket, row, cursor, values, out):
    """:func:`scatter_by_bucket` for one more column: ``out[place] = values[row[k]]``."""
    out[_places(bucket, cursor)] = values[row]


def radix_sort_edges(key, rel, bits, rel_bits, order):
    """Sort a bucket's edges by ``(key, rel)`` stably, ``key`` in place, the permutation
    into ``order`` when it is non-empty (a comparison sort with the twin's result).
    Returns ``key``."""
    o = np.lexsort((rel, key)) if rel_bits > 0 else np.argsort(key, kind="stable")
    key[:] = key[o]
    if order.shape[0] > 0:
        order[:] = o
    return key


def split_keys(key, bits, src, dst):
    """``src = key >> bits``, ``dst = key & (2**bits - 1)`` as int32 (see the numba
    twin)."""
    src[:] = key >> key.dtype.type(bits)
    dst[:] = key & key.dtype.type((1 << bits) - 1)


def pair_positions(src, dst, keys, out):
    """``out[r]``: the position in ``keys`` of row ``r``'s pair, -1 where it is not there
    (see the numba twin)."""
    k = (np.asarray(src, np.int64) << 32) | np.asarray(dst, np.int64)
    pos = np.minimum(np.searchsorted(keys, k), max(len(keys) - 1, 0))
    out[:] = np.where(keys[pos] == k, pos, -1) if len(keys) else -1
