"""Subgraphs of a stored graph, written as new graph directories through the ingest path.

The methods of :class:`~graphsys.storage.subgraph_methods.SubgraphMethods` select nodes or
edges here and write the result: the kept edges of every edge set are streamed from the
buckets, batch by batch, into an Arrow IPC file beside the output (memory: one batch), then
ingested with a node table of the kept nodes (so isolated members stay, with their original
ids and every node column), each edge set keeping its rules. The spill file is removed
whatever happens; without ``out`` the result lives in a temporary directory removed when the
returned Graph is garbage collected or the process exits. Node selections are boolean masks
over internal ids: :func:`node_mask` and :func:`ego_mask`.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as paipc

from graphsys.errors import GraphsysError, ParameterError, check_count
from graphsys.storage.csr import CSR
from graphsys.storage.edge_changes import node_pair_keys
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources
from graphsys.storage.node_reads import checked_internal, internal_of

__all__ = ["edge_mask_fn", "ego_adjacency", "ego_mask", "node_mask", "node_table",
           "write_subgraph"]


def _one_type(graph) -> str:
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"{graph.path} has entity types {', '.join(graph.entity_types)}: "
                            f"subgraphs need a graph with one")
    return graph.entity_types[0]


def node_table(graph, columns: bool = True) -> pa.Table:
    """The nodes as a table in internal-id order: ``id`` (original ids) and, when
    ``columns``, every node column (features as fixed-size lists, labels, masks, strings):
    what a ``where`` predicate of :func:`node_mask` sees."""
    et = graph.entity_type(_one_type(graph))
    arrays: dict[str, Any] = {"id": graph.node_ids()}
    for col in et.columns if columns else ():
        if col.kind == "string":
            arrays[col.name] = graph.string_column(col.name)
        elif col.kind == "features":
            v = np.ascontiguousarray(graph.node_column(col.name), np.float32)
            arrays[col.name] = pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)),
                                                                 v.shape[1])
        else:
            arrays[col.name] = graph.node_column(col.name)
    return pa.table(arrays)


def _predicate(table: pa.Table, where, what: str) -> np.ndarray:
    """Evaluate ``where`` (a pyarrow compute Expression, or a callable of the table
    returning one bool per row) over ``table``: a bool mask."""
    try:
        if isinstance(where, pc.Expression):
            mask = table.append_column("__row", pa.array(np.arange(len(table)))).filter(
                where).column("__row").to_numpy()
            out = np.zeros(len(table), bool)
            out[mask] = True
            return out
        if callable(where):
            mask = where(table)
            if isinstance(mask, (pa.Array, pa.ChunkedArray)):
                mask = mask.to_numpy(zero_copy_only=False)
            mask = np.asarray(mask)
        else:
            raise ParameterError("where", f"must be a pyarrow compute expression or a "
                                          f"callable, got {type(where).__name__}")
    except (pa.ArrowException, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__  # one line
        raise ParameterError("where", f"cannot be evaluated over the {what} ({first}); "
                                      f"columns: {', '.join(table.column_names)}") from None
    if mask.dtype != bool or mask.shape != (len(table),):
        raise ParameterError("where", f"must give one bool per row of the {what} "
                                      f"({len(table)}), got {mask.dtype} {mask.shape}")
    return mask


def node_mask(graph, nodes=None, where=None, *, internal: bool = False) -> np.ndarray:
    """The kept nodes as a bool mask (N,) over internal ids: ``nodes`` (original ids, or
    internal ones when ``internal``, or a bool mask (N,)), and/or ``where`` over
    :func:`node_table` (both: nodes that are in ``nodes`` and satisfy ``where``)."""
    _one_type(graph)
    n = graph.num_nodes()
    if nodes is None and where is None:
        raise ParameterError("nodes", "or where is needed to choose the nodes")
    keep = np.ones(n, bool)
    if nodes is not None:
        if hasattr(nodes, "detach"):  # a torch tensor: its values (a bool mask too)
            nodes = nodes.detach().cpu().numpy()
        arr = nodes if isinstance(nodes, (np.ndarray, pa.Array)) else None
        if arr is not None and arr.dtype == bool:
            if arr.shape != (n,):
                raise ParameterError("nodes", f"as a mask must have {n} entries (one per "
                                              f"node), got {arr.shape}")
            keep = np.asarray(arr).copy()
        else:
            keep[:] = False
            if internal:
                idx = checked_internal(nodes, n, "nodes")
            else:
                idx = internal_of(graph, nodes if isinstance(nodes, (np.ndarray, pa.Array))
                                  or np.isscalar(nodes) else list(nodes), "nodes")
            keep[idx] = True
    if where is not None:
        keep &= _predicate(node_table(graph), where, "node table")
    return keep


@numba.njit(nogil=True, inline="always")
def _visit(v, seen, queue, tail):
    """Queue ``v`` unless ``seen`` (a bitmap, uint64 words) has it (``queue`` doubled when
    full): the queue and its new tail."""
    word, bit = v >> 6, np.uint64(1) << np.uint64(v & 63)
    if seen[word] & bit:
        return queue, tail
    seen[word] |= bit
    if tail == queue.shape[0]:
        grown = np.empty(2 * tail, queue.dtype)
        grown[:tail] = queue
        queue = grown
    queue[tail] = v
    return queue, tail + 1


@numba.njit(cache=True, nogil=True)
def _reach(sources, radius, optr, oidx, iptr, iidx, both, seen, queue):
    """Queue the nodes within ``radius`` hops of ``sources`` (out-edges, and in-edges when
    ``both``), level by level, setting their bits in ``seen`` (uint64 (ceil(N/64),), clear
    on entry; ``queue``, non-empty, is doubled as it fills): (the queue, how many it
    holds), the count -1 (nothing queued) when a source is outside 0..N-1."""
    n = optr.shape[0] - 1
    for s in sources:
        if s < 0 or s >= n:
            return queue, -1
    tail = 0
    for s in sources:
        queue, tail = _visit(s, seen, queue, tail)
    head = 0
    for _ in range(radius):
        end = tail
        if head == end:
            break
        for h in range(head, end):
            u = queue[h]
            for e in range(optr[u], optr[u + 1]):
                queue, tail = _visit(oidx[e], seen, queue, tail)
            if both:
                for e in range(iptr[u], iptr[u + 1]):
                    queue, tail = _visit(iidx[e], seen, queue, tail)
        head = end
    return queue, tail


def ego_mask(graph, center, radius: int = 1, *, undirected: bool = False,
             edge_set: str | None = None, internal: bool = False) -> np.ndarray:
    """The nodes within ``radius`` hops of any of ``center`` (following out-edges, or
    edges either way when ``undirected``), as a bool mask (N,) over internal ids. Reads
    the CSR (and CSC): the stored adjacency index where the graph has one."""
    plan = _ego_plan(graph, edge_set, undirected)
    n = plan[0]
    src = _centres(graph, center, internal, radius)
    mask = np.zeros(n, bool)
    entry = _scratch(graph, n)
    try:
        queue, count = _reach(src, int(min(radius, n)), *plan[1:6], entry[1],
                              np.empty(max(n, 1), np.int64))
        ball = queue[:max(count, 0)]
        mask[ball] = True
        entry[1][ball >> 6] = 0
    except BaseException:
        entry[1] = np.zeros((n + 63) >> 6, np.uint64)  # left with bits set
        raise
    finally:
        entry[0].release()
    if count < 0:
        raise ParameterError("center", f"holds internal ids outside 0..{n - 1}")
    return mask


def ego_adjacency(graph, center, radius: int = 1, *, undirected: bool = False,
                  edge_set: str | None = None, internal: bool = False):
    """The ego graph of ``center`` in memory: the nodes within ``radius`` hops (as
    :func:`ego_mask` finds them) and the edges among them, without writing a graph
    directory (:meth:`~graphsys.storage.graph.Graph.ego_graph` writes one).

    One compiled pass over the ball: a level-by-level search marking the nodes in a
    bitmap (the graph's own, kept between calls and cleared through the ball, so that a
    small ego graph costs its ball, not an O(N) fill), then each ball node's row kept
    where the bitmap has the neighbour and renumbered to positions in the ball. The
    adjacency it reads is resolved once per graph while the stored indexes stay mapped.

    Parameters
    ----------
    graph : Graph
        A stored graph with one entity type.
    center : int, str or array-like
        An original node id (internal when ``internal``), or several.
    radius : int, default 1
        Hops.
    undirected : bool, default False
        In a directed edge set, follow edges either way (else out-edges only).
    edge_set : str, optional
        The edge set.
    internal : bool, default False
        ``center`` holds internal ids.

    Returns
    -------
    nodes : numpy.ndarray
        int64 (K,) internal ids of the ego graph's nodes, ascending.
    adjacency : CSR
        The induced out-neighbour lists over positions in ``nodes`` (row ``i`` is node
        ``nodes[i]``; an undirected edge set's edges both ways, as its CSR holds them).

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.subgraph import ego_adjacency
    >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 4], tempfile.mkdtemp() + "/g")
    >>> nodes, adj = ego_adjacency(g, 1, 2)
    >>> g.to_original(nodes).tolist(), adj.indptr.tolist(), adj.indices.tolist()
    ([1, 2, 3], [0, 1, 2, 2], [1, 2])
    """
    plan = _ego_plan(graph, edge_set, undirected)
    n = plan[0]
    # one internal id and a plain radius (the usual call) go straight to the search
    one = internal and type(center) is int and type(radius) is int and radius >= 0
    src = center if one else _centres(graph, center, internal, radius)
    entry = _scratch(graph, n)
    try:
        nodes, indptr, indices = (_ego_at if one else _ego)(
            src, int(min(radius, n)), plan[1], plan[2], plan[3], plan[4], plan[5], entry[1],
            entry[2])
    except BaseException:
        entry[1] = np.zeros((n + 63) >> 6, np.uint64)  # left with bits set
        raise
    finally:
        entry[0].release()
    if not len(indptr):
        raise ParameterError("center", f"holds internal ids outside 0..{n - 1}")
    return nodes, CSR(indptr, indices)


def _ego_plan(graph, edge_set, undirected) -> tuple:
    """The adjacency an ego search of ``graph`` follows: ``(N, out indptr, out indices, in
    indptr, in indices, both, mapped)`` (the in-lists are the out-lists unless ``both``),
    kept in ``graph._searches`` while the stored indexes it came from (``mapped``) are
    still the ones the graph maps, else read again (a CSR built from the buckets is not
    kept)."""
    key = (edge_set if edge_set is None or isinstance(edge_set, str) else tuple(edge_set),
           bool(undirected))
    plan = graph._searches.get(key)
    if plan is not None:
        live = graph._mapped_indexes
        for k, v in plan[6]:
            if live.get(k) is not v:
                break
        else:
            return plan
    _one_type(graph)
    es = graph.edge_set(edge_set)
    out = graph.csr(es.name, weights=False)
    both = bool(undirected) and not es.undirected
    inn = graph.csc(es.name, weights=False) if both else out
    kinds = ("csr", "csc") if both else ("csr",)
    mapped = tuple(((es.name, k), graph._mapped_indexes.get((es.name, k))) for k in kinds)
    plan = (graph.num_nodes(), out.indptr, out.indices, inn.indptr, inn.indices, both,
            mapped)
    if all(v is not None for _, v in mapped):
        graph._searches[key] = plan
    return plan


def _centres(graph, center, internal: bool, radius) -> np.ndarray:
    """int64 ids of ``center`` (original ids mapped to internal ones unless ``internal``;
    internal ones are range-checked by the search), ``radius`` checked: a one-line error."""
    check_count("radius", radius, minimum=0)
    if internal:
        return checked_internal(center, graph.num_nodes(), "center")
    scalar = np.isscalar(center) or isinstance(center, str)
    return internal_of(graph, [center] if scalar else center, "center")


def _scratch(graph, n: int) -> list:
    """``[lock, bitmap, positions]`` for one search, the lock held (the caller releases
    it): a clear bitmap of ``n`` bits (uint64 words), to be left clear again (or replaced
    by a clear one after a search that failed), and an int32 (n,) array of positions (any
    values). The graph's own (in ``graph._searches``), kept between calls, so that a small
    search costs its ball and not an O(N) fill; fresh ones while another thread holds
    them."""
    entry = graph._searches.get("scratch")
    if entry is None or len(entry[2]) != n:
        entry = graph._searches["scratch"] = [threading.Lock(),
                                              np.zeros((n + 63) >> 6, np.uint64),
                                              np.empty(n, np.int32)]
    if not entry[0].acquire(blocking=False):
        entry = [threading.Lock(), np.zeros((n + 63) >> 6, np.uint64), np.empty(n, np.int32)]
        entry[0].acquire()
    return entry


@numba.njit(cache=True, nogil=True)
def _ego(sources, radius, optr, oidx, iptr, iidx, both, seen, place):
    """The ego graph in one pass over the ball: :func:`_reach` queues it and sets its bits
    in ``seen`` (clear on entry, and again on return); its nodes are sorted and numbered
    (``place``, int32 (N,), read only at ball nodes), then each node's row is kept where
    ``seen`` has the neighbour, renumbered (ascending, as the stored rows): (nodes int64
    (K,), indptr int64 (K+1,), indices int64), or three empty arrays when a source is
    outside 0..N-1."""
    queue, count = _reach(sources, radius, optr, oidx, iptr, iidx, both, seen,
                          np.empty(max(16, 2 * sources.shape[0]), np.int64))
    if count < 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    nodes = np.sort(queue[:count])
    room = 0
    for i in range(count):
        u = nodes[i]
        place[u] = i
        room += optr[u + 1] - optr[u]
    out_ptr = np.empty(count + 1, np.int64)
    out = np.empty(room, np.int64)
    out_ptr[0] = 0
    at = 0
    for i in range(count):
        u = nodes[i]
        for e in range(optr[u], optr[u + 1]):
            v = oidx[e]
            if seen[v >> 6] & (np.uint64(1) << np.uint64(v & 63)):
                out[at] = place[v]
                at += 1
        out_ptr[i + 1] = at
    for i in range(count):
        seen[nodes[i] >> 6] = 0
    return nodes, out_ptr, out[:at].copy()


@numba.njit(cache=True, nogil=True)
def _ego_at(centre, radius, optr, oidx, iptr, iidx, both, seen, place):
    """:func:`_ego` of one centre (an int): the usual call, without an array to box."""
    return _ego(np.full(1, centre, np.int64), radius, optr, oidx, iptr, iidx, both, seen,
                place)


def edge_mask_fn(graph, edges=None, where=None, *, internal: bool = False,
                 edge_set: str | None = None) -> Callable[[np.ndarray, np.ndarray, pa.Table],
                                                          np.ndarray]:
    """A function ``(src, dst, batch) -> bool mask`` (``batch()`` builds the batch's
    table when a predicate needs it) keeping the edges of ``edges`` (pairs
    of original ids, or internal ones when ``internal``; every parallel copy, and for an
    undirected edge set both directions) and/or those satisfying ``where`` over the edge
    batch (columns ``src``, ``dst`` original ids, ``weight``, ``rel``, edge columns)."""
    if edges is None and where is None:
        raise ParameterError("edges", "or where is needed to choose the edges")
    n = graph.num_nodes()
    keys = None
    if edges is not None:
        # objects but for an array: np.asarray([(True, 2)]) would read True as node 1
        pairs = edges if isinstance(edges, np.ndarray) else np.asarray(edges, dtype=object)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            try:
                pairs = np.asarray([tuple(p) for p in edges], dtype=object)
            except TypeError:
                pairs = np.zeros((0, 3))
            if pairs.ndim != 2 or pairs.shape[1] != 2:
                raise ParameterError("edges", "must be a sequence of (u, v) pairs")
        if internal:
            u, v = (checked_internal(pairs[:, k], n, "edges") for k in (0, 1))
        else:
            u, v = (internal_of(graph, pairs[:, k].tolist(), "edges") for k in (0, 1))
        keys = np.unique(np.concatenate([node_pair_keys(u, v, n)] + (
            [node_pair_keys(v, u, n)] if graph.edge_set(edge_set).undirected else [])))

    def keep(src: np.ndarray, dst: np.ndarray, batch: Callable[[], pa.Table]) -> np.ndarray:
        mask = np.ones(len(src), bool)
        if keys is not None:
            mask &= np.isin(node_pair_keys(src, dst, n), keys)
        if where is not None and mask.any():
            mask &= _predicate(batch(), where, "edges")
        return mask

    return keep


def write_subgraph(graph, keep_nodes: np.ndarray | None, out: str | Path | None, *,
                   keep_edges: Callable | None = None, edge_sets=None, dir=None,
                   options: dict[str, Any] | None = None) -> tuple[Path, Path | None]:
    """Write the subgraph: every edge of ``edge_sets`` (default all; with change sets,
    :func:`_default_sets`) whose two ends are in
    ``keep_nodes`` and that ``keep_edges`` keeps; nodes ``keep_nodes`` (None: the ends of the
    kept edges, as ``nx.edge_subgraph``). Returns ``(path, temporary root or None)``;
    ``options``: :class:`IngestOptions` fields overriding the defaults (the graph's
    partition count, capped at the kept nodes; the hash partitioner)."""
    etype = _one_type(graph)
    names = _default_sets(graph) if edge_sets is None else (
        [edge_sets] if isinstance(edge_sets, str) else list(edge_sets))
    sets = [graph._stored(name) for name in names]
    rules = {(es.undirected, es.dedupe, es.drop_self_loops) for es in sets}
    if len(rules) > 1:
        raise GraphsysError(f"{graph.path}: edge sets {', '.join(names)} differ in "
                            f"undirected/dedupe/drop_self_loops; take a subgraph of one at "
                            f"a time (edge_sets=)")
    undirected, dedupe, drop_loops = rules.pop() if rules else (False, False, False)
    temp_root = None
    if out is None:
        temp_root = Path(tempfile.mkdtemp(prefix="graphsys-subgraph-", dir=dir))
        out = temp_root / "graph"
    out = Path(out)
    if out.exists():
        raise GraphsysError(f"{out} already exists")
    out.parent.mkdir(parents=True, exist_ok=True)
    spill = Path(tempfile.mkdtemp(prefix=f".{out.name}.subgraph-", dir=out.parent))
    try:
        ids = graph.node_ids()
        seen = np.zeros(graph.num_nodes(), bool) if keep_nodes is None else None
        sources = []
        for es in sets:
            path = spill / f"{es.name}.arrow"
            schema = _spill_edges(graph, es, ids, keep_nodes, keep_edges, seen, path)
            # an edge set left without edges stays, empty (an in-memory table of no rows)
            where = dict(paths=[path], format="arrow") if path.exists() else dict(
                table=schema.empty_table())
            sources.append(EdgeSource(
                **where, edge_set=es.members[0] if edge_sets is None and es.members
                else es.name, src_col="src", dst_col="dst",
                weight_col="weight" if es.has_weight else None,
                rel_col="rel" if es.has_rel else None,
                edge_columns=[c.name for c in es.columns]))
        kept = keep_nodes if keep_nodes is not None else seen
        if not kept.any():
            raise GraphsysError("the subgraph has no nodes")
        table = node_table(graph).filter(pa.array(kept))
        opts = dict(partitions=max(1, min(graph.num_partitions, int(kept.sum()))),
                    undirected=undirected, dedupe=dedupe, drop_self_loops=drop_loops,
                    relation_types=list(graph.relation_types),
                    metadata={"source": "subgraph", "of": str(graph.path)})
        opts.update(options or {})
        ingest_sources(sources, out, IngestOptions(**opts), nodes=[NodeSource(table, etype)])
    except BaseException:
        if temp_root is not None:
            shutil.rmtree(temp_root, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return out, temp_root


def _default_sets(graph) -> list:
    """The edge sets a subgraph takes by default: every stored one; on a graph with change
    sets (deletions, weight updates) the default view, read through them and written under
    its default edge set's name, and every edge set outside it that is not a change set."""
    if not graph.change_sets:
        return graph.edge_sets
    view = graph.edge_set(None)
    return [view.name] + [n for n in graph.edge_sets if n not in view.parts]


def _spill_edges(graph, es, ids, keep_nodes, keep_edges, seen, path: Path) -> pa.Schema:
    """Stream ``es``'s kept edges into the Arrow IPC file ``path`` (removed when none is
    kept); returns the file's schema. An undirected edge set gives each stored pair once (``src <=
    dst``): the ingest stores both directions again."""
    offsets = graph.partition_offsets()
    rel_names = np.asarray([r.name for r in graph.relation_types], dtype=object)
    fields = [("src", pa.int64() if isinstance(ids, np.ndarray) else pa.large_string()),
              ("dst", pa.int64() if isinstance(ids, np.ndarray) else pa.large_string())]
    if es.has_weight:
        fields.append(("weight", pa.float32()))
    if es.has_rel:
        fields.append(("rel", pa.large_string()))
    fields += [(c.name, pa.from_numpy_dtype(np.dtype(c.dtype))) for c in es.columns]
    schema = pa.schema(fields)
    count = 0
    with paipc.new_file(str(path), schema) as writer:
        for b in graph.buckets("row-major", es.name):
            for eb in b.batches():
                s = offsets[b.i] + eb.src.astype(np.int64)
                d = offsets[b.j] + eb.dst.astype(np.int64)
                mask = np.ones(len(s), bool) if not es.undirected else s <= d
                if keep_nodes is not None:
                    mask &= keep_nodes[s] & keep_nodes[d]
                if keep_edges is not None and mask.any():
                    mask &= keep_edges(s, d, lambda s=s, d=d, eb=eb: _batch(
                        ids, s, d, eb, es, rel_names, schema))
                if not mask.any():
                    continue
                idx = np.flatnonzero(mask)
                writer.write_table(_batch(ids, s[idx], d[idx], eb, es, rel_names, schema,
                                          idx))
                if seen is not None:
                    seen[s[idx]] = True
                    seen[d[idx]] = True
                count += len(idx)
    if not count:
        path.unlink()
    return schema


def _batch(ids, s, d, eb, es, rel_names, schema, idx=None) -> pa.Table:
    """The edges ``s -> d`` (rows ``idx`` of batch ``eb``) with original ids, weight,
    relation names and edge columns."""
    def rows(a):
        return a if idx is None else a[idx]

    def orig(x):
        return ids[x] if isinstance(ids, np.ndarray) else ids.take(pa.array(x))

    cols = [orig(s), orig(d)]
    if es.has_weight:
        cols.append(rows(eb.weight))
    if es.has_rel:
        cols.append(pa.array(rel_names[rows(eb.rel)], pa.large_string()))
    cols += [rows(eb.columns[c.name]) for c in es.columns]
    return pa.Table.from_arrays([pa.array(c) if not isinstance(c, pa.Array) else c
                                 for c in cols], schema=schema)


def open_result(written: tuple[Path, Path | None], open_graph):
    """Open a written subgraph; a temporary one is removed with its Graph (or at exit)."""
    path, temp_root = written
    g = open_graph(path)
    if temp_root is not None:
        weakref.finalize(g, shutil.rmtree, temp_root, True)
    return g
