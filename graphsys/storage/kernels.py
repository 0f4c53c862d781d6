"""Numba kernels of the storage layer: id lookup, local offsets, bucket routing, CSR build."""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from graphsys.prefetch import PREFETCH_EDGES, prefetch

#: :func:`count_into` prefetches its slots from this many counts on (int64: 256 KiB, well
#: past one core's L1)
COUNT_PREFETCH_MIN_SLOTS = 1 << 15


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


def lookup_ints(sorted_ids: np.ndarray, queries: np.ndarray,
                buckets: tuple[np.ndarray, int, int] | None = None) -> np.ndarray:
    """Index of every query in the sorted unique int64 ``sorted_ids``, -1 where absent.
    ``buckets``: :func:`id_buckets` of ``sorted_ids`` (worth building for many queries: a
    query then searches only its bucket of ids sharing its high bits, in cache, instead of
    the whole array), else a binary search each."""
    queries = np.asarray(queries)
    out = np.empty(len(queries), np.int64)
    if buckets is not None:
        return _search_buckets(sorted_ids, *buckets, queries, out)
    pos = np.searchsorted(sorted_ids, queries)
    pos_c = np.minimum(pos, len(sorted_ids) - 1) if len(sorted_ids) else pos
    found = (pos < len(sorted_ids)) & (sorted_ids[pos_c] == queries) if len(sorted_ids) else (
        np.zeros(len(queries), bool))
    out[:] = np.where(found, pos, -1)
    return out


def id_buckets(sorted_ids: np.ndarray) -> tuple[np.ndarray, int, int] | None:
    """A bucket index over sorted unique int64 ids, for :func:`lookup_ints`: ``(starts,
    base, shift)`` where the ids ``v`` with ``(v - base) >> shift == h`` are
    ``sorted_ids[starts[h]:starts[h + 1]]`` (int64 (B+1,), B a power of two <= N: at most
    8 bytes per id; uniformly spread ids put about one in a bucket). None when the ids span
    2**62 or more (``v - base`` would overflow in the search)."""
    n = len(sorted_ids)
    base = int(sorted_ids[0]) if n else 0
    span = int(sorted_ids[-1]) - base if n else 0
    if span >= 2**62:
        return None
    slots_bits = max(n.bit_length() - 1, 0)  # 2**slots_bits <= n
    shift = max(span.bit_length() - slots_bits, 0)
    starts = np.zeros((span >> shift) + 2, np.int64)
    _fill_starts(sorted_ids, base, shift, starts)
    return starts, base, shift


@numba.njit(cache=True, nogil=True)
def _fill_starts(ids, base, shift, starts):
    for k in range(ids.shape[0]):
        starts[((ids[k] - base) >> shift) + 1] += 1
    for h in range(1, starts.shape[0]):
        starts[h] += starts[h - 1]


@numba.njit(cache=True, nogil=True)
def _search_buckets(ids, starts, base, shift, queries, out):
    """:func:`lookup_ints` over :func:`id_buckets`: a binary search within the query's
    bucket, the bucket bounds prefetched :data:`PREFETCH_EDGES` queries ahead."""
    n = ids.shape[0]
    last = ids[n - 1] if n else base - 1
    m = queries.shape[0]
    for k in range(m):
        if k + PREFETCH_EDGES < m:
            q = queries[k + PREFETCH_EDGES]
            if base <= q <= last:
                prefetch(starts, (q - base) >> shift)
        q = queries[k]
        if q < base or q > last:
            out[k] = -1
            continue
        h = (q - base) >> shift
        lo = starts[h]
        hi = starts[h + 1]
        while lo < hi:
            mid = (lo + hi) >> 1
            if ids[mid] < q:
                lo = mid + 1
            else:
                hi = mid
        out[k] = lo if lo < n and ids[lo] == q else -1
    return out


@numba.njit(cache=True, nogil=True)
def local_offsets(part, num_partitions):
    """Local offset of every node within its partition (rank in dense-index order), from
    ``part``, int32 (N,): returns ``(local, sizes)``, int64 (N,) and (P,).
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
    """Set bit ``id`` of the bitmap ``seen`` (uint64 words; bit ``v & 63`` of word ``v >>
    6``) for every id (all in range); return nothing."""
    one = np.uint64(1)
    for k in range(ids.shape[0]):
        v = np.uint64(ids[k])
        seen[v >> np.uint64(6)] |= one << (v & np.uint64(63))


@numba.njit(cache=True, nogil=True)
def seen_ids(seen):
    """The ids whose bits :func:`mark_seen` set, ascending (int64)."""
    count = 0
    for w in range(seen.shape[0]):
        word = seen[w]
        while word:
            word &= word - np.uint64(1)
            count += 1
    return bitmap_ids(seen, count)


@numba.njit(cache=True, nogil=True)
def bitmap_ids(words, count):
    """The ``count`` ids whose bits are set in the bitmap ``words`` (uint64; bit ``v & 63``
    of word ``v >> 6``), ascending (int64)."""
    out = np.empty(count, np.int64)
    k = 0
    for w in range(words.shape[0]):
        word = words[w]
        b = 0
        while word:
            if word & np.uint64(1):
                out[k] = w * 64 + b
                k += 1
            word >>= np.uint64(1)
            b += 1
    return out


@numba.njit(cache=True, nogil=True)
def csr_fill(rows, cols, col_base, cursor, indices, w_in, w_out, perm, edge_base):
    """Scatter one chunk of edges into CSR arrays: row ``rows[k]`` (an index into
    ``cursor``, int64: the next free entry of each row being filled) gets neighbour
    ``col_base + cols[k]`` at ``cursor[row]``, which then advances. ``w_out``/``perm``
    (when non-empty) receive the edge's weight ``w_in[k]`` / its stream position
    ``edge_base + k``. The cursor :data:`~graphsys.prefetch.PREFETCH_EDGES` edges ahead is
    prefetched, and the entry it points at half as far ahead, so the random reads of
    consecutive edges overlap (:func:`count_into` prefetches the same way): what bounds a
    build whose rows outgrow the last-level cache is the latency of these reads, not their
    count."""
    n = rows.shape[0]
    for k in range(n):
        if k + PREFETCH_EDGES < n:
            prefetch(cursor, rows[k + PREFETCH_EDGES])
        if k + PREFETCH_EDGES // 2 < n:
            prefetch(indices, cursor[rows[k + PREFETCH_EDGES // 2]])
        r = rows[k]
        pos = cursor[r]
        indices[pos] = col_base + cols[k]
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


@numba.njit(cache=True, nogil=True)
def gather_rows_at(table, index, out, at):
    """``out[at[k]] = table[index[k]]``: :func:`gather_rows` into given rows of ``out``
    (``at`` int64 (B,) in ``[0, len(out))``, checked by the caller). Returns ``out``."""
    d = table.shape[1]
    for k in range(index.shape[0]):
        r = index[k]
        o = at[k]
        for j in range(d):
            out[o, j] = table[r, j]
    return out


@numba.njit(cache=True, nogil=True)
def route_codes(part, local, dense, out):
    """The routing table of one entity type: ``out[i] = part[v] << 32 | local[v]`` for node
    ``v = dense[i]`` (``v = i`` when ``dense`` is empty), -1 where ``v < 0`` (an id that
    is not a node). part int32 (N,), local int64 (N,), dense int64; out int64. Returns
    ``out``."""
    for i in range(out.shape[0]):
        v = dense[i] if dense.shape[0] > 0 else i
        out[i] = (np.int64(part[v]) << 32) | local[v] if v >= 0 else -1
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _route(a, b, num_partitions, key_bits):
    """Bucket ``i*P + j`` and sort key ``local_src << key_bits | local_dst`` (uint64) of an
    edge whose endpoints' routing codes (:func:`route_codes`) are ``a = i << 32 |
    local_src`` and ``b = j << 32 | local_dst``."""
    low = np.int64(0xFFFFFFFF)
    return ((a >> 32) * num_partitions + (b >> 32),
            (np.uint64(a & low) << np.uint64(key_bits)) | np.uint64(b & low))


@numba.njit(cache=True, nogil=True)
def count_routes(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected, counts):
    """Pass one of routing the edges ``src[k] -> dst[k]`` of one chunk into buckets: edge
    ``k`` goes to bucket ``i*P + j``, where ``codes_l[src[k]] = i << 32 | local_src`` and
    ``codes_r[dst[k]] = j << 32 | local_dst`` (:func:`route_codes`). Adds one to ``counts``
    (int64 (P*P,)) at each routed row's bucket and returns how many rows there are.

    ``drop_loops``: skip edges with ``src[k] == dst[k]``. ``undirected`` (one entity type on
    both sides): every non-loop edge is also routed reversed, right after the edge itself, so
    the routed rows keep the input order of the unordered pairs (a dedupe that keeps the first
    occurrence then keeps the same input row for both directions).

    Nothing is written per row: :func:`scatter_routes` routes the chunk again from the
    codes, whose rows are mostly in cache, which costs less than first-touched scratch
    pages for every row's bucket and key. (The prefetch ahead is written out in each loop:
    through a shared helper function the count pass ran four times slower.)"""
    m = src.shape[0]
    n = 0
    for k in range(m):
        if k + PREFETCH_EDGES < m:  # the tables' rows are cache misses: ask for them early
            prefetch(codes_l, src[k + PREFETCH_EDGES])
            prefetch(codes_r, dst[k + PREFETCH_EDGES])
            if undirected:
                prefetch(codes_l, dst[k + PREFETCH_EDGES])
                prefetch(codes_r, src[k + PREFETCH_EDGES])
        loop = src[k] == dst[k]
        if drop_loops and loop:
            continue
        c, _ = _route(codes_l[src[k]], codes_r[dst[k]], num_partitions, 0)
        counts[c] += 1
        n += 1
        if undirected and not loop:  # the reversed edge dst -> src
            c, _ = _route(codes_l[dst[k]], codes_r[src[k]], num_partitions, 0)
            counts[c] += 1
            n += 1
    return n


@numba.njit(cache=True, nogil=True)
def scatter_routes(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected,
                   cursor, key_out, key_bits, rel, rel_fill, rel_out, weight, w_out, dest):
    """Pass two: the scatter of a stable counting sort by bucket. Each routed row of the
    chunk (as :func:`count_routes` routes and counts it) goes to row ``cursor[bucket]``
    (then advanced) of ``key_out`` (its key ``local_src << key_bits | local_dst``, uint32
    when two local offsets fit it, else uint64), and, where they are non-empty, of ``rel_out``
    (``rel[k]``, or ``rel_fill`` where ``rel`` is empty) and ``w_out`` (``weight[k]``, or 1
    where ``weight`` is empty); ``dest``, where non-empty, receives each routed row's place
    in routed order (for :func:`scatter_column`). ``cursor`` int64 (P*P,) starts at each
    bucket's first row for this chunk."""
    m = src.shape[0]
    payload = rel_out.shape[0] > 0 or w_out.shape[0] > 0 or dest.shape[0] > 0
    if not (payload or drop_loops or undirected):  # keys alone, one row per edge
        for k in range(m):
            if k + PREFETCH_EDGES < m:
                prefetch(codes_l, src[k + PREFETCH_EDGES])
                prefetch(codes_r, dst[k + PREFETCH_EDGES])
            c, key = _route(codes_l[src[k]], codes_r[dst[k]], num_partitions, key_bits)
            p = cursor[c]
            key_out[p] = key
            cursor[c] = p + 1
        return
    n = 0
    for k in range(m):
        if k + PREFETCH_EDGES < m:
            prefetch(codes_l, src[k + PREFETCH_EDGES])
            prefetch(codes_r, dst[k + PREFETCH_EDGES])
            if undirected:
                prefetch(codes_l, dst[k + PREFETCH_EDGES])
                prefetch(codes_r, src[k + PREFETCH_EDGES])
        loop = src[k] == dst[k]
        if drop_loops and loop:
            continue
        for reverse in range(2 if undirected and not loop else 1):  # then dst -> src
            a = codes_l[dst[k]] if reverse else codes_l[src[k]]
            b = codes_r[src[k]] if reverse else codes_r[dst[k]]
            c, key = _route(a, b, num_partitions, key_bits)
            p = cursor[c]
            key_out[p] = key
            cursor[c] = p + 1
            if payload:
                _scatter_payload(k, p, n, rel, rel_fill, rel_out, weight, w_out, dest)
            n += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _scatter_payload(k, p, n, rel, rel_fill, rel_out, weight, w_out, dest):
    """Input row ``k``'s rel and weight into row ``p`` of the outputs that are non-empty,
    and ``p`` into ``dest[n]`` where it is."""
    if rel_out.shape[0] > 0:
        rel_out[p] = rel[k] if rel.shape[0] > 0 else rel_fill
    if w_out.shape[0] > 0:
        w_out[p] = weight[k] if weight.shape[0] > 0 else np.float32(1.0)
    if dest.shape[0] > 0:
        dest[n] = p


@numba.njit(cache=True, nogil=True)
def scatter_column(src, dst, drop_loops, undirected, dest, values, out):
    """:func:`scatter_routes` for one more column: ``out[dest[r]] = values[k]`` for each
    routed row ``r`` of input row ``k``, enumerated as the routing enumerates them."""
    n = 0
    for k in range(src.shape[0]):
        loop = src[k] == dst[k]
        if drop_loops and loop:
            continue
        out[dest[n]] = values[k]
        n += 1
        if undirected and not loop:
            out[dest[n]] = values[k]
            n += 1


@numba.njit(cache=True, nogil=True)
def route_keys(src, dst, codes_l, codes_r, num_partitions, drop_loops, undirected, bucket,
               key, key_bits, row, counts):
    """One-pass routing, for a buffer that is reused (an out-of-core ingest's, whose
    pages are warm after its first flush): route the edges ``src[k] -> dst[k]`` of one
    chunk as :func:`count_routes` routes them, bucket (int32) and sort key
    ``local_src << key_bits | local_dst`` (uint32 or uint64, ``key``'s dtype) from
    :func:`_route`. Writes the routed rows' bucket, key and, when ``row`` is
    non-empty, chunk row ``k`` (int64) from index 0, adds one to ``counts`` (int64 (P*P,))
    at each routed row's bucket, and returns how many rows there are. ``drop_loops`` and
    ``undirected`` as for :func:`count_routes`; undirected, the outputs need room for
    ``2 * len(src)`` rows."""
    with_rows = row.shape[0] > 0
    m = src.shape[0]
    n = 0
    for k in range(m):
        if k + PREFETCH_EDGES < m:  # the tables' rows are cache misses: ask for them early
            prefetch(codes_l, src[k + PREFETCH_EDGES])
            prefetch(codes_r, dst[k + PREFETCH_EDGES])
            if undirected:
                prefetch(codes_l, dst[k + PREFETCH_EDGES])
                prefetch(codes_r, src[k + PREFETCH_EDGES])
        loop = src[k] == dst[k]
        if drop_loops and loop:
            continue
        for reverse in range(2 if undirected and not loop else 1):  # then dst -> src
            a = codes_l[dst[k]] if reverse else codes_l[src[k]]
            b = codes_r[src[k]] if reverse else codes_r[dst[k]]
            c, key[n] = _route(a, b, num_partitions, key_bits)
            bucket[n] = np.int32(c)
            counts[c] += 1
            if with_rows:
                row[n] = k
            n += 1
    return n


@numba.njit(cache=True, nogil=True)
def scatter_by_bucket(bucket, key, row, cursor, key_out, rel, rel_fill, rel_out, weight,
                      w_out):
    """The scatter of a stable counting sort by bucket: routed row ``k`` (see
    :func:`route_keys`) goes to row ``cursor[bucket[k]]`` (then advanced) of ``key_out``,
    and, where they are non-empty, of ``rel_out`` (``rel[row[k]]``, or ``rel_fill`` where
    ``rel`` is empty) and ``w_out`` (``weight[row[k]]``, or 1 where ``weight`` is empty).
    ``cursor`` int64 (P*P,) starts at each bucket's first row."""
    for k in range(bucket.shape[0]):
        b = bucket[k]
        p = cursor[b]
        key_out[p] = key[k]
        if rel_out.shape[0] > 0:
            rel_out[p] = rel[row[k]] if rel.shape[0] > 0 else rel_fill
        if w_out.shape[0] > 0:
            w_out[p] = weight[row[k]] if weight.shape[0] > 0 else np.float32(1.0)
        cursor[b] = p + 1


@numba.njit(cache=True, nogil=True)
def scatter_column_rows(bucket, row, cursor, values, out):
    """:func:`scatter_by_bucket` for one more column: ``out[cursor[bucket[k]]] =
    values[row[k]]``, the cursor advanced as there (give a copy of the cursor that
    :func:`scatter_by_bucket` starts from, so rows land where its rows do)."""
    for k in range(bucket.shape[0]):
        b = bucket[k]
        p = cursor[b]
        out[p] = values[row[k]]
        cursor[b] = p + 1


#: Bits per digit of :func:`radix_sort_edges` (a 2,048-slot count fits in L1)
RADIX_BITS = 11


@numba.njit(cache=True, nogil=True)
def radix_sort_edges(key, rel, bits, rel_bits, order):
    """Sort a bucket's edges by ``(key, rel)``, stably, in O(n) per 11-bit digit: an LSD
    radix sort of the packed value ``key << rel_bits | rel``.

    ``key`` uint32 or uint64 (n,) ``src << bits | dst`` with ``src`` and ``dst`` below
    ``2**bits``, sorted in place. ``rel`` int32 (n,) in ``0 .. 2**rel_bits - 1``, or empty
    with ``rel_bits`` 0 (not written: gather it with ``order``). ``order`` int64 (n,)
    receives the stable sorting permutation (input order among equal edges is kept), or
    is empty when not wanted. ``2 * bits + rel_bits`` <= 64. Packed values that fit
    ``key``'s dtype are sorted in it (uint32 keys: half the bytes moved per pass of 64-bit
    ones), others as uint64. One pass counts every digit; digits that every edge shares
    are skipped. Scratch: one buffer of the packed values (two where they are wider than
    ``key``), and 16 bytes per edge with ``order``. Returns ``key``."""
    total = 2 * bits + rel_bits
    if total <= 8 * key.itemsize:  # the packed values fit key's own dtype: sorted in it
        return _radix_sort_packed(key, rel, rel_bits, total, order, True, key,
                                  np.empty_like(key))
    n = key.shape[0]
    return _radix_sort_packed(key, rel, rel_bits, total, order, False,
                              np.empty(n, np.uint64), np.empty(n, np.uint64))


@numba.njit(cache=True, nogil=True)
def _radix_sort_packed(key, rel, rel_bits, total, order, in_place, a, b):
    """:func:`radix_sort_edges` with the packed values (``total`` bits) in ``a`` and ``b``
    (two buffers of n, uint32 or uint64, wide enough; ``a`` is ``key`` itself where
    ``in_place``)."""
    n = key.shape[0]
    with_order = order.shape[0] > 0
    rs = np.uint64(rel_bits)
    slots = 1 << RADIX_BITS
    passes = max((total + RADIX_BITS - 1) // RADIX_BITS, 1)
    digit_mask = np.uint64(slots - 1)
    cnt = np.zeros((passes, slots), np.int64)
    a_is_key = in_place
    for i in range(n):  # pack, and count every digit at once
        v = np.uint64(key[i]) << rs
        if rel_bits > 0:
            v |= np.uint64(rel[i])
        if rel_bits > 0 or not in_place:
            a[i] = v
        for q in range(passes):
            cnt[q, (v >> np.uint64(q * RADIX_BITS)) & digit_mask] += 1
    oa = np.arange(n) if with_order else order
    ob = np.empty(n, np.int64) if with_order else order
    for q in range(passes):
        s = np.uint64(q * RADIX_BITS)
        c = cnt[q]
        if c.max() == n:  # one digit value: the order stands
            continue
        pos = 0
        for d in range(slots):
            k = c[d]
            c[d] = pos
            pos += k
        for i in range(n):
            v = a[i]
            d = (np.uint64(v) >> s) & digit_mask
            b[c[d]] = v
            if with_order:
                ob[c[d]] = oa[i]
            c[d] += 1
        a, b = b, a
        oa, ob = ob, oa
        if in_place:
            a_is_key = not a_is_key
    if rel_bits > 0 or not a_is_key:
        for i in range(n):  # a may be key itself: element by element in place
            key[i] = np.uint64(a[i]) >> rs
    if with_order:
        order[:] = oa
    return key


@numba.njit(cache=True, nogil=True)
def split_keys(key, bits, src, dst):
    """``src[i] = key[i] >> bits`` and ``dst[i] = key[i] & (2**bits - 1)`` as int32 (a
    bucket's packed local offsets, each below 2**31), in one pass."""
    sh = np.uint64(bits)
    mask = (np.uint64(1) << sh) - np.uint64(1)
    for i in range(key.shape[0]):
        v = np.uint64(key[i])
        src[i] = np.int32(v >> sh)
        dst[i] = np.int32(v & mask)


def start_up() -> None:
    """Pay numba's one-time start-up in this process (its lazy imports, LLVM, the cache of
    one kernel, paid by the first call of any kernel) by calling a small kernel, with the
    garbage collector paused (:func:`graphsys.jit.gc_paused`) and numba's BLAS check
    sparing the import of ``scipy.linalg`` (:func:`graphsys.jit.blas_check_alone`).
    Imported here, not at module level, so that the cache code is not part of what this
    module's kernels are keyed by (an edit to it recompiles no kernel)."""
    from graphsys.jit import blas_check_alone, gc_paused

    with gc_paused(), blas_check_alone():
        count_into(np.zeros(1, np.int64), np.zeros(1, np.int64))


@numba.njit(cache=True, nogil=True)
def pair_positions(src, dst, keys, out):
    """``out[r]``: the position in ``keys`` (sorted ``src << 32 | dst`` pairs, int64) of
    row ``r``'s pair, -1 where it is not there. Rows that ascend (a bucket's, sorted by
    ``(src, dst)``) are matched in one merge pass from the first row's place (a search, so
    a batch pays for the keys in its own range only); a row below the one before it is
    searched for."""
    m = keys.shape[0]
    p, last = 0, np.iinfo(np.int64).max
    for r in range(src.shape[0]):
        k = (np.int64(src[r]) << 32) | np.int64(dst[r])
        if k < last:
            p = np.searchsorted(keys, k)
        else:
            while p < m and keys[p] < k:
                p += 1
        last = k
        out[r] = p if p < m and keys[p] == k else -1


@numba.njit(cache=True, nogil=True)
def count_into(index, counts):
    """``counts[index[k]] += 1`` for every k (a bincount that accumulates in place). From
    :data:`COUNT_PREFETCH_MIN_SLOTS` counts on, the slot
    :data:`~graphsys.prefetch.PREFETCH_EDGES` indices ahead is prefetched, so the random
    updates' misses overlap; smaller tables (an ingest's bucket counts) stay in L1 and take
    the plain loop."""
    n = index.shape[0]
    if counts.shape[0] < COUNT_PREFETCH_MIN_SLOTS:
        for k in range(n):
            counts[index[k]] += 1
        return
    for k in range(n):
        if k + PREFETCH_EDGES < n:
            prefetch(counts, index[k + PREFETCH_EDGES])
        counts[index[k]] += 1
