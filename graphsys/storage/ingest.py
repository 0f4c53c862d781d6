"""Out-of-core ingest of edge lists into a partitioned graph directory.

Three streaming passes, each bounded by ``IngestOptions.memory_limit`` apart from O(N)
node arrays; an edge buffer holds at most ``memory_limit / 8`` bytes (sorting and grouping
make transient copies of it), unless the whole edge set fits:

1. **read**: parse and validate every input block (decoded on a helper thread up to a
   quarter of the budget ahead), collect the node ids of each entity type, and keep the
   parsed columns in memory up to a quarter of the budget, spilling the rest to temporary
   Arrow files (so the text is parsed once).
2. **route**: map ids to dense node indices, assign partitions, compute local offsets, add
   reverse edges (``undirected``), drop self-loops, and group the edges by bucket in a
   stable counting sort on two threads: at once in memory when the grouped columns fit half
   the budget, else a reused buffer at a time, appended to each bucket's runs on disk.
3. **merge**: per bucket, sort its rows (an LSD radix sort of the packed
   ``(src, dst[, rel])``) when they fit half the budget, else sort each run and k-way merge
   them (deduping on ``(src, dst, rel)`` if asked, keeping the first in input order), and
   write the bucket's Arrow IPC file in record batches of at most ``max_batch_rows`` rows.

Everything is written into a staging directory beside ``out``, the manifest last, and renamed
into place only when complete (:mod:`graphsys.storage.atomic`). The passes live in
:mod:`~graphsys.storage.ingest_job` (a batch's checks in
:mod:`~graphsys.storage.ingest_validate`), the external sort in
:mod:`~graphsys.storage.edge_runs`; sources, options and the report in
:mod:`~graphsys.storage.ingest_inputs`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphsys import openmp
from graphsys._version import __version__
from graphsys.errors import GraphsysError, InputError, ParameterError, check_count
from graphsys.memory import lifetime_peak_rss, trim_heap
from graphsys.progress import progress_bar
from graphsys.storage.atomic import staging_directory, sync_files
from graphsys.storage.format import (
    DEFAULT_EDGE_SET,
    DEFAULT_RELATION,
    MAX_PARTITIONS,
    SAFE_NAME,
    EdgeSet,
    Manifest,
    RelationType,
    bucket_file,
    write_manifest,
)
from graphsys.storage.ids import IdIndex
from graphsys.storage.ingest_inputs import (
    EdgeSource,
    IngestOptions,
    IngestReport,
    NodeSource,
    check_memory_limit,
    warn_small_budget,
)
from graphsys.storage.ingest_job import MAX_PARTITION_NODES, IngestJob
from graphsys.storage.node_files import write_node_files

__all__ = [
    "MAX_PARTITION_NODES", "EdgeSource", "IngestOptions", "IngestReport", "NodeSource",
    "edge_set_names", "ingest_sources", "write_edge_sets",
]


def _check_partitions(partitions: int, index: dict[str, IdIndex]) -> None:
    """Refuse more partitions than the largest entity type has nodes (empty partitions
    only cost buckets and memory)."""
    most = max((len(ix) for ix in index.values()), default=0)
    if partitions > max(most, 1):
        raise ParameterError("partitions", f"{partitions} is more than the nodes of the "
                                           f"largest entity type ({most})")


def write_edge_sets(job: IngestJob, names: Sequence[str], staging: Path,
                    files: dict[str, dict[str, Any]],
                    seconds: dict[str, float] | None = None) -> dict[str, EdgeSet]:
    """Passes 2 and 3 for the edge sets ``names`` of a job whose nodes are partitioned: write
    their bucket files under ``staging``, add them to ``files`` and return the edge sets.
    ``seconds`` (when given) gets ``route``: the seconds of pass 2, summed over edge sets."""
    opts, p = job.opts, job.opts.partitions
    edge_sets: dict[str, EdgeSet] = {}
    for name in names:
        t = time.perf_counter()
        routed = job.route(name)
        trim_heap()  # the routing scratch, freed
        if seconds is not None:
            seconds["route"] = seconds.get("route", 0.0) + time.perf_counter() - t

        def write(b: int, routed=routed, name=name) -> tuple[int, int, dict[str, Any] | None]:
            path = staging / bucket_file(name, *divmod(b, p))
            path.parent.mkdir(parents=True, exist_ok=True)
            n, entry = job.write_bucket(routed, b, name, path)  # hashed as it is written
            routed.drop(b)
            if not n:
                path.unlink()
                return b, 0, None
            return b, n, entry

        counts = {}
        with ThreadPoolExecutor(job.write_workers(routed)) as pool, progress_bar(
                total=len(routed.buckets), unit="bucket", desc=f"buckets {name}",
                disable=not opts.progress) as bar:
            for b, n, entry in pool.map(write, routed.buckets):  # in bucket order
                if n:
                    i, j = divmod(b, p)
                    counts[(i, j)] = n
                    files[bucket_file(name, i, j)] = entry
                bar.update()
        shutil.rmtree(routed.rundir)
        edge_sets[name] = EdgeSet(
            name, sum(counts.values()), counts, has_rel=job.has_rel[name],
            has_weight=job.has_weight[name], undirected=opts.undirected, dedupe=opts.dedupe,
            drop_self_loops=opts.drop_self_loops,
            skipped_lines=job.edge_set_skipped.get(name, 0),
            columns=list(job.edge_columns.get(name, [])))
    return edge_sets


def edge_set_names(edges: Sequence[EdgeSource]) -> set[str]:
    """The edge set names of ``edges``; a name the manifest's readers refuse is refused."""
    names = {e.edge_set for e in edges}
    for name in names:
        check_name("edge set", name)
    return names


def check_name(kind: str, name) -> None:
    """Refuse an edge set or entity type name that no reader of the manifest accepts
    (:data:`~graphsys.storage.format.SAFE_NAME`), before anything is written."""
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name):
        raise GraphsysError(f"invalid {kind} name {name!r} (letters, digits, _ . + = -, "
                            f"not starting with . + = -; at most 128)")


def ingest_sources(edges: Sequence[EdgeSource], out: str | Path,
                   options: IngestOptions | None = None,
                   nodes: Sequence[NodeSource] = ()) -> IngestReport:
    """Build a graph directory from edge sources (and optional node tables).

    The layer under :func:`graphsys.ingest` (which reads one set of edge files) and the
    ``from_*`` functions (which read memory): each :class:`EdgeSource` names files or an
    in-memory table of one edge set, each :class:`NodeSource` a node table, so several edge
    sets, entity types and relations can be ingested in one call. The passes are described
    in the module docstring.

    Parameters
    ----------
    edges : sequence of EdgeSource
        The edge inputs.
    out : str or Path
        The graph directory to create.
    options : IngestOptions, optional
        Partitions, partitioner, memory budget and the other options.
    nodes : sequence of NodeSource, default ()
        Node tables (node columns, and nodes without edges).

    Returns
    -------
    IngestReport
        What was built and what it cost.

    Raises
    ------
    InputError
        Bad input, naming the file and line.
    GraphsysError
        A bad option. In both cases nothing is left at ``out``.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> d = tempfile.mkdtemp()
    >>> follows = EdgeSource(table=pa.table({"src": [1, 2], "dst": [2, 3]}), edge_set="follows")
    >>> likes = EdgeSource(table=pa.table({"src": [3], "dst": [1]}), edge_set="likes")
    >>> report = ingest_sources([follows, likes], d + "/g", IngestOptions(partitions=2))
    >>> report.edges
    {'follows': 2, 'likes': 1}
    >>> graphsys.open_graph(d + "/g").edge_sets
    ['follows', 'likes']
    """
    openmp.apply_wait_policy()
    opts = options or IngestOptions()
    # True was read as one partition; max_batch_rows "x" raised a TypeError, True ran
    opts = replace(opts, partitions=check_count("partitions", opts.partitions,
                                                maximum=MAX_PARTITIONS),
                   max_batch_rows=check_count("max_batch_rows", opts.max_batch_rows))
    if opts.on_bad_line not in ("error", "skip"):
        raise ParameterError("on_bad_line", f"must be 'error' or 'skip', got "
                                            f"{opts.on_bad_line!r}")
    check_memory_limit(opts.memory_limit)
    warn_small_budget(opts.memory_limit)
    if not edges and not nodes:
        raise InputError("no input given")
    names = edge_set_names(edges)
    for t in [t for r in opts.relation_types or () for t in (r.lhs, r.rhs)] + [
            ns.entity_type for ns in nodes]:
        check_name("entity type", t)
    out = Path(out)
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    with staging_directory(out) as staging:
        job = IngestJob(edges, nodes, opts, staging)
        job.read_all()
        _check_partitions(opts.partitions, job.index)
        if opts.undirected and any(r.lhs != r.rhs for r in job.relations):
            raise ParameterError("undirected", "needs relations whose lhs and rhs entity "
                                               "types are the same")
        seconds["read"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        partitioner = job.partition()
        seconds["partition"] = time.perf_counter() - t1
        # the node files (features are the bulk of a small graph) are written on a helper
        # thread while the edges route: gathers, Arrow writes and hashing leave the GIL
        files: dict[str, dict[str, Any]] = {}
        edge_files: dict[str, dict[str, Any]] = {}
        t2 = time.perf_counter()
        with ThreadPoolExecutor(1, thread_name_prefix="graphsys-nodes") as pool:
            nodes_written = pool.submit(write_node_files, job, staging, files)
            try:
                edge_sets = write_edge_sets(job, sorted(names), staging, edge_files, seconds)
            finally:
                entity_types = nodes_written.result()
        files.update(edge_files)
        relations = job.relations
        if not edge_sets and len(entity_types) == 1:  # a node table alone: an edgeless
            (etype,) = entity_types                       # graph, as from_numpy writes one
            relations = [RelationType(DEFAULT_RELATION, etype, etype)]
            edge_sets[DEFAULT_EDGE_SET] = EdgeSet(
                DEFAULT_EDGE_SET, 0, {}, has_rel=False, has_weight=False,
                undirected=opts.undirected, dedupe=opts.dedupe,
                drop_self_loops=opts.drop_self_loops)
        seconds["route_and_merge"] = time.perf_counter() - t2
        shutil.rmtree(job.spill)
        p = opts.partitions
        manifest = Manifest(
            num_partitions=p, offset_dtype="int32",
            max_batch_rows=max((job.batch_rows(n) for n in names), default=opts.max_batch_rows),
            partitioner=partitioner, entity_types=entity_types, relation_types=relations,
            edge_sets=edge_sets, files=files, created_by=f"graphsys {__version__}",
            metadata=opts.metadata)
        # every data file is on disk before the manifest names it (only ours: a filesystem-
        # wide sync would wait for other processes' writes too)
        sync_files(staging, files)
        write_manifest(staging, manifest)
    seconds["total"] = time.perf_counter() - t0
    return IngestReport(
        out=str(out), nodes={t: e.num_nodes for t, e in entity_types.items()},
        edges={n: e.num_edges for n, e in edge_sets.items()}, num_partitions=p,
        partitioner=partitioner, skipped_lines=job.skipped, input_bytes=job.input_bytes,
        seconds={k: round(v, 3) for k, v in seconds.items()}, peak_rss_bytes=lifetime_peak_rss())
