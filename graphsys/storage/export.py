"""Write a stored edge set back as an edge list with original ids (Parquet or TSV)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphsys.errors import GraphsysError
from graphsys.outputs import check_output
from graphsys.storage.atomic import atomic_path
from graphsys.storage.format import DEFAULT_RELATION
from graphsys.storage.graph import Graph
from graphsys.storage.ingest_inputs import EdgeSource


def export_edges(graph: Graph, out: str | Path, edge_set: str | None = None, *,
                 overwrite: bool = False, nodes_out: str | Path | None = None) -> int:
    """Write an edge set back as an edge list with original ids: Parquet, TSV or CSV.

    Written one record batch at a time, into a temporary file renamed into place when
    complete. Columns ``src``, ``dst`` (original ids), then ``rel`` (the relation's name:
    where there are several, or one not named ``default``) and ``weight`` when stored, then
    the edge set's edge columns (``timestamp``, ...). An undirected edge set (stored as two
    directed edges) is written with each edge once. A graph of several entity types also
    gets ``src_type`` and ``dst_type`` (each endpoint's entity type), since ids may repeat
    across types. Text files
    start with a plain header line (``src<TAB>dst...``, never quoted) that ingest's header
    rule recognises, so an export ingests back to the same edges; TSV writes fields raw and
    refuses an id or relation holding a tab, newline or double quote, and a source id that
    starts with a comment character (``#tag``: the line would be read as a comment), CSV
    quotes such fields. An edge list holds no node without an edge (isolated, as
    :func:`~graphsys.storage.changes.delete_nodes` leaves them) and no node column:
    ``nodes_out`` writes them, and the edges ingested with that node table
    (``ingest(out, DIR, nodes=nodes_out)``, ``graphsys ingest OUT --nodes NODES``) give back
    the same graph. ``graphsys export`` runs this.

    Parameters
    ----------
    graph : Graph
        The graph.
    out : str or Path
        The file to write: ``.parquet``, ``.tsv``, ``.csv`` (text optionally ``.gz``).
    edge_set : str, optional
        The edge set (default: the only one, or ``default``/``train``).
    overwrite : bool, default False
        Replace an existing ``out`` (and ``nodes_out``).
    nodes_out : str or Path, optional
        Also write the node table (``.parquet``): column ``id`` (every node's original id,
        in internal order) and every node column, as ingest's ``nodes`` reads it. A graph
        of one node type.

    Returns
    -------
    int
        The number of rows written.

    Raises
    ------
    GraphsysError
        An unknown file suffix, or an existing ``out`` without ``overwrite``; a
        ``nodes_out`` not ``.parquet``, or of a graph of several node types.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq, graphsys
    >>> from graphsys.storage.export import export_edges
    >>> d = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([10, 20, 30], [20, 30, 10], d + "/g", partitions=2)
    >>> export_edges(g, d + "/edges.parquet")
    3
    >>> sorted(pq.read_table(d + "/edges.parquet").to_pylist(), key=lambda r: r["src"])
    [{'src': 10, 'dst': 20}, {'src': 20, 'dst': 30}, {'src': 30, 'dst': 10}]
    """
    out = Path(out)
    name = out.name.lower()
    if name.endswith(".parquet"):
        kind = "parquet"
    elif name.endswith((".tsv", ".tsv.gz", ".txt", ".txt.gz")):
        kind = "tsv"
    elif name.endswith((".csv", ".csv.gz")):
        kind = "csv"
    else:
        raise GraphsysError(f"{out}: output must end in .parquet, .tsv, .csv (or .tsv.gz, "
                            f".csv.gz)")
    check_output(out, overwrite=overwrite, name="out")
    if nodes_out is not None:
        nodes_out = _check_nodes_out(graph, out, Path(nodes_out), overwrite)
    es = graph.edge_set(edge_set)
    rels = graph.relation_types
    ids = {t: graph.node_ids(t) for t in graph.entity_types}
    toff = graph.type_offsets
    rel_names = pa.array([r.name for r in rels], pa.large_string())
    # one relation is stored with no rel column: written all the same unless named default
    with_rel = es.has_rel or any(r.name != DEFAULT_RELATION for r in rels)
    # several entity types: ids may repeat across types, so each endpoint's type is written
    side_types = ({side: pa.array([getattr(r, side) for r in rels], pa.large_string())
                   for side in ("lhs", "rhs")} if len(graph.entity_types) > 1 else None)
    rows = 0
    with atomic_path(out, overwrite=overwrite) as tmp:
        writer = None
        sink = pa.output_stream(str(tmp), compression="gzip" if name.endswith(".gz") else None)
        try:
            extra = zip(*(graph.edge_column(c.name, es.name) for c in es.columns))
            for (s, d, rel, w), values in zip(graph.iter_edges(es.name),
                                              extra if es.columns else itertools.repeat(())):
                rel_idx = rel if rel is not None else np.zeros(len(s), np.int32)
                if es.undirected:
                    keep = s <= d
                    s, d, rel_idx = s[keep], d[keep], rel_idx[keep]
                    w = w[keep] if w is not None else None
                    values = tuple(v[keep] for v in values)
                cols = {"src": _original(ids, rels, toff, rel_idx, s, "lhs"),
                        "dst": _original(ids, rels, toff, rel_idx, d, "rhs")}
                if with_rel:
                    cols["rel"] = rel_names.take(pa.array(rel_idx))
                if w is not None:
                    cols["weight"] = pa.array(w)
                for c, v in zip(es.columns, values):
                    cols[c.name] = pa.array(v)
                if side_types is not None:
                    cols["src_type"] = side_types["lhs"].take(pa.array(rel_idx))
                    cols["dst_type"] = side_types["rhs"].take(pa.array(rel_idx))
                if kind == "tsv" and not pa.types.is_integer(cols["src"].type):
                    _check_not_comment(cols["src"], out)
                batch = pa.RecordBatch.from_pydict(cols)
                if writer is None:
                    writer = _writer(sink, batch.schema, kind)
                try:
                    writer.write_batch(batch)
                except pa.ArrowInvalid as exc:  # TSV cannot hold a tab, newline or quote
                    raise GraphsysError(f"{out}: cannot write as TSV "
                                        f"({str(exc).splitlines()[0][:200]}); export to "
                                        f".csv or .parquet instead") from None
                rows += batch.num_rows
            if writer is None:  # no edge: the header, and schema, of the columns rows have
                end = (pa.large_string() if any(not isinstance(v, np.ndarray)
                                                for v in ids.values()) else pa.int64())
                writer = _writer(sink, pa.schema(
                    [("src", end), ("dst", end)]
                    + [("rel", pa.large_string())] * with_rel
                    + [("weight", pa.float32())] * es.has_weight
                    + [(c.name, pa.from_numpy_dtype(np.dtype(c.dtype))) for c in es.columns]
                    + [(f"{side}_type", pa.large_string()) for side in ("src", "dst")
                       if side_types is not None]), kind)
            writer.close()
        finally:
            sink.close()
    if nodes_out is not None:
        from graphsys.storage.subgraph import node_table  # numba: only when asked

        with atomic_path(nodes_out, overwrite=overwrite) as tmp:
            pq.write_table(node_table(graph), tmp)
    return rows


def _check_nodes_out(graph: Graph, out: Path, nodes_out: Path, overwrite: bool) -> Path:
    """Refuse, in one line, a ``nodes_out`` that is not Parquet, is ``out``, exists (without
    ``overwrite``), is in no directory or belongs to a graph of several node types."""
    if not nodes_out.name.lower().endswith(".parquet"):
        raise GraphsysError(f"{nodes_out}: the node table is written as Parquet (name it "
                            f"FILE.parquet)")
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"{graph.path} has node types {', '.join(graph.entity_types)}: "
                            f"nodes_out writes the node table of a graph with one")
    if nodes_out.resolve() == out.resolve():
        raise GraphsysError(f"{out}: the edges and nodes_out name one file")
    check_output(nodes_out, overwrite=overwrite, name="nodes_out")
    if not nodes_out.parent.is_dir():  # before the edges are written
        raise GraphsysError(f"{nodes_out}: cannot write in {nodes_out.parent} (no such "
                            f"directory)")
    return nodes_out


def _check_not_comment(src: pa.Array, out: Path) -> None:
    """Refuse a TSV line that would start with a comment character (a source id such as
    ``#tag``): ingest reads such a line as a comment (CSV quotes the id)."""
    chars = EdgeSource.comment
    starts = pc.match_substring_regex(src, "^[" + re.escape(chars) + "]")
    if pc.any(starts).as_py():
        first = src.filter(starts)[0].as_py()
        raise GraphsysError(f"{out}: cannot write as TSV (source id {first!r} starts with "
                            f"one of {chars!r}, which ingest reads as a comment line); export "
                            f"to .csv or .parquet instead")


def _writer(sink, schema: pa.Schema, kind: str):
    """A Parquet or text writer of ``schema`` on ``sink``. Text: the header line is written
    here, unquoted (Arrow's CSV writer quotes the names it writes), then rows without one."""
    if kind == "parquet":
        return pq.ParquetWriter(sink, schema)
    delimiter = "\t" if kind == "tsv" else ","
    sink.write((delimiter.join(schema.names) + "\n").encode())
    return pacsv.CSVWriter(sink, schema, write_options=pacsv.WriteOptions(
        include_header=False, delimiter=delimiter,
        quoting_style="none" if kind == "tsv" else "needed"))


def _original(ids: dict, rels, toff: dict[str, int], rel_idx: np.ndarray, glob: np.ndarray,
              side: str):
    """Original ids of global ids ``glob``, whose entity type is the ``side`` of each row's
    relation. The column's type is the same in every batch: int64 when every entity type
    has integer ids, else strings (integers as their decimal text), so the batches of one
    export share a schema whatever types each one holds."""
    as_text = any(not isinstance(v, np.ndarray) for v in ids.values())
    types = np.array([getattr(r, side) for r in rels])
    row_types = types[rel_idx]
    uniq = np.unique(row_types)
    if len(uniq) == 1 and (not as_text or not isinstance(ids[str(uniq[0])], np.ndarray)):
        t = str(uniq[0])
        local = glob - toff[t]
        vals = ids[t]
        return (pa.array(vals[local]) if isinstance(vals, np.ndarray) else
                vals.take(pa.array(local)).cast(pa.large_string()))
    if not as_text:  # integer ids of several types in one batch
        out_int = np.empty(len(glob), np.int64)
        for t in uniq:
            m = row_types == t
            out_int[m] = ids[str(t)][glob[m] - toff[str(t)]]
        return pa.array(out_int)
    out = np.empty(len(glob), dtype=object)
    for t in uniq:
        m = row_types == t
        local = glob[m] - toff[str(t)]
        vals = ids[str(t)]
        out[m] = (vals[local].astype(str) if isinstance(vals, np.ndarray)
                  else np.asarray(vals.take(pa.array(local)).to_pylist(), dtype=object))
    return pa.array(out, pa.large_string())
