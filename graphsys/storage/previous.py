"""What changed since a previous result: the stored result matched to the graph a run
reads (:func:`read_previous`, by the provenance :func:`provenance` records in a result's
schema metadata) and the edges appended, deleted and re-weighted since
(:func:`read_change`), read from the change sets (:mod:`graphsys.storage.changes`).

Every engine's runs from a previous result (``init=``) read these: BSP's
(:mod:`graphsys.bsp.incremental`, :mod:`graphsys.bsp.incremental_changes`) and mining's
triangle counts (:mod:`graphsys.mining.incremental`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from graphsys.errors import FormatError, GraphsysError, ParameterError, check_real
from graphsys.storage import node_reads
from graphsys.storage.csr import edges_digest
from graphsys.storage.edge_changes import apply, global_keys, last_weights, load_bucket
from graphsys.storage.index_merge import moved_ids

#: The schema metadata key of a result table that holds its run's provenance.
RESULT_METADATA = "graphsys.result"
#: The version of the ``order`` column a BSP result writes (recorded in the provenance as
#: ``order``): a later run reads the column only when it knows its version
ORDER_VERSION = 1
#: The version of the checksum of a result's columns (:func:`columns_digest`) that a result
#: records (its provenance's ``checksum``): a result without one, or of another version, is
#: not started from
CHECKSUM_VERSION = 1
#: The largest share of the edges read that may have changed (appended, deleted or
#: re-weighted pairs) for a repair; above it a run from scratch
REPAIR_MAX_FRACTION = 0.05
#: Largest result file read as a previous result (bytes): a Parquet of node ids and values
#: is about 16 bytes per node, so 2**36 covers four billion nodes.
MAX_RESULT_BYTES = 1 << 36
#: Algorithms whose runs start from a previous result after deletions and weight updates
#: (WCC, BFS, SSSP repair it: :mod:`graphsys.bsp.incremental_changes`; PageRank and PPR
#: push the change's residual or start warm: :mod:`graphsys.bsp.incremental_pagerank`;
#: k-core updates its core numbers: :mod:`graphsys.bsp.incremental_cores`; triangle counts
#: are updated by the changed pairs: :mod:`graphsys.mining.incremental`); the others
#: refuse a result from before one
REPAIRS_CHANGES = ("wcc", "bfs", "sssp", "pagerank", "ppr", "kcore", "triangles")
#: Parameters that choose what a run may write beside its answer, not the answer (PageRank's
#: ``store_index``): not recorded in a result's provenance, not compared by :func:`same_run`
UNRECORDED_PARAMETERS = ("store_index",)


@dataclass(frozen=True)
class Previous:
    """A stored result matched to the graph a run reads (:func:`read_previous`).

    Attributes
    ----------
    values : numpy.ndarray
        float64 (N,) by the graph's internal id: PREV's value where it lists the node, NaN
        where it does not (a new node).
    known : numpy.ndarray
        bool (N,): the nodes PREV lists.
    new_edge_sets : tuple of str
        The edge sets the run reads that PREV did not: the new edges.
    source : str
        Where PREV came from (its path, or ``"a table"``), for messages.
    supersteps : int or None
        The supersteps PREV's run took (None where it did not record them): what a run
        started from it, to the same or a looser tolerance, expects at most.
    tol : float or None
        The tolerance PREV's run stopped at (None where it did not record one).
    converged : bool or None
        Whether PREV's run converged (None where it did not record it).
    residual : float or None
        PREV's bound on the L1 change one more power-iteration step would make
        (:attr:`RunStats.residual <graphsys.bsp.stats.RunStats.residual>`; None where it
        did not record one).
    change_sets : tuple of str
        The change sets (deletions, weight updates) among ``new_edge_sets``.
    order : numpy.ndarray or None
        int64 (N,) by internal id: each listed node's position in the order PREV kept
        (its ``order`` column, :attr:`Result.order <graphsys.bsp.result.Result.order>`,
        of the version :data:`ORDER_VERSION`), -1 for a node it does not list; None where
        it kept none.
    """

    values: np.ndarray
    known: np.ndarray
    new_edge_sets: tuple[str, ...]
    source: str
    supersteps: int | None = None
    tol: float | None = None
    converged: bool | None = None
    residual: float | None = None
    change_sets: tuple[str, ...] = ()
    order: np.ndarray | None = None

    def check_fixed_point(self, algorithm: str) -> None:
        """A one-line ParameterError unless PREV's run converged: what a warm start that repairs
        PREV from the new edges alone (WCC, BFS, SSSP) needs."""
        if self.converged is True:
            return
        why = ("stopped at max_iters before converging (its last iterate was kept)"
               if self.converged is False else "does not record whether it converged "
               "(written before results recorded it)")
        raise ParameterError("init", f"{self.source}: its {algorithm} run {why}; "
                                     f"{algorithm} repairs converged results only: run "
                                     f"from scratch instead (without a previous result)")


def provenance(algorithm: str, graph, edge_set, source=None,
               params: dict[str, Any] | None = None,
               supersteps: int | None = None, converged: bool | None = None,
               residual: float | None = None) -> dict[str, Any]:
    """What a result records of its run (``Result.provenance``): ``algorithm``,
    ``source`` (an original id, or None), ``params`` (JSON values), ``edge_sets`` (each
    edge set read and the digest of its buckets), ``until`` and ``since`` (a time view's
    bounds, or None), ``num_nodes``, ``partition_sizes``, ``supersteps`` (the run's count, or
    None), ``converged`` (whether the run converged, or None) and ``residual`` (its
    :attr:`RunStats.residual <graphsys.bsp.stats.RunStats.residual>`, or None)."""
    es = graph.edge_set(edge_set)
    stored = getattr(graph, "stored", graph)  # a time view's buckets are the stored ones
    source = source.item() if isinstance(source, np.generic) else source
    return {"algorithm": algorithm, "source": source,
            "params": {k: v for k, v in (params or {}).items()
                       if (isinstance(v, (bool, int, float, str)) or v is None)
                       and k not in UNRECORDED_PARAMETERS},
            "edge_sets": {name: edges_digest(stored.manifest, name) for name in es.parts},
            "until": getattr(graph, "until", None), "since": getattr(graph, "since", None),
            "num_nodes": graph.num_nodes(),
            "partition_sizes": [int(x) for x in graph.partition_sizes()],
            "supersteps": None if supersteps is None else int(supersteps),
            "converged": None if converged is None else bool(converged),
            "residual": None if residual is None else float(residual)}


def _table(init, footer: bool = False) -> tuple[pa.Table | pa.Schema, str]:
    """The previous result as a table: a Parquet file (a regular file, size checked), a
    table, or a result (an object with a ``to_table`` holding its provenance:
    :class:`~graphsys.bsp.result.Result`, :class:`~graphsys.mining.triangle.TriangleStats`);
    ``footer``: of a file its schema alone (its footer read, not its pages)."""
    if isinstance(init, pa.Table):
        return init, "a table"
    if callable(getattr(init, "to_table", None)):
        try:
            return init.to_table(), "a result"
        except GraphsysError as exc:  # its Graph's files replaced (an append), no table
            raise GraphsysError(f"init: this result gives no table ({exc}); one whose graph "
                                f"changed on disk since it was computed starts a run from "
                                f"its to_table(), taken before the change") from None
    if not isinstance(init, (str, os.PathLike)):
        raise ParameterError("init", f"must be a result file (.parquet), a table or a Result, "
                                     f"got {type(init).__name__}")
    path = Path(init)
    if not path.is_file() or path.is_symlink():
        raise ParameterError("init", f"{path}: not a regular file")
    if path.stat().st_size > MAX_RESULT_BYTES:
        raise FormatError(f"{path}: {path.stat().st_size:,} bytes, larger than a result "
                          f"file can be ({MAX_RESULT_BYTES:,})")
    try:
        # pages written with a CRC (graphsys run --out) are checked: a garbled value is
        # refused rather than repaired from
        table = pq.read_schema(path) if footer else pq.read_table(
            path, page_checksum_verification=True)
        getattr(table, "schema", table).names  # noqa: B018 - a garbled name may not be UTF-8
        return table, str(path)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        detail = " ".join(str(exc).split())[:300]  # Arrow's text may span lines
        raise FormatError(f"{path}: not a readable Parquet result ({detail})") from None


def result_provenance(init, footer: bool = False) -> tuple[pa.Table, dict[str, Any], str]:
    """(table, provenance, where) of a previous result; a one-line error when it holds none
    (not written by graphsys, or written before results recorded it). ``footer``: of a
    file, only its footer is read (the table is then its schema)."""
    table, where = _table(init, footer)
    raw = (getattr(table, "schema", table).metadata or {}).get(RESULT_METADATA.encode())
    if raw is None:
        raise FormatError(f"{where}: no graphsys run recorded in it (not a result of "
                          f"graphsys's run, or one written before results recorded it)")
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the stack
        raise FormatError(f"{where}: its {RESULT_METADATA} metadata is not JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("edge_sets"), dict):
        raise FormatError(f"{where}: its {RESULT_METADATA} metadata has no edge sets")
    if not isinstance(meta.get("params", {}), dict):
        raise FormatError(f"{where}: its {RESULT_METADATA} metadata's params are not an "
                          f"object (name: value)")
    return table, meta, where


def read_previous(graph, init, algorithm: str, edge_set=None, source=None,
                  column: str | tuple = "value") -> Previous:
    """Match a previous result of ``algorithm`` to the edges a run reads (see the module
    docstring).

    Parameters
    ----------
    graph : Graph
        The graph the run reads.
    init : str, Path, pyarrow.Table or Result
        The previous result.
    algorithm : str
        The run's algorithm (``pagerank``, ``wcc``, ...).
    edge_set : str or sequence of str, optional
        The edge set(s) the run reads (default: the default view).
    source : int or str, optional
        The run's source node (BFS, SSSP, personalized PageRank).
    column : str or tuple of str, default "value"
        The column of the values: ``value`` (float, a BSP result: its only other columns
        are ``node`` and an optional integer ``order``, read into :attr:`Previous.order`
        where the provenance records its version), or other (numeric) columns beside
        ``node`` (mining's ``triangles`` and ``degree``: then :attr:`Previous.values` is
        float64 (N, k), one column each).

    Returns
    -------
    Previous

    Raises
    ------
    ParameterError
        ``init`` is not a file, table or result.
    FormatError
        An unreadable file, no recorded run, values that are not one float per node.
    GraphsysError
        A result of another algorithm or source, of edges the run does not read or that
        changed since, or of a node the graph does not have (each naming it).
    """
    table, meta, where = result_provenance(init)
    es, changed = _match(graph, meta, where, algorithm, edge_set, source)
    _check_columns(table, where, column)
    ids = table.column("node").combine_chunks()
    internal = _appended_layout(graph, ids, meta.get("partition_sizes"))
    if internal is None:
        try:
            internal = graph.to_internal(ids.to_numpy(zero_copy_only=False)
                                         if pa.types.is_integer(ids.type) else ids.to_pylist())
        except GraphsysError as exc:
            raise GraphsysError(f"{where}: {exc}") from None
    n = graph.num_nodes()
    known = np.zeros(n, np.bool_)
    known[internal] = True
    if int(known.sum()) != len(internal):
        raise FormatError(f"{where}: a node is listed twice")
    listed = meta.get("num_nodes")
    if isinstance(listed, int) and not isinstance(listed, bool) and listed != len(internal):
        # an unlisted old node would be read as a new one: a wrong answer, not a start
        raise FormatError(f"{where}: lists {len(internal):,} nodes, the graph it was computed "
                          f"on has {listed:,} (a truncated or edited result); start from "
                          f"scratch (without a previous result)")
    _check_checksum(table, meta, where, algorithm, internal)
    got = [np.asarray(table.column(c).to_numpy(), np.float64)
           for c in ([column] if isinstance(column, str) else column)]
    values = np.full(n if isinstance(column, str) else (n, len(column)), np.nan)
    values[internal] = got[0] if isinstance(column, str) else np.column_stack(got)
    order = None
    if column == "value" and "order" in table.column_names and meta.get("order") == ORDER_VERSION:
        order = np.full(n, -1, np.int64)
        order[internal] = table.column("order").to_numpy().astype(np.int64)
    new = tuple(m for m in es.parts if m not in meta["edge_sets"])
    steps = meta.get("supersteps")
    steps = steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 \
        else None
    converged = meta.get("converged")
    return Previous(values, known, new, where, steps,
                    _recorded(meta.get("params", {}).get("tol"), positive=True),
                    converged if isinstance(converged, bool) else None,
                    _recorded(meta.get("residual")), tuple(changed), order)


def _match(graph, meta: dict, where: str, algorithm: str, edge_set, source):
    """The checks of :func:`read_previous` that a result's provenance ``meta`` answers
    alone (its algorithm, source, window and edge sets); returns the edge set the run
    reads and the change sets among its new members."""
    if meta.get("algorithm") != algorithm:
        raise GraphsysError(f"{where} holds a {meta.get('algorithm')} result, not {algorithm}")
    if meta.get("source") != (source.item() if isinstance(source, np.generic) else source):
        raise GraphsysError(f"{where} was computed from source {meta.get('source')!r}, this "
                            f"run starts from {source!r}")
    for bound in ("until", "since"):
        if meta.get(bound) != getattr(graph, bound, None):
            raise GraphsysError(f"{where} was computed on the graph {bound} "
                                f"{meta.get(bound)!r}, this run reads it {bound} "
                                f"{getattr(graph, bound, None)!r}")
    es = graph.edge_set(edge_set)
    stored = getattr(graph, "stored", graph)
    for name, digest in meta["edge_sets"].items():
        if name not in es.parts:
            raise GraphsysError(f"{where} was computed on edge set {name!r}, which this run "
                                f"does not read (it reads {', '.join(es.parts)})")
        if edges_digest(stored.manifest, name) != digest:
            raise GraphsysError(f"edge set {name!r} changed since {where} was computed (its "
                                f"buckets differ): start from scratch")
    changed = [m for m in es.parts if m not in meta["edge_sets"]
               and stored.manifest.edge_sets[m].change]
    if changed and algorithm not in REPAIRS_CHANGES:
        # a start from new edges alone would read deletions as insertions
        raise GraphsysError(f"edge set {changed[0]!r} deletes or updates edges since {where} "
                            f"was computed: a {algorithm} run starts only from a result on "
                            f"the same edges plus appended ones; start from scratch "
                            f"(without a previous result)")
    return es, changed


def starts_from(graph, init, algorithm: str, params: dict[str, Any], edge_set=None,
                source=None) -> bool | str:
    """Whether a run of ``algorithm`` with ``params`` starts from the result file ``init``
    (what ``graphsys run --init auto`` asks of its ``--out`` file), from its provenance
    alone (the file's footer; the values are read once, by the run): True for the same
    run (:func:`same_run`) on an earlier version of the edges it reads, converged; False
    for anything unreadable, that does not match, or that records no checksum of its values
    (:func:`tagged`: a run from scratch then writes one); why not, where it matches but a
    repair after deletions and weight updates (WCC, BFS, SSSP, k-core) would run from
    scratch for the share of the edges changed (:data:`REPAIR_MAX_FRACTION`, counted from
    the manifest): a run from scratch then does not read the values at all."""
    try:
        _, meta, where = result_provenance(init, footer=True)
        es, changed = _match(graph, meta, where, algorithm, edge_set, source)
    except GraphsysError:
        return False
    if not _same_params(meta, algorithm, params) or meta.get("converged") is not True or not (
            isinstance(meta.get("checksum"), dict)
            and meta["checksum"].get("version") == CHECKSUM_VERSION):
        return False
    if changed and algorithm in REPAIRS_CHANGES and algorithm not in ("pagerank", "ppr"):
        sets = getattr(graph, "stored", graph).manifest.edge_sets
        share = sum(sets[m].num_edges for m in es.parts if m not in meta["edge_sets"]) / max(
            es.num_edges, 1)
        if share > REPAIR_MAX_FRACTION:
            return (f"changed edges {share:.2%} of those read, above the repair's "
                    f"{REPAIR_MAX_FRACTION:.0%}")
    return True


def _check_columns(table: pa.Table, where: str, column: str | tuple) -> None:
    """A one-line FormatError unless ``table`` holds ``node`` and the value columns: a float
    ``value`` and nothing else but an integer ``order``, or the numeric columns ``column``
    beside others; each name once."""
    names = set(table.column_names)
    want = [column] if isinstance(column, str) else list(column)
    kinds = [table.schema.field(c).type for c in want if c in names] \
        if len(names) == table.num_columns else []  # a name twice: refused
    if "node" in names and len(kinds) == len(want) and (
            names - {"order"} == {"node", "value"} and pa.types.is_floating(kinds[0]) and (
                "order" not in names or pa.types.is_integer(table.schema.field("order").type))
            if column == "value" else all(pa.types.is_floating(k) or pa.types.is_integer(k)
                                          for k in kinds)):
        return
    raise FormatError(f"{where}: expected columns node and {' and '.join(want)} "
                      f"({'float' if column == 'value' else 'numeric'})"
                      f"{', and order (integer) or none' if column == 'value' else ''}, got "
                      f"{', '.join(f'{f.name} ({f.type})' for f in table.schema)}")


def columns_digest(table: pa.Table, provenance: dict) -> str:
    """sha256 over ``provenance`` (its JSON, ``checksum`` aside) and every column of
    ``table`` in the order of their names: its name, kind, null count and values (numbers
    as stored, a string column as its lengths and bytes), streamed from Arrow's buffers
    chunk by chunk; the same for any chunking, column order and either string width. What a
    result records of itself (its provenance's ``checksum``, by :func:`tagged`) and a run
    started from it checks (:func:`read_previous`)."""
    h = hashlib.sha256(json.dumps({k: v for k, v in provenance.items() if k != "checksum"},
                                  sort_keys=True).encode())
    for i in sorted(range(table.num_columns), key=lambda i: table.schema.names[i]):
        field, col = table.schema.field(i), table.column(i)
        kind, width = field.type, 0
        if pa.types.is_fixed_size_list(kind):
            kind, width = kind.value_type, kind.list_size
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        tag = "str" if text else np.dtype(kind.to_pandas_dtype()).str if numeric else str(kind)
        h.update(f"{field.name}\0{tag}\0{width}\0{col.null_count}\0".encode())
        lengths = hashlib.sha256()
        for chunk in col.chunks:
            chunk = chunk.flatten() if width else chunk
            if text:
                ends = np.frombuffer(chunk.buffers()[1], np.int32 if pa.types.is_string(kind)
                                     else np.int64)[chunk.offset:chunk.offset + len(chunk) + 1]
                lengths.update(np.diff(ends).astype(np.int64))
                h.update(memoryview(chunk.buffers()[2] or b"")[ends[0]:ends[-1]])
            elif numeric:
                h.update(np.ascontiguousarray(chunk.to_numpy(zero_copy_only=False)))
        h.update(lengths.digest() if text else b"")
    return h.hexdigest()


def _check_checksum(table: pa.Table, meta: dict, where: str, algorithm: str,
                    internal: np.ndarray) -> None:
    """A one-line FormatError unless ``table``'s rows and provenance ``meta`` are those its
    checksum was taken of (:func:`columns_digest`): rows in another order are compared in the
    graph's order (``internal``: each row's internal id), the order a result writes."""
    again = f"run {algorithm} from scratch (without a previous result) to write a new one"
    recorded = meta.get("checksum")
    if not isinstance(recorded, dict) or "version" not in recorded:
        raise FormatError(f"{where}: records no checksum of its values (written before "
                          f"results recorded one), so an edit to them cannot be told; {again}")
    if recorded["version"] != CHECKSUM_VERSION:
        raise FormatError(f"{where}: records a checksum of version {recorded['version']!r}, "
                          f"this release reads version {CHECKSUM_VERSION}; {again}")
    if len(internal) > 1 and not np.all(internal[1:] > internal[:-1]):
        table = table.take(np.argsort(internal, kind="stable"))
    if recorded.get("sha256") != columns_digest(table, meta):
        raise FormatError(f"{where}: its node ids, values or {RESULT_METADATA} metadata "
                          f"differ from those it recorded a checksum of (edited or damaged "
                          f"since it was written); {again}")


def _recorded(value: Any, positive: bool = False) -> float | None:
    """``value`` as a float when it is a finite number (:func:`~graphsys.errors.check_real`:
    an int beyond float's range is not) at least 0 (above 0 with ``positive``), else
    None."""
    try:
        return check_real("value", value, low=0, low_open=positive)
    except ParameterError:
        return None


def _appended_layout(graph, ids: pa.Array, old: Any) -> np.ndarray | None:
    """The internal ids of a previous result's rows when the graph is the one it was
    computed on, or that graph grown by appends (which keep every old node at its partition
    and offset: :mod:`graphsys.storage.append`), checked by comparing the ids; None
    otherwise (then they are looked up one by one)."""
    now = [int(x) for x in graph.partition_sizes()]
    if (not isinstance(old, list) or len(old) != len(now) or not all(
            isinstance(x, int) and 0 <= x <= y for x, y in zip(old, now))
            or sum(old) != len(ids)):
        return None
    internal = moved_ids(tuple(old), tuple(now))
    have = node_reads.original_ids(graph, graph.entity_type(None).name)
    if isinstance(have, np.ndarray) and pa.types.is_integer(ids.type):
        same = np.array_equal(have[internal], ids.to_numpy(zero_copy_only=False))
    else:
        same = pa.array(have).take(pa.array(internal)).cast(pa.large_string()).equals(
            ids.cast(pa.large_string())) if not pa.types.is_integer(ids.type) else False
    return internal if same else None


def same_run(init, algorithm: str, params: dict[str, Any]) -> bool:
    """Whether the result ``init`` is of ``algorithm`` with the same ``params`` (what
    ``graphsys run --init auto`` requires before starting from its ``--out`` file); False
    for anything unreadable."""
    try:
        _, meta, _ = result_provenance(init, footer=True)
    except GraphsysError:
        return False
    return _same_params(meta, algorithm, params)


def _same_params(meta: dict, algorithm: str, params: dict[str, Any]) -> bool:
    """Whether the provenance ``meta`` is of ``algorithm`` with ``params`` (``tol`` aside)."""
    keep = {k: v for k, v in params.items() if isinstance(v, (bool, int, float, str))
            and k not in UNRECORDED_PARAMETERS}
    return meta.get("algorithm") == algorithm and all(
        meta.get("params", {}).get(k) == v for k, v in keep.items() if k != "tol")


@dataclass
class Change:
    """What changed between the edges a previous result read and those a run reads.

    Attributes
    ----------
    old : list of str
        The edge sets (not change sets) the previous result read.
    src, dst : numpy.ndarray
        int64 global ids of the edges appended since, as the run reads them.
    weight : numpy.ndarray or None
        float32 weights of those (None: unweighted).
    deleted, updated : numpy.ndarray
        Sorted int64 keys ``u * N + v`` of the pairs every change set (the previous
        result's too) deletes / re-weights in ``old``; ``updated_weight`` float32 the last
        weight of each.
    changed_deleted, changed_updated : numpy.ndarray
        The keys among those of the change sets since the previous result.
    pairs : int
        Pairs the change sets since the previous result list.
    before_updated, before_updated_weight : numpy.ndarray
        The same as ``updated``/``updated_weight`` over the change sets the previous
        result read: the weights in force before the change.
    before_deleted : numpy.ndarray
        The same as ``deleted`` over the change sets the previous result read.
    readded : int
        The last of ``src``/``dst`` that are not appended since but edges of ``old`` that a
        change set the previous result read lists without targeting them (appended after
        it: ``deleted`` and ``updated`` hold their pairs, so the adjacency of ``old`` read
        through them lacks these edges or gives them another weight, and they are added
        back as if appended; exact for a repair, not for a reader counting edges:
        :func:`read_edges_as_stored`).
    readded_before : int
        Those edges as the previous result read them: ``readded`` and the ones a change
        set since has deleted (an edge re-added, then deleted again).
    """

    old: list
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    deleted: np.ndarray
    updated: np.ndarray
    updated_weight: np.ndarray
    changed_deleted: np.ndarray
    changed_updated: np.ndarray
    pairs: int
    before_updated: np.ndarray
    before_updated_weight: np.ndarray
    before_deleted: np.ndarray
    readded: int
    readded_before: int


def _appended(graph, names: list, changes: list) -> tuple[np.ndarray, ...]:
    """The edges of the appended edge sets ``names`` through the change sets ``changes``
    after them: (src, dst, weight or None), global ids."""
    off = np.asarray(graph.partition_offsets(), np.int64)
    sets = graph.manifest.edge_sets
    src, dst, wts = [], [], []
    weighted = all(sets[m].has_weight for m in names)
    for m in names:
        for i, j in sorted(sets[m].buckets):
            bucket = [load_bucket(graph, c, i, j) for c in changes
                      if (i, j) in sets[c].buckets and m in sets[c].change.targets]
            for eb in graph.bucket(i, j, m).batches():
                eb = apply(eb, m, bucket)
                src.append(off[i] + np.asarray(eb.src, np.int64))
                dst.append(off[j] + np.asarray(eb.dst, np.int64))
                if weighted:
                    wts.append(np.asarray(eb.weight, np.float32))
    empty = np.zeros(0, np.int64)
    return (np.concatenate(src) if src else empty, np.concatenate(dst) if dst else empty,
            (np.concatenate(wts) if wts else np.zeros(0, np.float32)) if weighted else None)


def read_change(graph, previous, edge_set=None) -> Change | str:
    """The :class:`Change` since ``previous``; a string saying why a repair does not apply
    instead."""
    if getattr(graph, "stored", None) is not None:
        return "a time view is run from scratch"
    if graph.num_nodes() >= 1 << 31:
        return "a repair reads graphs of fewer than 2**31 nodes"
    sets = graph.manifest.edge_sets
    parts = graph.edge_set(edge_set).parts
    new = set(previous.new_edge_sets)
    old = [m for m in parts if m not in new and not sets[m].change]
    changes = [m for m in parts if sets[m].change]  # in manifest order: the order they apply
    if any(m not in sets[c].change.targets for c in changes if c in new for m in old):
        return "a change set since the previous result does not change every edge set " \
               "read before alike"
    appended = [m for m in parts if m in new and not sets[m].change]
    after = [c for c in changes if c in new]
    src, dst, weight = _appended(graph, appended, after)
    readded = _readded(graph, old, changes, new)
    if readded is not None:
        src, dst = np.concatenate([src, readded[0]]), np.concatenate([dst, readded[1]])
        weight = None if weight is None or readded[2] is None else np.concatenate(
            [weight, readded[2]])
    # (since the previous result, keys, weights or None): kept by the Graph, a view's
    # index reads them
    got = [(c in new, *global_keys(graph, c)) for c in changes]
    dels = [(since, k) for since, k, w in got if w is None]
    ups = [(since, k, w) for since, k, w in got if w is not None]
    deleted = _distinct([k for _, k in dels])
    updated, updated_weight = last_weights([k for _, k, _ in ups], [w for *_, w in ups])
    before_updated, before_weight = last_weights([k for s, k, _ in ups if not s],
                                                 [w for s, _, w in ups if not s])
    readded_counts = (0, 0) if readded is None else (len(readded[0]), readded[3])
    return Change(
        old, src, dst, weight, deleted=deleted, updated=updated,
        updated_weight=updated_weight,
        # the deletions since: all of them unless the previous result read some
        changed_deleted=(deleted if all(s for s, _ in dels)
                         else _distinct([k for s, k in dels if s])),
        changed_updated=_distinct([k for s, k, _ in ups if s]),
        pairs=sum(len(k) for s, k, _ in got if s),
        before_updated=before_updated, before_updated_weight=before_weight,
        before_deleted=_distinct([k for s, k in dels if not s]),
        readded=readded_counts[0], readded_before=readded_counts[1])


def _distinct(arrays: list) -> np.ndarray:
    """The sorted distinct keys of ``arrays``, int64, read-only (by a sort: numpy's
    ``unique`` hashes first, slower on these)."""
    keys = np.sort(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])[:len(keys)]]
    keys.flags.writeable = False  # maybe shared by two fields of a Change
    return keys


def _readded(graph, old: list, changes: list, new: set) -> tuple | None:
    """The edges of the edge sets ``old`` appended after a change set the previous result
    read (so not among its targets) whose pairs that change set lists (an edge re-added
    after its deletion, or of a pair re-weighted before): (src, dst, weight or None), read
    through the change sets that target them, and how many the previous result read
    (through the change sets it read: a change set since may have deleted some); None
    where no such change set precedes an edge set of ``old``. The adjacency of ``old`` is
    read through the change pair by pair, so these edges are read from it deleted or
    re-weighted as their pair is; they join the appended edges, which restores them."""
    sets, n = graph.manifest.edge_sets, graph.num_nodes()
    found = [], [], []
    before = 0
    read = [c for c in changes if c not in new]
    for m in old:
        missed = [c for c in read if m not in sets[c].change.targets]
        if not missed:
            continue
        keys = np.unique(np.concatenate([global_keys(graph, c)[0] for c in missed]))
        s, d, w = _appended(graph, [m], changes)
        hit = np.isin(s * n + d, keys)
        for into, x in zip(found, (s, d, w)):
            into.append(None if x is None else x[hit])
        s, d, _ = _appended(graph, [m], read)
        before += int(np.count_nonzero(np.isin(s * n + d, keys)))
    if not found[0]:
        return None
    w = None if any(x is None for x in found[2]) else np.concatenate(found[2])
    return np.concatenate(found[0]), np.concatenate(found[1]), w, before


def read_edges_as_stored(graph, previous, edge_set=None) -> Change | str:
    """:func:`read_change` for a reader of the adjacency before the change edge by edge (a
    push counting parallel edges, core numbers, triangle counts): a string where edges were
    re-added after a change set the previous result read (``Change.readded_before``: the
    adjacency before the change lacks them, or gives them their pair's weight)."""
    change = read_change(graph, previous, edge_set)
    if not isinstance(change, str) and change.readded_before:
        return (f"{change.readded_before:,} edges appended after a change set the previous "
                f"result read list its pairs")
    return change


def tagged(table: pa.Table, provenance: dict | None) -> pa.Table:
    """``table`` with ``provenance`` (JSON) and the checksum of both
    (:func:`columns_digest`, as ``checksum``: its version and ``sha256``) in its schema
    metadata, so that a Parquet file of it can start a later run (``init=``), which refuses
    rows or provenance edited since; unchanged without a provenance."""
    if not provenance:
        return table
    checksum = {"version": CHECKSUM_VERSION, "sha256": columns_digest(table, provenance)}
    return table.replace_schema_metadata({RESULT_METADATA: json.dumps(
        {**provenance, "checksum": checksum}, sort_keys=True)})
