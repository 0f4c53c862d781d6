"""Edge files into a graph directory: :func:`ingest`, the Python face of ``graphsys ingest``.

The command line and this function are one code path: the command maps its flags onto
these keyword parameters and prints the report. Underneath, the passes of
:func:`graphsys.storage.ingest.ingest_sources` read the files (the layer to use for inputs this
function has no keyword for: several sources, in-memory tables, several node tables).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from graphsys.errors import GraphsysError, InputError, ParameterError, check_count
from graphsys.memory import lifetime_peak_rss
from graphsys.storage.format import DEFAULT_EDGE_SET, INDEX_KINDS, RelationType
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.ingest import (
    EdgeSource,
    IngestOptions,
    IngestReport,
    NodeSource,
    ingest_sources,
)
from graphsys.storage.ingest_inputs import check_memory_limit
from graphsys.storage.location import not_an_input
from graphsys.units import parse_size

__all__ = ["ingest", "index_kinds", "read_node_table"]


def ingest(inputs: str | Path | Sequence[str | Path], out: str | Path, *,
           partitions: int = 1, partitioner: str = "hash", seed: int = 0,
           format: str = "auto", src_col: str | int | None = None,
           dst_col: str | int | None = None, rel_col: str | int | None = None,
           weight_col: str | int | None = None,
           edge_columns: Sequence[str] | dict[str, str | int] = (),
           relation: str | None = None,
           delimiter: str | None = None, header: bool | None = None, comment: str = "#%",
           edge_set: str = DEFAULT_EDGE_SET, nodes: str | Path | pa.Table | None = None,
           undirected: bool = False, dedupe: bool = False, drop_self_loops: bool = False,
           memory_limit: int | str = "2GB", on_bad_line: str = "error",
           index: str | Sequence[str] = (), append: bool = False, join: bool | str = True,
           progress: bool = False,
           relation_types: Sequence[str | tuple[str, str, str]] | None = None,
           return_report: bool = False) -> Graph | tuple[Graph, IngestReport]:
    """Ingest edge list files into a partitioned graph directory and open it.

    The files are read in three streaming passes (read and validate, route edges to
    buckets, sort and write each bucket) whose edge buffers stay within
    ``memory_limit``; nodes are split into ``partitions`` partitions and edges into the
    ``partitions x partitions`` buckets of PyTorch-BigGraph's layout [1]_. The directory
    is built beside ``out`` and renamed into place only when complete, so a failed ingest
    leaves nothing at ``out``.

    Parameters
    ----------
    inputs : str, Path or sequence of them
        Edge list files: TSV/CSV text (``.gz`` read directly), Parquet or Arrow IPC. One
        edge per row.
    out : str or Path
        The graph directory to create (it must not exist), or with ``append`` the existing
        graph to add the edges to.
    partitions : int, default 1
        Number of node partitions ``P``. Each is a unit an engine loads at a time.
    partitioner : str, default "hash"
        How nodes are assigned to partitions: a registered partitioner such as ``hash``,
        ``range`` or ``fennel`` (streaming, edge-cut minimising [2]_).
    seed : int, default 0
        Seed of the partitioner, an integer in ``[-2**63, 2**64)`` taken modulo ``2**64``
        (seed -1 is seed ``2**64 - 1``; the manifest records the seed in ``[0, 2**64)``).
    format : str, default "auto"
        Input format: ``auto`` (by file name, else tsv) or a registered format (``tsv``,
        ``csv``, ``parquet``, ``arrow``, ...). ``jodie``: JODIE's interaction files
        (Wikipedia, Reddit, MOOC, LastFM), read together as one bipartite temporal graph
        with the edge columns ``timestamp``, ``state_label`` and ``feature_0``...
        (:mod:`graphsys.storage.jodie`; the column keywords must then be unset).
    src_col, dst_col : str or int, optional
        Source and destination columns: a header name or a 0-based index (default: the
        columns named ``src``/``dst``, else the first two).
    rel_col : str or int, optional
        Relation column (knowledge graphs): each value names a relation type.
    weight_col : str or int, optional
        Edge weight column (float).
    edge_columns : sequence of str or dict, default ()
        Numeric input columns to keep beside the edges (e.g. ``["timestamp", "rating"]``),
        stored in every bucket file row for row with its edges and typed from the input
        (integers as int64; float32 and float64 as they are; a text column as int64 when
        every value is an integer, else float64); read back with
        :meth:`~graphsys.storage.graph.Graph.edge_column`. A dict maps each stored name to
        its input column (a name or a 0-based index). With ``append``, the edge columns of
        the graph's edge sets.
    relation : str, optional
        Relation name given to every edge when there is no ``rel_col``.
    delimiter : str, optional
        Text delimiter (default: sniffed among tab, comma and spaces).
    header : bool, optional
        Whether text files start with a header line; None decides from the first lines.
    comment : str, default "#%"
        Characters that start a comment line in text files, skipped wherever it is: ``#``
        (SNAP) and ``%`` (MatrixMarket); ``""`` reads every line as data (ids such as
        ``#tag``). Comment lines after the first data line are counted in a warning.
    edge_set : str, default "default"
        Name of the edge set the edges form.
    nodes : str, Path or pyarrow.Table, optional
        A node table (Parquet/Arrow file, or a table) with column ``id`` and feature
        (fixed-size float lists), label (integer) or mask (bool) columns.
    undirected : bool, default False
        Store every edge in both directions.
    dedupe : bool, default False
        Drop duplicate ``(src, dst, rel)`` edges, keeping the first.
    drop_self_loops : bool, default False
        Drop edges from a node to itself.
    memory_limit : int or str, default "2GB"
        Budget for the edge buffers: bytes, or a size such as ``"512MiB"``; at least
        64KiB, and below 16MiB (whose smallest buffers overrun it) a
        :class:`~graphsys.storage.ingest_inputs.SmallBudgetWarning` says so.
    on_bad_line : {"error", "skip"}, default "error"
        What a malformed line does: stop the ingest naming file and line, or be skipped
        and counted.
    index : str or sequence of str, default ()
        Adjacency indexes to build afterwards, among ``csr``, ``csc`` and ``push``
        (``"csr,csc"`` or ``("csr", "csc")``): CSR/CSC then map instead of being built.
    append : bool, default False
        Add the inputs to the existing graph ``out`` as the new edge set ``edge_set``:
        ids not yet in the graph become new nodes appended to its partitions, existing
        nodes keep their ids (``partitions``, ``partitioner`` and ``seed`` are the graph's
        own).
    join : bool or str, default True
        With ``append``: the view the new edge set joins
        (:func:`~graphsys.storage.append.append_edges`): True, the default edge set's, so
        engines read the old and new edges together unless told an edge set; an edge set
        name, that one's; False, none.
    progress : bool, default False
        Show progress bars on stderr.
    relation_types : sequence of str or tuple, optional
        Typed relations, each ``"name:lhs:rhs"`` or ``(name, lhs, rhs)``: an edge whose
        relation (``rel_col`` or ``relation``) is ``name`` joins a node of entity type
        ``lhs`` to one of type ``rhs``, and ids are resolved within their type (a user and
        an item may share an id). Default: one entity type, ``node``, for every relation.
        What ``export`` writes of a typed graph (``rel``, ``src_type``, ``dst_type``)
        ingests back to the same graph: without this, the relation types are read from
        its ``src_type`` and ``dst_type`` columns; a declaration they contradict is
        refused.
    return_report : bool, default False
        Also return the :class:`~graphsys.storage.ingest.IngestReport` (counts, seconds
        per pass, peak memory): ``(graph, report)``.

    Returns
    -------
    Graph
        The ingested graph, opened; with ``return_report`` (as numpy's ``return_counts``),
        ``(graph, report)``.

    Raises
    ------
    InputError
        A file that is missing or malformed (naming file and line).
    ParameterError
        A parameter value that cannot be used (naming the parameter).

    See Also
    --------
    graphsys.from_numpy, graphsys.from_arrow : Edges already in memory.
    graphsys.open_graph : Open a graph directory built before.

    References
    ----------
    .. [1] A. Lerer, L. Wu, J. Shen, T. Lacroix, L. Wehrstedt, A. Bose and A. Peysakhovich,
       "PyTorch-BigGraph: A Large-scale Graph Embedding System", SysML 2019.
    .. [2] C. Tsourakakis, C. Gkantsidis, B. Radunovic and M. Vojnovic, "FENNEL: Streaming
       Graph Partitioning for Massive Scale Graphs", WSDM 2014.

    Examples
    --------
    >>> import tempfile, pathlib, graphsys
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "edges.tsv").write_text("a\\tb\\nb\\tc\\nc\\ta\\nc\\td\\n")
    >>> g = graphsys.ingest(d / "edges.tsv", d / "g", partitions=2)
    >>> g.num_nodes(), g.num_edges(), g.num_partitions
    (4, 4, 2)
    >>> g.to_original(g.to_internal("c")).tolist()
    ['c']

    Undirected, with the CSR index built in the same call:

    >>> g = graphsys.ingest(d / "edges.tsv", d / "u", undirected=True, index="csr")
    >>> g.num_edges(), list(g.manifest.indexes["default"])
    (8, ['csr'])
    """
    kinds = index_kinds(index)
    partitions = check_count("partitions", partitions)
    try:
        limit = parse_size(memory_limit, field="memory_limit")
    except GraphsysError:
        raise ParameterError("memory_limit", f"must be a positive size of at most 8 EiB such "
                                             f"as 2GB, 512MiB or a byte count, got "
                                             f"{memory_limit!r}") from None
    check_memory_limit(limit)
    paths = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    metadata = {}
    if format == "jodie":
        if append:
            raise ParameterError("format", "'jodie' ingests a new graph (its item ids are "
                                           "offset by the files' largest user id); ingest "
                                           "all the files together instead of appending")
        if comment != "#%":
            raise ParameterError("comment", "does not apply to 'jodie' files (a header line, "
                                            "then one interaction per line)")
        from graphsys.storage.jodie import jodie_source

        source, metadata["jodie"] = jodie_source(
            [Path(p) for p in paths], edge_set, src_col=src_col, dst_col=dst_col,
            rel_col=rel_col, weight_col=weight_col, edge_columns=edge_columns,
            relation=relation, delimiter=delimiter, header=header)
    else:
        source = EdgeSource(
            paths=[Path(p) for p in paths], edge_set=edge_set, format=format,
            src_col=src_col, dst_col=dst_col, rel_col=rel_col, weight_col=weight_col,
            relation=relation, delimiter=delimiter, header=header, comment=comment,
            edge_columns=edge_columns)
    source.column_roles()  # a bad name is refused before any input is read
    opts = IngestOptions(
        partitions=partitions, partitioner=partitioner, seed=seed, undirected=undirected,
        dedupe=dedupe, drop_self_loops=drop_self_loops, memory_limit=limit,
        on_bad_line=on_bad_line, progress=progress,
        relation_types=_relation_types(relation_types) if relation_types else None,
        metadata=metadata)
    if append and relation_types:
        raise ParameterError("relation_types", "cannot be given when appending to a graph "
                                               "(its relation types are its own)")
    if format != "jodie":
        written, where = _written_types(source.paths, format, rel_col, relation)
        has = open_graph(out).relation_types if append and written else opts.relation_types
        declared = {r.name: (r.lhs, r.rhs) for r in has or ()}
        if written and has is None:   # an export of a typed graph
            opts.relation_types = [RelationType(n, *written[n]) for n in sorted(written)]
        for name, pair in written.items():              # else ids of two types merged
            if declared and declared.get(name) != pair:
                raise InputError(f"relation {name!r} joins entity types {pair} in the file's "
                                 f"src_type and dst_type columns; "
                                 f"{'the graph' if append else 'relation_types'} declares "
                                 f"{declared.get(name)}", path=where)
    if not append and join is not True:
        raise ParameterError("join", "applies when appending to a graph (append=True)")
    if append and nodes is not None:
        raise ParameterError("nodes", "cannot be given when appending to a graph")
    node_sources = []
    if nodes is not None:
        table = nodes if isinstance(nodes, pa.Table) else read_node_table(Path(nodes))
        node_sources.append(NodeSource(table))
    if append:
        from graphsys.storage.append import append_edges

        result = append_edges(out, [source], opts, join=join)
    else:
        result = ingest_sources([source], out, opts, node_sources)
    graph = open_graph(out)
    if kinds:
        _index_ingested(graph, kinds, limit, progress, result)
    return (graph, result) if return_report else graph


def _index_ingested(graph: Graph, kinds: tuple[str, ...], limit: int, progress: bool,
                    result: IngestReport) -> None:
    """Build the ``kinds`` indexes of a graph just ingested, timed in ``result``; a budget
    below the build's least is refused in one line that says the graph is written and
    names the command that indexes it."""
    from graphsys.storage.adjacency_index import build_command, build_index, min_build_memory

    if limit < (need := min_build_memory(graph.num_nodes(), kinds)):
        raise GraphsysError(f"{graph.location} is ingested, but not indexed: indexing its "
                            f"{graph.num_nodes():,} nodes needs a memory_limit of at least "
                            f"{need:,} bytes, got {limit:,}; index it with "
                            f"{build_command(graph, kinds)}")
    t0 = time.perf_counter()
    build_index(graph, kinds, memory_limit=limit, progress=progress)
    result.seconds["index"] = round(time.perf_counter() - t0, 3)
    result.peak_rss_bytes = lifetime_peak_rss()


def _written_types(paths: list[Path], fmt: str, rel_col, relation: str | None
                   ) -> tuple[dict[str, tuple[str, str]], Path | None]:
    """``{relation: (lhs, rhs)}`` read from the ``src_type`` / ``dst_type`` columns that
    :func:`~graphsys.storage.export.export_edges` writes of a typed graph (each endpoint's
    entity type; ids repeat across types), and a file holding them; ``{}`` for files
    without them. A relation written with two type pairs is refused."""
    import pyarrow.parquet as pq

    from graphsys.storage.format import DEFAULT_RELATION
    from graphsys.storage.formats import PARQUET, resolve_format

    found: dict[str, tuple[str, str]] = {}
    where = None
    for path in paths:
        if not path.is_file():    # a FIFO would block here; the ingest refuses it
            continue
        try:
            _, reader = resolve_format(path, fmt)
            if reader is PARQUET:
                names = pq.ParquetFile(str(path)).schema_arrow.names
            elif reader is None or not reader.text:
                continue
            else:
                with pa.input_stream(str(path), compression="detect") as f:
                    head = f.read(1 << 16).split(b"\n", 1)[0]
                line = head.decode("utf-8", "replace").rstrip("\r")
                delim = "," if "," in line and "\t" not in line else "\t"
                names = line.split(delim)
        except (OSError, pa.ArrowException, ValueError):
            continue      # the ingest's own reading says what is wrong with the file
        if not {"src_type", "dst_type"} <= set(names):
            continue
        rel = names[rel_col] if isinstance(rel_col, int) and 0 <= rel_col < len(names) else rel_col
        cols = ["src_type", "dst_type"] + ([rel] if rel in names else [])
        try:
            _types_of(path, None if reader is PARQUET else delim, cols,
                      relation or DEFAULT_RELATION, found)
        except pa.ArrowException as exc:  # ids of two types must not merge: refused
            raise InputError(f"cannot read its src_type and dst_type columns ("
                             f"{' '.join(str(exc).split())[:200]})", path=path) from None
        where = path
    return found, where


def _types_of(path: Path, delim: str | None, cols: list[str], relation: str,
              found: dict[str, tuple[str, str]]) -> None:
    """Add the distinct ``(rel, src_type, dst_type)`` of one file (Parquet, or text split at
    ``delim``) to ``found``, a batch at a time, refusing a relation written with two type
    pairs."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    batches = (pq.ParquetFile(str(path)).iter_batches(columns=cols) if delim is None
               else pacsv.open_csv(str(path), parse_options=pacsv.ParseOptions(
                   delimiter=delim), convert_options=pacsv.ConvertOptions(
                   include_columns=cols, column_types={c: pa.string() for c in cols})))
    for batch in batches:
        t = pa.Table.from_batches([batch]).select(cols)
        if len(cols) == 2:
            t = t.append_column("rel", pa.array([relation] * len(t)))
        for row in t.group_by(t.column_names).aggregate([]).to_pylist():
            name, pair = str(row[t.column_names[2]]), (row["src_type"], row["dst_type"])
            if found.setdefault(name, pair) != pair:
                raise InputError(f"relation {name!r} is written with entity types "
                                 f"{found[name]} and {pair} (src_type, dst_type)", path=path)


def _relation_types(specs) -> list[RelationType]:
    """``RelationType`` of each ``"name:lhs:rhs"`` string or ``(name, lhs, rhs)`` tuple."""
    out = []
    for spec in specs:
        parts = spec.split(":") if isinstance(spec, str) else list(spec)
        if len(parts) != 3 or not all(isinstance(x, str) and x for x in parts):
            raise ParameterError("relation_types", f"each is NAME:LHS_TYPE:RHS_TYPE (e.g. "
                                                   f"rates:user:item), got {spec!r}")
        out.append(RelationType(*parts))
    if len({r.name for r in out}) != len(out):
        raise ParameterError("relation_types", "names a relation twice")
    return out


def index_kinds(index: str | Sequence[str]) -> tuple[str, ...]:
    """The index kinds named by ``index``: a comma-separated string or a sequence of
    ``csr``/``csc``/``push``; a :class:`ParameterError` for anything else."""
    kinds = index.split(",") if isinstance(index, str) else list(index)
    kinds = tuple(str(k).strip() for k in kinds if str(k).strip())
    if any(k not in INDEX_KINDS for k in kinds):
        raise ParameterError("index", f"must name index kinds among {', '.join(INDEX_KINDS)}, "
                                      f"got {index!r}")
    return kinds


def read_node_table(path: Path) -> pa.Table:
    """The node table in the Parquet (``.parquet``) or Arrow IPC file ``path``."""
    import pyarrow.ipc as paipc
    import pyarrow.parquet as pq

    if not path.is_file():
        raise InputError(f"node table: {not_an_input(path)}", path=path)
    try:
        if path.suffix == ".parquet":
            return pq.read_table(str(path))
        return paipc.open_file(pa.memory_map(str(path))).read_all()
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read node table ({exc})", path=path) from None
