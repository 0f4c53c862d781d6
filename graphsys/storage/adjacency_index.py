"""Persistent adjacency indexes in a graph directory, built out of core.

Kinds: ``csr`` (out-neighbours) and ``csc`` (in-neighbours) over global node ids, in
exactly the order :meth:`Graph.csr <graphsys.storage.graph.Graph.csr>` builds in RAM;
``sym``, the undirected simple rows of the samplers' symmetric view (:func:`_build_sym`);
``push``, :mod:`graphsys.storage.push_layout`'s destination blocks, built from the CSC index
(built first when missing); ``temporal`` (:mod:`graphsys.storage.temporal_index`).
docs/format.md ("Adjacency indexes" and the sections after it) specifies their files.

Building: each file is written full of zeros (from a sparse file), mapped read-write and
filled in place: a pass over the buckets counts degrees into the mapped ``indptr``, a second
scatters neighbours through a per-node cursor, one row partition at a time, into a RAM
buffer then copied into the file in one sequential write (random writes to a shared mapping
make the kernel write the same dirty pages back again and again), or straight into the
mapping when the buffer does not fit the budget. Each index is committed in a new tree of
the graph swapped in whole, its manifest written last (:func:`_commit_index`), so an
interrupted build leaves no index in the manifest. Reading an index is
:mod:`graphsys.storage.csr`'s job.
"""

from __future__ import annotations

import os
import secrets
import shutil
import warnings
from pathlib import Path

import numba
import numpy as np

from graphsys import openmp
from graphsys.errors import GraphsysError
from graphsys.memory import budget
from graphsys.prefetch import PREFETCH_EDGES, prefetch
from graphsys.progress import progress_bar
from graphsys.storage.atomic import (
    disk_full,
    fsync_path,
    link_unchanged,
    replacement_directory,
    sha256_file,
    sync_files,
)
from graphsys.storage.column_file import allocate_column
from graphsys.storage.csr import (
    CHECK_CHUNK,
    build_command,
    chunks,
    edges_digest,
    forget_mapped,
    index_state,
    map_index,
)
from graphsys.storage.edges import rel_bases
from graphsys.storage.format import (
    INDEX_KINDS,
    PUSH_STEP_DTYPE,
    IndexInfo,
    index_file,
    write_manifest,
)
from graphsys.storage.kernels import count_into
from graphsys.storage.lock import LOCK_FILE, writer_lock
from graphsys.storage.push_layout import (
    count_heavy,
    degree_order,
    fill_blocks,
    min_blocks,
    new_ids,
    padding_slots,
    plan_blocks,
    slot_offsets,
)

#: Anonymous bytes per node an index build needs (the int64 scatter cursor).
BUILD_BYTES_PER_NODE = 8
#: Fixed part of a build's budget: one record batch of a bucket and its conversions.
BUILD_FIXED_BYTES = 64 << 20
#: Anonymous bytes per node a ``push`` build needs besides :data:`BUILD_BYTES_PER_NODE` *
#: threads (a block's counting sort each): out-degrees, the order, its float64 key, new ids
PUSH_BUILD_BYTES_PER_NODE = 28
#: A push build fills this many destination blocks per thread per call, so its progress
#: bar moves (a 1B-edge graph has ~300 blocks of ~3.3 M edges)
PUSH_GROUP_BLOCKS = 4
_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1


def min_build_memory(num_nodes: int, kinds: tuple[str, ...] = ("csr", "csc")) -> int:
    """The least ``memory_limit`` (bytes) a build of ``kinds`` over ``num_nodes`` nodes runs
    in."""
    per_node = BUILD_BYTES_PER_NODE
    if "push" in kinds:
        per_node = PUSH_BUILD_BYTES_PER_NODE + BUILD_BYTES_PER_NODE * numba.get_num_threads()
    return per_node * num_nodes + BUILD_FIXED_BYTES


# ---------------------------------------------------------------------------------------------
# kernels


@numba.njit(cache=True, nogil=True)
def _count_rows(local, rel, base, counts):
    """``counts[base[rel[k]] + local[k]] += 1`` (``rel`` empty: relation 0); the count
    :data:`~graphsys.prefetch.PREFETCH_EDGES` edges ahead is prefetched."""
    has_rel = rel.shape[0] > 0
    n = local.shape[0]
    for k in range(n):
        if k + PREFETCH_EDGES < n:
            j = k + PREFETCH_EDGES
            prefetch(counts, (base[rel[j]] if has_rel else base[0]) + local[j])
        b = base[rel[k]] if has_rel else base[0]
        counts[b + local[k]] += 1


@numba.njit(cache=True, nogil=True)
def _scatter_rows(rows, cols, rel, row_base, col_base, cursor, indices, w_in, w_out):
    """Row ``row_base[rel] + rows[k]`` gets neighbour ``col_base[rel] + cols[k]`` (and its
    weight) at its cursor, which then advances. Prefetches as
    :func:`~graphsys.storage.kernels.csr_fill` does: the cursor
    :data:`~graphsys.prefetch.PREFETCH_EDGES` edges ahead, its entry half as far."""
    has_rel = rel.shape[0] > 0
    has_w = w_out.shape[0] > 0
    n = rows.shape[0]
    ahead, half = PREFETCH_EDGES, PREFETCH_EDGES // 2
    for k in range(n):
        if k + ahead < n:
            prefetch(cursor, row_base[rel[k + ahead] if has_rel else 0] + rows[k + ahead])
        if k + half < n:
            prefetch(indices, cursor[row_base[rel[k + half] if has_rel else 0] + rows[k + half]])
        r = rel[k] if has_rel else 0
        row = row_base[r] + rows[k]
        pos = cursor[row]
        indices[pos] = col_base[r] + cols[k]
        if has_w:
            w_out[pos] = w_in[k]
        cursor[row] = pos + 1


@numba.njit(cache=True, nogil=True)
def _scatter_sym(src, dst, rel, src_base, dst_base, r0, r1, cursor, buf, w_in, w_out):
    """Both directions of every edge whose row lies in ``[r0, r1)``: row ``s`` gets ``d`` and
    row ``d`` gets ``s`` (global ids ``base[rel] + local``; a self-loop lands twice) at the
    row's cursor (region-relative, ``cursor[row - r0]``), which then advances."""
    has_rel = rel.shape[0] > 0
    has_w = w_out.shape[0] > 0
    for k in range(src.shape[0]):
        r = rel[k] if has_rel else 0
        s = src_base[r] + src[k]
        d = dst_base[r] + dst[k]
        for side in range(2):
            row, col = (s, d) if side == 0 else (d, s)
            if r0 <= row < r1:
                pos = cursor[row - r0]
                buf[pos] = col
                if has_w:
                    w_out[pos] = w_in[k]
                cursor[row - r0] = pos + 1


@numba.njit(cache=True, nogil=True)
def _dedupe_rows(raw_ptr, buf, w, out_deg):
    """Sort each row ``buf[raw_ptr[r]:raw_ptr[r + 1]]`` and keep each neighbour once (its
    weights summed), compacting the rows to the front of ``buf`` (and ``w``); ``out_deg[r]``
    gets the distinct count. Returns the entries kept."""
    has_w = w.shape[0] > 0
    out = 0
    for r in range(raw_ptr.shape[0] - 1):
        lo, hi = raw_ptr[r], raw_ptr[r + 1]
        start = out
        if hi > lo:
            if has_w:
                order = np.argsort(buf[lo:hi], kind="mergesort")
                vals = buf[lo:hi][order]
                ws = w[lo:hi][order]
            else:
                vals = np.sort(buf[lo:hi])
                ws = w[:0]
            buf[out] = vals[0]
            if has_w:
                w[out] = ws[0]
            out += 1
            for k in range(1, vals.shape[0]):
                if vals[k] != vals[k - 1]:
                    buf[out] = vals[k]
                    if has_w:
                        w[out] = ws[k]
                    out += 1
                elif has_w:
                    w[out - 1] += ws[k]
        out_deg[r] = out - start
    return out


@numba.njit(cache=True, nogil=True)
def _region_end(raw_ptr, r0, spare, entry_bytes):
    """The end of the row region starting at ``r0``: as many rows as fit ``spare`` bytes at
    16 bytes per row (cursor and offsets) plus ``entry_bytes`` per raw entry; one at least."""
    n = raw_ptr.shape[0] - 1
    r = r0 + 1
    while r < n and (r + 1 - r0) * 16 + (raw_ptr[r + 1] - raw_ptr[r0]) * entry_bytes <= spare:
        r += 1
    return r


# ---------------------------------------------------------------------------------------------
# building


def _row_region(graph, indptr: np.ndarray, part: int, memory_limit: int, entry_bytes: int
                ) -> tuple[int, int] | None:
    """``(lo, hi)``: the entries of the rows of partition ``part`` (contiguous global ids in a
    one-type graph), when a RAM buffer of them fits the budget left by the cursor; else None."""
    if len(graph.entity_types) != 1:
        return None
    offsets = graph.partition_offsets()
    lo, hi = int(indptr[offsets[part]]), int(indptr[offsets[part + 1]])
    spare = memory_limit - min_build_memory(graph.num_nodes())
    return (lo, hi) if (hi - lo) * entry_bytes <= spare else None


def _build_one(graph, edge_set: str, kind: str, directory: Path, progress: bool,
               memory_limit: int) -> IndexInfo:
    """Write the ``kind`` index files of ``edge_set`` into ``directory`` (flat names); rows
    are filled one partition at a time, in a RAM buffer when it fits ``memory_limit``."""
    es = graph.edge_set(edge_set)
    n, m = graph.num_nodes(), es.num_edges
    index_dtype = np.dtype(np.int32 if n <= _INT32_MAX else np.int64)
    src_base, dst_base = rel_bases(graph, es)
    row_base, col_base = (src_base, dst_base) if kind == "csr" else (dst_base, src_base)
    order = ("row-major" if kind == "csr" else "col-major")
    indptr = allocate_column(directory / f"{kind}-indptr.arrow", "indptr", np.dtype(np.int64),
                              n + 1)
    indices = allocate_column(directory / f"{kind}-indices.arrow", "indices", index_dtype, m)
    weight = (allocate_column(directory / f"{kind}-weight.arrow", "weight",
                               np.dtype(np.float32), m) if es.has_weight else None)
    no_rel = np.zeros(0, np.int32)
    counts = indptr[1:]
    bar = progress_bar(total=2 * m, unit="edge", unit_scale=True, desc=f"index {kind}",
               disable=not progress)
    for b in graph.buckets(order, edge_set):
        for eb in b.batches():
            rows, part = (eb.src, b.i) if kind == "csr" else (eb.dst, b.j)
            _count_rows(rows, eb.rel if eb.rel is not None else no_rel,
                        np.ascontiguousarray(row_base[:, part]), counts)
            bar.update(len(eb))
    np.cumsum(indptr, out=indptr)
    cursor = np.array(indptr[:-1])
    no_w = np.zeros(0, np.float32)
    p = graph.num_partitions
    for part in range(p):
        # the buckets whose rows lie in partition ``part``: one region of the files
        pairs = [(part, j) for j in range(p)] if kind == "csr" else [(i, part) for i in range(p)]
        region = _row_region(graph, indptr, part, memory_limit,
                             index_dtype.itemsize + (4 if weight is not None else 0))
        if region is None:  # several entity types, or too large: scatter into the mapping
            lo, out_idx, out_w = 0, indices, weight
        else:  # scatter into RAM, then one sequential copy: random writes to a shared
            lo, hi = region  # mapping make the kernel write dirty pages back over and over
            out_idx = np.empty(hi - lo, index_dtype)
            out_w = np.empty(hi - lo, np.float32) if weight is not None else None
            cursor -= lo  # rows outside the region are not touched in this round
        for b in graph.buckets(pairs, edge_set):
            rb, cb = (row_base[:, b.i], col_base[:, b.j]) if kind == "csr" else (
                row_base[:, b.j], col_base[:, b.i])
            rb, cb = np.ascontiguousarray(rb), np.ascontiguousarray(cb)
            for eb in b.batches():
                rows, cols = (eb.src, eb.dst) if kind == "csr" else (eb.dst, eb.src)
                _scatter_rows(rows, cols, eb.rel if eb.rel is not None else no_rel,
                              rb, cb, cursor, out_idx,
                              eb.weight if eb.weight is not None else no_w,
                              out_w if out_w is not None else no_w)
                bar.update(len(eb))
        if region is not None:
            cursor += lo
            indices[lo:hi] = out_idx
            if weight is not None:
                weight[lo:hi] = out_w
            del out_idx, out_w
    bar.close()
    for arr in (indptr, indices, weight):
        if isinstance(arr, np.memmap):
            arr.flush()
    return IndexInfo(kind, str(index_dtype), n, m, es.has_weight,
                     edges_digest(graph.manifest, edge_set))


def _endpoint_hulls(graph, es) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per partition, the global id range ``[lo, hi)`` that holds the sources (first pair)
    and the destinations (second pair) of its buckets' edges, over every relation."""
    src_base, dst_base = rel_bases(graph, es)
    rels = graph.relation_types
    src_end = np.stack([src_base[k] + graph.partition_sizes(r.lhs) for k, r in enumerate(rels)])
    dst_end = np.stack([dst_base[k] + graph.partition_sizes(r.rhs) for k, r in enumerate(rels)])
    return src_base.min(0), src_end.max(0), dst_base.min(0), dst_end.max(0)


def _build_sym(graph, edge_set: str, directory: Path, progress: bool,
               memory_limit: int) -> IndexInfo:
    """Write the ``sym`` index files of ``edge_set`` into ``directory``: raw row lengths
    (both endpoints of every edge) into RAM, then per row region (as many rows as
    :func:`_region_end` fits in the budget left by those lengths) a scatter of the edges
    of the buckets that touch the region, a per-row sort and dedupe, and an append to a
    scratch file; the final columns, sized by the kept count, are copied from it."""
    es = graph.edge_set(edge_set)
    n = graph.num_nodes()
    index_dtype = np.dtype(np.int32 if n <= _INT32_MAX else np.int64)
    src_base, dst_base = rel_bases(graph, es)
    no_rel, no_w = np.zeros(0, np.int32), np.zeros(0, np.float32)
    bar = progress_bar(total=2 * es.num_edges, unit="edge", unit_scale=True, desc="index sym",
                       disable=not progress)
    raw_ptr = np.zeros(n + 1, np.int64)
    for b in graph.buckets("row-major", edge_set):
        sb, db = np.ascontiguousarray(src_base[:, b.i]), np.ascontiguousarray(dst_base[:, b.j])
        for eb in b.batches():
            rel = eb.rel if eb.rel is not None else no_rel
            _count_rows(eb.src, rel, sb, raw_ptr[1:])
            _count_rows(eb.dst, rel, db, raw_ptr[1:])
            bar.update(len(eb))
    np.cumsum(raw_ptr, out=raw_ptr)
    s_lo, s_hi, d_lo, d_hi = _endpoint_hulls(graph, es)
    indptr = allocate_column(directory / "sym-indptr.arrow", "indptr", np.dtype(np.int64), n + 1)
    entry_bytes = index_dtype.itemsize + (4 if es.has_weight else 0)
    spare = memory_limit - min_build_memory(n)
    scratch_idx, scratch_w = directory / ".sym-indices.raw", directory / ".sym-weight.raw"
    kept = 0
    with open(scratch_idx, "wb") as f_idx, open(scratch_w, "wb") as f_w:
        r0 = 0
        while r0 < n:
            r1 = int(_region_end(raw_ptr, r0, spare, entry_bytes))
            ptr = raw_ptr[r0:r1 + 1] - raw_ptr[r0]
            cursor = ptr[:-1].copy()
            buf = np.empty(int(ptr[-1]), index_dtype)
            wbuf = np.empty(int(ptr[-1]), np.float32) if es.has_weight else no_w
            # the buckets with a source (rows i) or a destination (columns j) in the region
            rows = set(np.flatnonzero((s_lo < r1) & (s_hi > r0)).tolist())
            cols = np.flatnonzero((d_lo < r1) & (d_hi > r0)).tolist()
            p = graph.num_partitions
            pairs = [(i, j) for i in sorted(rows) for j in range(p)] + [
                (i, j) for j in cols for i in range(p) if i not in rows]
            for b in graph.buckets(pairs, edge_set):
                sb = np.ascontiguousarray(src_base[:, b.i])
                db = np.ascontiguousarray(dst_base[:, b.j])
                for eb in b.batches():
                    _scatter_sym(eb.src, eb.dst, eb.rel if eb.rel is not None else no_rel,
                                 sb, db, r0, r1, cursor, buf,
                                 eb.weight if eb.weight is not None else no_w, wbuf)
            got = int(_dedupe_rows(ptr, buf, wbuf, indptr[r0 + 1:r1 + 1]))
            buf[:got].tofile(f_idx)
            if es.has_weight:
                wbuf[:got].tofile(f_w)
            kept += got
            bar.update(int(ptr[-1]) // 2)
            del buf, wbuf, cursor, ptr
            r0 = r1
    bar.close()
    del raw_ptr
    np.cumsum(indptr, out=indptr)
    for name, raw_file, dtype in (("indices", scratch_idx, index_dtype),
                                  ("weight", scratch_w, np.dtype(np.float32))):
        if name == "weight" and not es.has_weight:
            continue
        out = allocate_column(directory / f"sym-{name}.arrow", name, dtype, kept)
        if kept:
            raw = np.memmap(raw_file, dtype=dtype, mode="r", shape=(kept,))
            for lo in range(0, kept, CHECK_CHUNK):
                out[lo:lo + CHECK_CHUNK] = raw[lo:lo + CHECK_CHUNK]
            del raw
        if isinstance(out, np.memmap):
            out.flush()
        del out
    scratch_idx.unlink()
    scratch_w.unlink()
    indptr.flush()
    return IndexInfo("sym", str(index_dtype), n, kept, es.has_weight,
                     edges_digest(graph.manifest, edge_set))


def warn_outdated_push(graph, edge_set: str) -> bool:
    """Warn in one line (and return True) when the ``push`` index of ``edge_set`` is in the
    layout before format version 7 (uint32 source ids), which is listed but not read."""
    if index_state(graph.manifest, edge_set, "push") != "outdated":
        return False
    first = graph.location.file(index_file(edge_set, "push", "order"))
    warnings.warn(f"{first}: a push index in the layout before format version 7 (uint32 "
                  f"source ids) is not read: PageRank stores the current one where it may "
                  f"write the graph and its push index pays, or run "
                  f"{build_command(graph, ('push',), edge_set)}", stacklevel=3)
    return True


def _build_push(graph, edge_set: str, directory: Path, progress: bool) -> IndexInfo:
    """Write the ``push`` index files of ``edge_set`` into ``directory`` from its mapped CSC
    index: degrees, order and blocks in RAM (per node), the edges straight into the mapped
    files, :data:`PUSH_GROUP_BLOCKS` blocks per thread at a time (a progress update each)."""
    csc = map_index(graph, edge_set, "csc")  # checked: the kernels below index with it
    n, m = csc.info.num_nodes, csc.info.num_edges
    if n > _UINT32_MAX:
        raise GraphsysError(f"a push index holds uint32 node ids: {n:,} nodes do not fit")
    bar = progress_bar(total=3 * m, unit="edge", unit_scale=True, desc="index push",
               disable=not progress)
    out_degree = np.zeros(n, np.int64)
    for part in chunks(csc.indices):
        count_into(part, out_degree)
        bar.update(len(part))
    order = degree_order(out_degree)
    bounds, edge_ptr = plan_blocks(csc.indptr, order, min_blocks(n))
    nb = len(bounds) - 1
    heavy = int(count_heavy(order, out_degree, nb))
    del out_degree
    new_id = new_ids(order)
    slot_ptr = slot_offsets(edge_ptr, padding_slots(csc.indptr, csc.indices, order, new_id,
                                                    bounds, heavy))
    bar.update(m)
    slots = int(slot_ptr[-1])

    def column(name: str, dtype, length: int) -> np.ndarray:
        return allocate_column(directory / f"push-{name}.arrow", name, np.dtype(dtype), length)

    arrays = {"order": column("order", np.int64, n), "bounds": column("bounds", np.int64, nb + 1),
              "edge_ptr": column("edge_ptr", np.int64, nb + 1),
              "step": column("step", np.uint8, slots), "dst": column("dst", np.uint16, slots),
              "runs": column("runs", np.int64, nb * (heavy + 1))}
    arrays["order"][:], arrays["bounds"][:], arrays["edge_ptr"][:] = order, bounds, slot_ptr
    group = PUSH_GROUP_BLOCKS * numba.get_num_threads()
    for first in range(0, nb, group):
        last = min(first + group, nb)
        fill_blocks(csc.indptr, csc.indices, order, new_id, bounds, slot_ptr, heavy,
                    arrays["step"], arrays["dst"], arrays["runs"], first, last)
        bar.update(int(edge_ptr[last] - edge_ptr[first]))
    bar.close()
    for arr in arrays.values():
        if isinstance(arr, np.memmap):
            arr.flush()
    return IndexInfo("push", PUSH_STEP_DTYPE, n, m, False,
                     edges_digest(graph.manifest, edge_set), nb, heavy)


def build_index(graph, kinds: tuple[str, ...] = ("csr", "csc"), *,
                edge_sets: list[str] | None = None, memory_limit: int | None = 2_000_000_000,
                force: bool = False, progress: bool = False) -> dict[str, dict[str, IndexInfo]]:
    """Build persistent adjacency indexes of a graph's edge sets, memory-mapped when read.

    A ``csr`` (out-neighbours) or ``csc`` (in-neighbours) index makes :meth:`Graph.csr` /
    :meth:`Graph.csc` map the stored arrays instead of building them; a ``push`` index (in-edges
    in destination blocks, vertices in out-degree order) lets in-memory PageRank push over it
    with no build, and needs the CSC, which is then built too. Each index is listed in the
    manifest (``graph.manifest`` is updated in place), after its files are complete on disk.
    ``graphsys index`` and :func:`graphsys.ingest` with ``index`` run this.

    Parameters
    ----------
    graph : Graph
        An open graph in a local directory.
    kinds : tuple of str, default ("csr", "csc")
        Among ``csr``, ``csc`` and ``push``.
    edge_sets : list of str, optional
        The edge sets to index (default: every edge set); a view (``"default,day2"``,
        ``"all"``) names its members. Each keeps the indexes it has: after an append only
        the new edge set's are built, and a view reads its members' merged
        (:mod:`graphsys.storage.index_merge`).
    memory_limit : int, default 2_000_000_000
        Bound on anonymous memory, in bytes (None: the RAM available now); below
        :func:`min_build_memory` it is refused up front.
    force : bool, default False
        Rebuild an index that is listed and current (by default it is kept), or one built
        before an append (by default read renumbered; rebuilt, it maps with no copy).
    progress : bool, default False
        Show progress bars on stderr.

    Returns
    -------
    dict
        The indexes built, ``{edge_set: {kind: IndexInfo}}``.

    Raises
    ------
    GraphsysError
        An unknown kind, a remote graph, or a ``memory_limit`` too small.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.adjacency_index import build_index
    >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tempfile.mkdtemp() + "/g")
    >>> {name: sorted(kinds) for name, kinds in build_index(g, ("csr", "csc")).items()}
    {'default': ['csc', 'csr']}
    >>> build_index(g, ("csr",))  # current: nothing to do
    {}
    >>> g.csr().indices.dtype  # mapped from the index
    dtype('int32')
    """
    openmp.apply_wait_policy()
    graph.location.require_local("building an index")
    bad = [k for k in kinds if k not in INDEX_KINDS]
    if bad or not kinds:
        raise GraphsysError(f"index kinds must be among {', '.join(INDEX_KINDS)}, got "
                            f"{', '.join(kinds) or 'none'}")
    # in INDEX_KINDS order: a push index is built from the CSC
    kinds = tuple(k for k in INDEX_KINDS if k in kinds or (k == "csc" and "push" in kinds))
    need = min_build_memory(graph.num_nodes(), kinds)
    if (memory_limit := budget(memory_limit)) < need:
        per_node = (need - BUILD_FIXED_BYTES) // max(graph.num_nodes(), 1)
        raise GraphsysError(f"memory_limit {memory_limit:,} bytes is too small to index "
                            f"{graph.num_nodes():,} nodes: it needs at least {need:,} bytes "
                            f"({per_node} per node + {BUILD_FIXED_BYTES >> 20} MiB)")
    names = graph.edge_sets if edge_sets is None else list(dict.fromkeys(
        m for e in edge_sets for m in graph.edge_set(e).parts))
    manifest = graph.manifest
    names = [n for n in names if not manifest.edge_sets[n].change]  # change sets: no index

    def kept(name: str, kind: str) -> bool:
        """Current, or built before an append and read renumbered (not a push or temporal
        index: those are built again)."""
        state = index_state(manifest, name, kind)
        return not force and (state == "current"
                                 or state == "grown" and kind not in ("push", "temporal"))

    built: dict[str, dict[str, IndexInfo]] = {}
    if all(kept(name, kind) for name in names for kind in kinds):
        if leftover_temps(graph.path):  # only then a lock: a read-only graph stays usable
            with writer_lock(graph.path, manifest):
                remove_leftover_temps(graph.path)
        return built  # every index current: nothing to write
    # one writer at a time, and none since the graph was opened: writing back a manifest
    # read before another writer's commit would drop that commit
    with writer_lock(graph.path, manifest):
        remove_leftover_temps(graph.path)
        for name in names:
            for kind in kinds:
                if kind == "temporal" and edge_sets is None and "timestamp" not in {
                        c.name for c in manifest.edge_sets[name].columns}:
                    continue          # every edge set: the timestamped ones
                if kept(name, kind):
                    continue
                tmp, info, entries = _build_into_temp(graph, name, kind, progress,
                                                      memory_limit)
                try:
                    _commit_index(graph, name, kind, tmp, info, entries)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                built.setdefault(name, {})[kind] = info
                forget_mapped(graph, kind)  # this Graph maps the new one from now on
    return built


def _build_into_temp(graph, name: str, kind: str, progress: bool, memory_limit: int
                     ) -> tuple[Path, IndexInfo, dict]:
    """Build one index into a fresh ``index/.tmp-*`` directory of the graph, its files on
    disk: ``(directory, info, manifest entries)``; a full disk is one line."""
    tmp = graph.path / "index" / f".tmp-{name}-{kind}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir(parents=True)
        info = (_build_push(graph, name, tmp, progress) if kind == "push" else
                _build_temporal(graph, name, tmp, progress) if kind == "temporal" else
                _build_sym(graph, name, tmp, progress, memory_limit) if kind == "sym" else
                _build_one(graph, name, kind, tmp, progress, memory_limit))
        entries = {}
        for column in info.columns():  # on disk (a full one fails here)
            src = tmp / f"{kind}-{column}.arrow"
            fsync_path(src)
            entries[index_file(name, kind, column)] = {
                "sha256": sha256_file(src), "bytes": src.stat().st_size}
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if not isinstance(exc, OSError) or not disk_full(exc, graph.path):
            raise
        raise GraphsysError(
            f"{graph.path}: the disk is full: no space for the {kind} index of edge set "
            f"{name!r}; the graph is intact (that index is not added)") from None
    return tmp, info, entries


def _commit_index(graph, name: str, kind: str, tmp: Path, info: IndexInfo,
                  entries: dict) -> None:
    """Put the index built in ``tmp`` (:func:`_build_into_temp`) in place in one step: a
    new tree of the graph (the new files moved in, every other listed file and the held
    writer lock hard-linked) swapped with the old one, its manifest written last
    (:func:`~graphsys.storage.atomic.replacement_directory`). The files of a rebuilt index
    are replaced in the new tree only: a reader of the old version, or one opening the
    graph meanwhile, never reads a new file against the old manifest."""
    manifest = graph.manifest
    files = dict(manifest.files)
    indexes = {n: dict(kinds) for n, kinds in manifest.indexes.items()}
    old = indexes.get(name, {}).get(kind)
    for rel in [index_file(name, kind, c) for c in (old.columns() if old else ())]:
        files.pop(rel, None)
    files.update(entries)
    indexes.setdefault(name, {})[kind] = info
    with replacement_directory(graph.path) as staging:
        os.link(graph.path / LOCK_FILE, staging / LOCK_FILE)  # still held after the swap
        for column in info.columns():
            rel = index_file(name, kind, column)
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            os.rename(tmp / f"{kind}-{column}.arrow", staging / rel)
        linked, copied = link_unchanged(graph.path, staging, files)
        sync_files(staging, copied, linked=[*linked, *entries])
        # manifest last: the files it names are complete and on disk
        manifest.files, manifest.indexes = files, indexes
        write_manifest(staging, manifest)


def _build_temporal(graph, edge_set: str, directory: Path, progress: bool) -> IndexInfo:
    from graphsys.storage.temporal_index import build_temporal

    return build_temporal(graph, edge_set, directory, edges_digest(graph.manifest, edge_set),
                          progress)


def leftover_temps(path: Path) -> list[Path]:
    """The ``index/.tmp-*`` build directories under the graph directory ``path``: indexes
    are built only under the writer lock, so any found while holding it (or by ``verify``)
    were left by a killed run."""
    d = Path(path) / "index"
    return sorted(d.glob(".tmp-*")) if d.is_dir() else []


def remove_leftover_temps(path: Path) -> None:
    """Delete :func:`leftover_temps` (call it holding the writer lock)."""
    for tmp in leftover_temps(path):
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
