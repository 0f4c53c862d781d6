"""What every interop module shares: in-memory arrays into the one ingest path
(:func:`ingest_arrays`: id arrays, weights and node columns as an Arrow edge source and a
node table for :func:`graphsys.storage.ingest.ingest_sources`), and a stored graph out as
NumPy arrays in ascending original-id order behind a ``max_edges`` guard
(:func:`export_arrays`), so ``to_x(from_x(obj))`` keeps node positions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphsys.errors import GraphsysError, InputError, ParameterError, check_count, first_bool
from graphsys.execution import fill_doc
from graphsys.interop._dense import write_dense
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

#: Decorator of a ``from_*`` converter: its ``%(ingest)s`` line is its ``**options`` and
#: ``Returns`` sections.
document = fill_doc(ingest="""**options
    Ingest options, as for :func:`graphsys.from_numpy` (``partitions``,
    ``partitioner``, ``undirected``, ``memory_limit``, ...).

Returns
-------
Graph
    The stored graph, opened.""")

#: Default ``max_edges`` of the exports: 100 M edges = a 1.6 GB int64 edge_index.
DEFAULT_MAX_EDGES = 100_000_000
#: Names a user may guess for an ingest option, and the option they mean.
GUESSED_OPTIONS = {"num_partitions": "partitions"}


def ingest_options(options: dict[str, Any]) -> IngestOptions:
    """The ``**options`` of a ``from_*`` function as :class:`IngestOptions`; a name that is
    not one of its fields is a one-line :class:`ParameterError` that names the option meant
    (``num_partitions``: ``partitions``) or lists the options."""
    known = [f.name for f in fields(IngestOptions)]
    for name, value in options.items():
        if name in GUESSED_OPTIONS:
            raise ParameterError(name, f"is not an ingest option: pass "
                                       f"{GUESSED_OPTIONS[name]}={value!r}")
        if name not in known:
            raise ParameterError(name, f"is not an ingest option (options: "
                                       f"{', '.join(known)})")
    return IngestOptions(**options)


def node_column_values(name: str, value: Any, num_nodes: int) -> np.ndarray:
    """A node column as it is stored: float features as float32 (N, F), integer labels as
    int64 (N,), bool masks (N,), strings as an object array (N,) of str or None. Raises on
    a column whose length is not ``num_nodes`` or whose dtype is none of these."""
    v = np.asarray(value)
    if name == "id":
        raise InputError("node column 'id' would replace the node ids (the node table's "
                         "own 'id' column): give the column another name")
    if v.shape[:1] != (num_nodes,):
        raise InputError(f"node column {name!r} has shape {v.shape}; expected "
                         f"{num_nodes} rows (one per node)")
    if name == "label" and not (v.dtype.kind in "iu" and v.ndim == 1):
        raise InputError(f"node column 'label' has dtype {v.dtype} and shape {v.shape}: "
                         f"labels are integer classes (N,), -1 for unknown")
    if v.dtype.kind == "f" and (v.ndim == 1 or np.prod(v.shape[1:]) > 0):   # (N, F...)
        return v.reshape(num_nodes, -1).astype(np.float32, copy=False)
    if v.dtype.kind in "iu" and v.ndim == 1:
        return v.astype(np.int64, copy=False)
    if v.dtype.kind == "b" and v.ndim == 1:
        return v
    if v.dtype.kind in "OU" and v.ndim == 1 and all(
            x is None or isinstance(x, str) for x in v.tolist()):
        return np.asarray(v.tolist(), dtype=object)
    raise InputError(f"node column {name!r}: dtype {v.dtype} and shape {v.shape} "
                     f"(expected float (N, F) features, integer (N,) labels, bool "
                     f"(N,) masks or strings (N,))")


def node_table(num_nodes: int, columns: dict[str, Any], ids: np.ndarray | None = None
               ) -> pa.Table:
    """Node table ``id`` + columns; ``ids`` default ``0..num_nodes-1``. Raises on a column
    whose length is not ``num_nodes`` or whose dtype is not float / integer / bool
    (:func:`node_column_values`)."""
    arrays: dict[str, pa.Array] = {
        "id": pa.array(np.arange(num_nodes, dtype=np.int64) if ids is None else ids)}
    for name, value in columns.items():
        arrays[name] = _column_array(node_column_values(name, value, num_nodes))
    return pa.table(arrays)


def _column_array(v: np.ndarray) -> pa.Array:
    """A node column (:func:`node_column_values`) as the node table's Arrow column."""
    if v.dtype.kind == "f":
        return pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), v.shape[1])
    if v.dtype.kind == "O":
        return pa.array(v.tolist(), pa.string())
    return pa.array(v)


def ingest_arrays(src, dst, out: str | Path, *, num_nodes: int | None = None,
                  weight=None, node_columns: dict[str, Any] | None = None,
                  node_ids: np.ndarray | None = None, metadata: dict[str, Any] | None = None,
                  options: dict[str, Any] | None = None) -> Graph:
    """Ingest an edge list held in memory into the graph directory ``out`` and open it.

    ``src``/``dst``: integer node ids (E,) (NumPy, torch or Arrow; read zero-copy where
    the dtype allows); ``weight``: float (E,) or None; ``num_nodes``: nodes ``0..N-1``
    (isolated ones included) when the ids are positions; ``node_ids``: the original id of
    each node column row instead (int64 or str); ``options``: :class:`IngestOptions`
    fields (``partitions``, ``partitioner``, ``memory_limit``, ``undirected``, ...).
    """
    cols = {"src": _values(src, "src"), "dst": _values(dst, "dst")}
    if len(cols["src"]) != len(cols["dst"]):
        raise InputError(f"src has {len(cols['src'])} ids, dst {len(cols['dst'])}")
    if weight is not None:
        cols["weight"] = _values(weight, "weight")
        if len(cols["weight"]) != len(cols["src"]):
            raise InputError(f"weight has {len(cols['weight'])} values for "
                             f"{len(cols['src'])} edges")
    if num_nodes is not None:
        num_nodes = check_count("num_nodes", num_nodes, minimum=0)
    if num_nodes is not None and len(cols["src"]):
        for role in ("src", "dst"):
            lo, hi = _min_max(cols[role])
            if lo < 0 or hi >= num_nodes:
                raise InputError(f"{role} ids span {lo}..{hi}, outside "
                                 f"0..{num_nodes - 1} (num_nodes={num_nodes})")
    opts = ingest_options(options or {})
    opts.metadata = {**(metadata or {}), **opts.metadata}
    nodes = []
    if num_nodes is not None or node_ids is not None or node_columns:
        n = len(node_ids) if node_ids is not None else num_nodes
        if n is None:
            raise GraphsysError("node_columns need num_nodes or node_ids")
        values = {name: node_column_values(name, v, n)
                  for name, v in (node_columns or {}).items()}
        if node_ids is None and write_dense(cols["src"], cols["dst"], Path(out), n,
                                            cols.get("weight"), values, opts):
            return open_graph(out)  # nodes 0..N-1: written directly, as the ingest would
        nodes.append(NodeSource(node_table(n, values, node_ids)))
    edges = [EdgeSource(table=pa.table({k: _arrow(v, k) for k, v in cols.items()}),
                        weight_col="weight" if weight is not None else None)]
    ingest_sources(edges, out, opts, nodes=nodes)
    return open_graph(out)


def _min_max(values) -> tuple[Any, Any]:
    """The least and greatest id (Python values) of a non-empty id column."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        return values.min().item(), values.max().item()
    lo, hi = pc.min_max(values).values()
    return lo.as_py(), hi.as_py()


def _values(values, name: str) -> np.ndarray | pa.Array | pa.ChunkedArray:
    """An input column as a 1-D NumPy array (a torch tensor's CPU memory as is), or the
    Arrow array given."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if hasattr(values, "detach"):  # torch tensor: a NumPy view of its CPU memory
        values = values.detach().cpu().numpy()
    v = np.asarray(values)
    if v.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {v.shape}")
    if v.dtype != bool and first_bool(values) is not None:  # np.asarray([True, 2]): [1, 2]
        raise InputError(f"{name} must hold ids or numbers, got a bool among them")
    return v


def _arrow(values, name: str) -> pa.Array:
    v = _values(values, name)
    if isinstance(v, (pa.Array, pa.ChunkedArray)):
        return v
    try:
        return pa.array(v)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{name}: values of dtype {v.dtype} are not ids, weights or "
                         f"numbers of one type ({reason})") from None


@dataclass
class Exported:
    """A homogeneous graph as arrays in ascending original-id order.

    ``src``/``dst`` int64 (E,) node positions; ``weight`` float32 (E,) or None; ``ids``
    original ids (int64 ndarray or list of str) (N,); ``columns`` node columns by name
    (features float32 (N, F), labels int64 (N,), masks bool (N,)); ``undirected``: the
    edge set stores both directions of every edge.
    """

    num_nodes: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    ids: Any
    columns: dict[str, np.ndarray]
    undirected: bool
    #: ``src`` and ``dst`` as the rows of one (2, E) array (PyG's ``edge_index``).
    edge_index: np.ndarray | None = None


def export_arrays(graph: Graph, *, edge_set: str | None = None,
                  max_edges: int | None = DEFAULT_MAX_EDGES, what: str = "export",
                  columns: bool = True) -> Exported:
    """Read ``graph`` into memory for ``what`` (named in errors); refuses more than
    ``max_edges`` edges (None = no limit) and graphs with several entity types."""
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"{what} needs a graph with one entity type; {graph.path} has "
                            f"{', '.join(graph.entity_types)}")
    es = graph.edge_set(edge_set)
    _check_max_edges(graph, es, max_edges, what)
    n = graph.num_nodes()
    ids = graph.node_ids()
    if isinstance(ids, np.ndarray):
        order = None if np.all(ids[1:] > ids[:-1]) else np.argsort(ids, kind="stable")
    else:
        order = pc.sort_indices(ids).to_numpy()
        if np.array_equal(order, np.arange(n)):
            order = None
    rank = None
    if order is not None:
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        ids = ids[order] if isinstance(ids, np.ndarray) else ids.take(pa.array(order))
    edge_index = np.empty((2, es.num_edges), np.int64)  # PyG's layout: no stack later
    src, dst = edge_index
    weight = np.empty(es.num_edges, np.float32) if es.has_weight else None
    pos = 0
    for s, d, _, w in graph.iter_edges(es.name):
        k = len(s)
        src[pos:pos + k] = s if rank is None else rank[s]
        dst[pos:pos + k] = d if rank is None else rank[d]
        if weight is not None:
            weight[pos:pos + k] = w
        pos += k
    cols = {}
    if columns:
        for col in graph.entity_type().columns:
            if col.kind == "features":  # the mapped blocks put in place: one copy
                cols[col.name] = _rows_in_order(graph.mapped_features(col.name), rank)
                continue
            v = graph.node_column(col.name)
            cols[col.name] = _owned(v if order is None else v[order])
    ids = _owned(ids) if isinstance(ids, np.ndarray) else ids.to_pylist()
    return Exported(n, src, dst, weight, ids, cols, es.undirected, edge_index)


def _check_max_edges(graph: Graph, es, max_edges, what: str) -> None:
    """Refuse, in one line, a ``max_edges`` that is not None or a non-negative integer (a
    string raised a TypeError; -1 refused every graph for having too many edges), and an
    edge set of more edges."""
    if max_edges is None:
        return
    check_count("max_edges", max_edges, minimum=0)
    if es.num_edges > max_edges:
        gib = es.num_edges * 16 / 2**30
        raise GraphsysError(f"{what}: {graph.path} has {es.num_edges:,} edges, more than "
                            f"max_edges={max_edges:,} (the edge list alone needs {gib:.1f} "
                            f"GiB); pass a larger max_edges to allow it")


def _rows_in_order(rows, rank: np.ndarray | None) -> np.ndarray:
    """A features column (an array or :class:`PartitionedRows` of mapped row blocks, in
    internal-id order) as a new float32 array whose row ``rank[i]`` is internal row ``i``
    (the same order when ``rank`` is None)."""
    blocks = getattr(rows, "blocks", [rows])
    out = np.empty(rows.shape, np.float32)
    start = 0
    for block in blocks:
        k = len(block)
        out[slice(start, start + k) if rank is None else rank[start:start + k]] = block
        start += k
    return out


def _owned(a: np.ndarray) -> np.ndarray:
    """``a``, copied if it is a read-only view (of a mapped file): exported tensors are the
    caller's to modify."""
    return a if a.flags.writeable else a.copy()


def ingest_typed(nodes: list[tuple[str, int, dict[str, Any]]],
                 edges: list[tuple[str, str, str, Any, Any, Any]], out: str | Path, *,
                 what: str, metadata: dict[str, Any], options: dict[str, Any]) -> Graph:
    """Ingest a typed graph held in memory into ``out`` and open it.

    ``nodes``: ``(entity_type, num_nodes, columns)`` per type (nodes ``0..num_nodes-1``);
    ``edges``: ``(src_type, relation, dst_type, src, dst, weight)`` per relation, ids
    type-local (an id outside its type's ``0..num_nodes-1`` is refused), ``weight`` float
    (E,) or None. When some relations have weights and others none, the others get weight
    1.0 (unweighted, as PyG's and DGL's layers read a missing weight), listed in the
    metadata's ``filled``. Relation names must be distinct (graphsys names each relation
    once); ``what`` names the caller in errors.
    """
    from graphsys.storage.format import RelationType

    if not edges:
        raise InputError(f"{what}: the graph has no edge types")
    sizes = {t: int(n) for t, n, _ in nodes}
    rels, srcs, dsts, codes, weights = [], [], [], [], []
    seen: dict[str, tuple] = {}
    for k, (s_t, name, d_t, src, dst, w) in enumerate(edges):
        if name in seen:
            raise InputError(f"{what}: relation name {name!r} is used by edge types "
                             f"{seen[name]} and {(s_t, name, d_t)}; graphsys names each "
                             f"relation once")
        seen[name] = (s_t, name, d_t)
        rels.append(RelationType(name, s_t, d_t))
        srcs.append(np.asarray(_arrow(src, "src")).astype(np.int64, copy=False))
        dsts.append(np.asarray(_arrow(dst, "dst")).astype(np.int64, copy=False))
        if len(srcs[-1]) != len(dsts[-1]):
            raise InputError(f"{what}: edge type {seen[name]} has {len(srcs[-1])} sources "
                             f"and {len(dsts[-1])} destinations")
        for role, ids, t in (("source", srcs[-1], s_t), ("destination", dsts[-1], d_t)):
            _check_typed_ids(what, seen[name], role, ids, t, sizes)
        codes.append(np.full(len(srcs[-1]), k, np.int32))
        # as given (float64 at most): the ingest refuses what float32 cannot hold
        weights.append(None if w is None else np.asarray(_arrow(w, "weight"), np.float64))
    cols = {"src": pa.array(np.concatenate(srcs)), "dst": pa.array(np.concatenate(dsts)),
            "rel": pa.array([r.name for r in rels]).take(pa.array(np.concatenate(codes)))}
    weighted = any(w is not None for w in weights)
    if weighted:
        filled = [str(seen[r.name]) for r, w in zip(rels, weights) if w is None]
        if filled:
            metadata = {**metadata, "filled": [f"{et}.weight=1.0" for et in filled]}
        cols["weight"] = pa.array(np.concatenate(
            [np.ones(len(s), np.float64) if w is None else w for s, w in zip(srcs, weights)]))
    opts = ingest_options(options)
    opts.relation_types = rels
    opts.metadata = {**metadata, **opts.metadata}
    ingest_sources([EdgeSource(table=pa.table(cols), src_col="src", dst_col="dst", rel_col="rel",
                               weight_col="weight" if weighted else None)], out, opts,
                   nodes=[NodeSource(node_table(n, c), t) for t, n, c in nodes])
    return open_graph(out)


def _check_typed_ids(what: str, edge_type: tuple, role: str, ids: np.ndarray, entity_type: str,
                     sizes: dict[str, int]) -> None:
    """InputError unless every id of ``ids`` is a node of ``entity_type`` (``0..n-1``)."""
    if entity_type not in sizes:
        raise InputError(f"{what}: edge type {edge_type} names node type {entity_type!r}, "
                         f"which has no nodes")
    n = sizes[entity_type]
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= n):
        raise InputError(f"{what}: edge type {edge_type} has {role} ids "
                         f"{int(ids.min())}..{int(ids.max())}, outside 0..{n - 1} "
                         f"({entity_type!r} has {n} nodes)")


@dataclass
class TypedExport:
    """A typed graph as arrays: per entity type ``(num_nodes, ids, columns)`` in ascending
    original-id order (``ids`` int64 ndarray, or None for string ids), per relation type
    ``(lhs, name, rhs, src, dst, weight)`` with ``src``/``dst`` int64 positions in those
    orders and ``weight`` float32 or None."""

    nodes: dict[str, tuple[int, np.ndarray | None, dict[str, np.ndarray]]]
    edges: list[tuple[str, str, str, np.ndarray, np.ndarray, np.ndarray | None]]


def export_typed(graph: Graph, *, edge_set: str | None, max_edges: int | None,
                 what: str) -> TypedExport:
    """Read a (typed) graph into memory for ``what`` (named in errors); refuses more than
    ``max_edges`` edges (None = no limit)."""
    es = graph.edge_set(edge_set)
    _check_max_edges(graph, es, max_edges, what)
    nodes, rank = {}, {}
    for t in graph.entity_types:
        n = graph.num_nodes(t)
        ids = graph.node_ids(t)
        order = (np.argsort(ids, kind="stable") if isinstance(ids, np.ndarray)
                 else pc.sort_indices(ids).to_numpy())
        rank[t] = np.empty(n, np.int64)
        rank[t][order] = np.arange(n, dtype=np.int64)
        cols = {name: _owned(graph.node_column(name, t)[order])
                for name in graph.node_columns(t)}
        nodes[t] = (n, _owned(ids[order]) if isinstance(ids, np.ndarray) else None, cols)
    toff = graph.type_offsets
    parts: dict[int, list] = {}
    for s, d, rel, w in graph.iter_edges(es.name):
        rel = np.zeros(len(s), np.int64) if rel is None else rel
        for k in np.unique(rel):
            sel = rel == k
            parts.setdefault(int(k), []).append((s[sel], d[sel], None if w is None else w[sel]))
    edges = []
    for k, r in enumerate(graph.relation_types):
        chunks = parts.get(k, [])
        s = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, np.int64)
        d = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros(0, np.int64)
        w = None
        if es.has_weight:
            w = np.concatenate([c[2] for c in chunks]) if chunks else np.zeros(0, np.float32)
        edges.append((r.lhs, r.name, r.rhs, rank[r.lhs][s - toff[r.lhs]],
                      rank[r.rhs][d - toff[r.rhs]], w))
    return TypedExport(nodes, edges)

