"""Append a new edge set, with new entities, to an existing graph directory.

The existing node mapping is extended, never changed: every node keeps its partition and
local offset, and each new node is appended to the end of a partition, round-robin over the
partitions, the smallest partition first (ties: the lower index), in sorted id order. The
new edges are read, validated and bucketed by the same passes as
:func:`~graphsys.storage.ingest.ingest_sources`. The new graph is built in a staging
directory beside the old one (unchanged files hard-linked, the manifest written last) and
swapped with it in one atomic rename (:func:`~graphsys.storage.atomic.replacement_directory`).
The old edge sets' indexes stay, read renumbered (:mod:`graphsys.storage.index_merge`); a
``push`` index is dropped when nodes were added. docs/format.md, "Appending edges with new
entities", gives the rules (relations, ids, the default view, node columns).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as paipc

from graphsys import openmp
from graphsys.errors import GraphsysError, InputError, ParameterError
from graphsys.memory import lifetime_peak_rss
from graphsys.storage import edge_views, index_merge
from graphsys.storage.atomic import link_unchanged, replacement_directory, sync_files
from graphsys.storage.format import (
    EntityType,
    IndexInfo,
    Manifest,
    index_file,
    node_column_file,
    node_file,
    read_manifest,
    write_manifest,
)
from graphsys.storage.graph import open_graph
from graphsys.storage.ids import IdIndex
from graphsys.storage.ingest import edge_set_names, write_edge_sets
from graphsys.storage.ingest_inputs import (
    EdgeSource,
    IngestOptions,
    IngestReport,
    check_memory_limit,
    warn_small_budget,
)
from graphsys.storage.ingest_job import MAX_PARTITION_NODES, IngestJob
from graphsys.storage.lock import writer_lock
from graphsys.storage.node_files import file_entry, write_string_column


def append_edges(graph: str | Path, edges: Sequence[EdgeSource],
                 options: IngestOptions | None = None, *,
                 join: bool | str = True) -> IngestReport:
    """Add new edge sets, and the new nodes they name, to an existing graph directory.

    Ids not yet in the graph become new nodes appended to its partitions; existing nodes keep
    their ids (see the module docstring). :func:`graphsys.ingest` with ``append`` runs this
    for edge files.

    Parameters
    ----------
    graph : str or Path
        The graph directory.
    edges : sequence of EdgeSource
        The new edges; their edge set names must be new.
    options : IngestOptions, optional
        The partition count, partitioner and relation types are the graph's own;
        ``undirected``, ``dedupe``, ``drop_self_loops``, ``on_bad_line``, ``memory_limit``
        and ``progress`` apply to the new edges.
    join : bool or str, default True
        The view the new edge sets join: True, the graph's default edge set's (what engines
        read when not told an edge set: :mod:`graphsys.storage.edge_views`); an edge set
        name, that edge set's (one not itself appended); False, none (the new edges are
        read only by name).

    Returns
    -------
    IngestReport
        The report of the new edge sets, with ``nodes`` the nodes added per entity type.

    Raises
    ------
    GraphsysError
        An existing edge set name, a relation the graph does not have, a graph whose
        node columns are stored in files of their own, or new edges that cannot join the
        view (another shape, or no default edge set to join).

    Examples
    --------
    >>> import tempfile, pathlib, graphsys
    >>> from graphsys.storage.append import append_edges
    >>> from graphsys.storage.ingest_inputs import EdgeSource
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> g = graphsys.from_numpy([1, 2], [2, 3], d / "g")
    >>> _ = (d / "day2.tsv").write_text("3\\t4\\n4\\t1\\n")
    >>> report = append_edges(d / "g", [EdgeSource([d / "day2.tsv"], edge_set="day2")])
    >>> report.nodes, report.edges
    ({'node': 1}, {'day2': 2})
    >>> g = graphsys.open_graph(d / "g")
    >>> g.edge_set().name, g.num_edges(), g.num_edges("default")  # the default view grew
    ('default,day2', 4, 2)
    """
    openmp.apply_wait_policy()
    t0 = time.perf_counter()
    check_memory_limit((options or IngestOptions()).memory_limit)
    warn_small_budget((options or IngestOptions()).memory_limit)
    # through a symbolic link: the real directory is swapped and the link keeps naming it
    graph = Path(graph).resolve()
    m = read_manifest(graph)
    names = edge_set_names(edges)
    for name in sorted(names):
        if name in m.edge_sets:
            raise GraphsysError(f"{graph}: edge set {name!r} already exists (choose another "
                                f"edge set name)")
    for et in m.entity_types.values():
        mapped = [c.name for c in et.columns if c.dtype and c.kind != "string"]
        if mapped:
            raise GraphsysError(f"{graph}: entity type {et.name!r} has node column "
                                f"{mapped[0]!r} in a file of its own; appending nodes to it "
                                f"is not supported")
    base = _joined(graph, m, join)
    opts = replace(options or IngestOptions(), partitions=m.num_partitions,
                   relation_types=list(m.relation_types), metadata=m.metadata)
    if opts.undirected and any(r.lhs != r.rhs for r in m.relation_types):
        raise GraphsysError("undirected needs relations whose lhs and rhs entity types are "
                            "the same")
    # one writer at a time; refused when another committed since m was read
    with writer_lock(graph, m), replacement_directory(graph) as staging:
        job = IngestJob(edges, (), opts, staging)
        job.read_all()
        _match_edge_columns(graph, m, job, names)
        old_ids = {t: _stored_ids(graph, m, t) for t in m.entity_types}
        added: dict[str, int] = {}
        entity_types = dict(m.entity_types)
        files = dict(m.files)
        job.part, job.local, job.sizes = {}, {}, {}
        for etype in job.entity_types:
            if etype not in m.entity_types:
                raise GraphsysError(f"{graph}: no entity type {etype!r}")
            new = _new_ids(job.index[etype], old_ids, etype, m.entity_types[etype].id_type)
            added[etype] = len(new)
            new_part = _extend_mapping(job, etype, old_ids[etype], new, m.entity_types[etype])
            entity_types[etype] = replace(m.entity_types[etype],
                                          partition_sizes=job.sizes[etype])
            _write_grown_partitions(graph, etype, m.entity_types[etype], new, new_part,
                                    staging, files)
            _write_grown_strings(graph, m.entity_types[etype], new_part, staging, files)
        edge_sets = dict(m.edge_sets)
        new_sets = write_edge_sets(job, sorted(names), staging, files)
        edge_sets.update({n: replace(es, appended_to=base) for n, es in new_sets.items()})
        shutil.rmtree(job.spill)
        indexes = _grown_indexes(m, files) if any(added.values()) else m.indexes
        written = [rel for rel in files if (staging / rel).exists()]
        linked, copied = link_unchanged(graph, staging, files)
        manifest = replace(
            m, entity_types=entity_types, edge_sets=edge_sets, files=files, indexes=indexes,
            max_batch_rows=max([m.max_batch_rows] + [job.batch_rows(n) for n in names]))
        if base:
            _check_joinable(manifest, base, names)
        # every data file is on disk before the manifest names it (only ours: a filesystem-
        # wide sync would wait for other processes' writes too); the linked ones already were
        sync_files(staging, written + copied, linked=linked)
        write_manifest(staging, manifest)
    return IngestReport(
        out=str(graph), nodes=added, edges={n: edge_sets[n].num_edges for n in sorted(names)},
        num_partitions=m.num_partitions, partitioner=m.partitioner,
        skipped_lines=job.skipped, input_bytes=job.input_bytes,
        seconds={"total": round(time.perf_counter() - t0, 3)},
        peak_rss_bytes=lifetime_peak_rss())


def _joined(graph: Path, m: Manifest, join: bool | str) -> str:
    """The edge set whose view the appended edge sets join (``append_edges``' ``join``),
    or "" for none."""
    if join is False:
        return ""
    if join is True:
        try:
            return edge_views.default_base(m)
        except GraphsysError:
            raise GraphsysError(f"{graph}: has edge sets {', '.join(m.edge_sets)} and no "
                                f"default one for the new edges to join; name one to join, "
                                f"or append them apart (join=False)") from None
    if not isinstance(join, str) or join not in m.edge_sets or m.edge_sets[join].appended_to:
        raise ParameterError("join", f"must be True, False or an edge set of {graph} that "
                                     f"is not itself appended, got {join!r}")
    return join


def _check_joinable(manifest: Manifest, base: str, names: set[str]) -> None:
    """GraphsysError (before anything is committed) when the new edge sets cannot be read
    with ``base`` as one edge set."""
    for name in sorted(names):
        try:
            edge_views.union(manifest, (base, name))
        except GraphsysError as exc:
            raise GraphsysError(f"{exc}: the new edges cannot join the view of {base!r} "
                                f"(append them apart: join=False)") from None


def _grown_indexes(m: Manifest, files: dict[str, dict[str, Any]]
                   ) -> dict[str, dict[str, IndexInfo]]:
    """The old edge sets' indexes once nodes were added: each records the numbering it was
    built in (``layout``) and is read renumbered; push indexes, and any that did not match
    the graph's numbering, are dropped (their files unlisted)."""
    old = index_merge.layout(m)
    out: dict[str, dict[str, IndexInfo]] = {}
    for es, kinds in m.indexes.items():
        for kind, info in kinds.items():
            keep = kind != "push" and (index_merge.grown_from(info.layout, old)
                                       if info.layout else info.num_nodes == sum(old))
            if keep:
                out.setdefault(es, {})[kind] = replace(info, layout=info.layout or old)
                continue
            for column in info.columns():
                files.pop(index_file(es, kind, column), None)
    return out


def _match_edge_columns(graph: Path, m: Manifest, job: IngestJob, names: set[str]) -> None:
    """Require the new edge sets to carry the edge columns the graph's edge sets carry (when
    those agree), by name; each is then stored in the graph's dtype (an integer input column
    may become float, a float one is refused for an int64 column)."""
    kinds = {tuple(es.columns) for es in m.edge_sets.values() if not es.change}
    if len(kinds) != 1:
        return
    want = list(next(iter(kinds)))
    for name in sorted(names):
        got = {c.name: c.dtype for c in job.edge_columns.get(name, [])}
        if sorted(got) != sorted(c.name for c in want):
            raise GraphsysError(f"{graph}: its edge sets have edge columns "
                                f"{', '.join(c.name for c in want) or 'none'}; the appended "
                                f"edges give {', '.join(got) or 'none'} (name the same "
                                f"edge columns)")
        for c in want:
            if got[c.name] != c.dtype and not (got[c.name] == "int64" or c.dtype == "float64"):
                raise GraphsysError(f"{graph}: edge column {c.name!r} is {c.dtype}; the "
                                    f"appended edges' is {got[c.name]}")
        job.edge_columns[name] = want


def _stored_ids(graph: Path, m: Manifest, etype: str) -> list[pa.Array]:
    """The ``id`` column of every node partition of ``etype``, in partition order."""
    out = []
    for p in range(m.num_partitions):
        path = graph / node_file(etype, p)
        table = paipc.open_file(pa.memory_map(str(path))).read_all()
        out.append(table.column("id").combine_chunks())
    return out


def _as_numpy_or_strings(parts: list[pa.Array], id_type: str):
    arr = pa.concat_arrays([a.cast(pa.large_string() if id_type == "string" else pa.int64())
                            for a in parts]) if parts else pa.array([], pa.int64())
    return arr.to_numpy(zero_copy_only=False) if id_type == "int64" else arr


def _new_ids(index: IdIndex, old_ids: dict[str, list[pa.Array]], etype: str,
             id_type: str) -> np.ndarray | pa.Array:
    """Ids of the new edges for ``etype`` that the graph does not have yet, sorted."""
    ids = index.ids
    if id_type == "int64" and index.is_string:
        is_int = pc.match_substring_regex(ids, r"^-?[0-9]+$")
        bad = ids.filter(pc.invert(is_int))
        raise InputError(f"id {bad[0].as_py()!r}: entity type {etype!r} has integer ids")
    if id_type == "string" and not index.is_string:
        ids = pa.array(ids).cast(pa.large_string())
    old = _as_numpy_or_strings(old_ids[etype], id_type)
    new = (np.setdiff1d(np.asarray(ids), old) if id_type == "int64"
           else ids.filter(pc.invert(pc.is_in(ids, value_set=old))))
    for other, parts in old_ids.items():
        if other == etype or not len(new):
            continue
        stored = pa.concat_arrays([a.cast(pa.large_string()) for a in parts])
        probe = pa.array(new).cast(pa.large_string())
        clash = probe.filter(pc.is_in(probe, value_set=stored))
        if len(clash):
            raise InputError(f"id {clash[0].as_py()!r} is an entity of type {other!r}; the "
                             f"new edges use it as an entity of type {etype!r}")
    return new


def _extend_mapping(job: IngestJob, etype: str, old_parts: list[pa.Array], new,
                    et: EntityType) -> np.ndarray:
    """Set ``job.index/part/local/sizes[etype]`` over the old nodes plus ``new``: old nodes
    keep (partition, offset); new ones are appended round-robin, smallest partition first.
    Returns the partition of each new node (int32, in the order of ``new``)."""
    P = len(et.partition_sizes)
    sizes = np.array(et.partition_sizes, np.int64)
    order = np.lexsort((np.arange(P), sizes))
    new_part = order[np.arange(len(new)) % P].astype(np.int32)
    new_local = np.empty(len(new), np.int64)
    grown = sizes.copy()
    for p in range(P):
        sel = np.flatnonzero(new_part == p)
        new_local[sel] = sizes[p] + np.arange(len(sel))
        grown[p] += len(sel)
    if grown.max(initial=0) > MAX_PARTITION_NODES:
        raise GraphsysError(f"entity type {etype!r}: a partition would hold "
                            f"{int(grown.max())} nodes (> 2**31-1)")
    old_part = np.repeat(np.arange(P, dtype=np.int32), sizes)
    old_local = np.concatenate([np.arange(n, dtype=np.int64) for n in sizes]) if P else \
        np.zeros(0, np.int64)
    old = _as_numpy_or_strings(old_parts, et.id_type)
    if et.id_type == "int64":
        all_ids = np.concatenate([old, np.asarray(new, np.int64)])
        by_id = np.argsort(all_ids, kind="stable")
        sorted_ids: Any = all_ids[by_id]
    else:
        all_ids = pa.concat_arrays([old, pa.array(new).cast(pa.large_string())])
        by_id = pc.sort_indices(all_ids).to_numpy()
        sorted_ids = all_ids.take(pa.array(by_id))
    job.index[etype] = IdIndex(etype, sorted_ids, None)
    job.part[etype] = np.concatenate([old_part, new_part])[by_id]
    job.local[etype] = np.concatenate([old_local, new_local])[by_id]
    job.sizes[etype] = [int(s) for s in grown]
    return new_part


def _write_grown_partitions(graph: Path, etype: str, et: EntityType, new,
                            new_part: np.ndarray, staging: Path,
                            files: dict[str, dict[str, Any]]) -> None:
    """Rewrite the node partitions of ``etype`` that gained nodes: old rows, then the new
    ids (node columns get their defaults: zeros, -1, False)."""
    for p in range(len(et.partition_sizes)):
        sel = np.flatnonzero(new_part == p)
        if not len(sel):
            continue
        rel = node_file(etype, p)
        old = paipc.open_file(pa.memory_map(str(graph / rel))).read_all()
        ids = (pa.array(np.asarray(new)[sel]) if et.id_type == "int64"
               else pa.array(new).take(pa.array(sel)))
        arrays = {"id": pa.concat_arrays([old.column("id").combine_chunks(),
                                          ids.cast(old.schema.field("id").type)])}
        for c in et.columns:
            if c.kind == "string":  # in a file of its own: _write_grown_strings
                continue
            col = old.column(c.name).combine_chunks()
            if c.kind == "features":
                extra = pa.FixedSizeListArray.from_arrays(
                    pa.array(np.zeros(len(sel) * c.dim, np.float32)), c.dim)
            elif c.kind == "label":
                extra = pa.array(np.full(len(sel), -1, np.int64))
            else:
                extra = pa.array(np.zeros(len(sel), bool))
            arrays[c.name] = pa.concat_arrays([col, extra.cast(col.type)])
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.table(arrays)
        with paipc.new_file(str(path), table.schema) as w:
            w.write_table(table, max_chunksize=max(table.num_rows, 1))
        files[rel] = file_entry(path)


def _write_grown_strings(graph: Path, et: EntityType, new_part: np.ndarray, staging: Path,
                         files: dict[str, dict[str, Any]]) -> None:
    """Rewrite the string node columns of ``et`` when it gained nodes: in the new type-local
    order (partition by partition, each partition's old rows then its new nodes), the old
    strings and ``""`` for each new node."""
    if not len(new_part):
        return
    old_bounds = np.concatenate([[0], np.cumsum(et.partition_sizes)])
    grown = np.bincount(new_part, minlength=len(et.partition_sizes))
    for c in et.columns:
        if c.kind != "string":
            continue
        rel = node_column_file(et.name, c.name)
        old = open_graph(graph).string_column(c.name, et.name)
        parts = []
        for p in range(len(et.partition_sizes)):
            parts.append(old.slice(old_bounds[p], old_bounds[p + 1] - old_bounds[p]))
            parts.append(pa.array([""] * int(grown[p]), pa.large_string()))
        write_string_column(staging / rel, c.name, pa.concat_arrays(parts))
        files[rel] = file_entry(staging / rel)
