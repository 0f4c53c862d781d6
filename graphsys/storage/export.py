"""Write a stored edge set back as an edge list with original ids (Parquet or TSV)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphsys.errors import GraphsysError
from graphsys.outputs import check_output
from graphsys.storage.atomic import atomic_path
from graphsys.storage.graph import Graph


def export_edges(graph: Graph, out: str | Path, edge_set: str | None = None, *,
                 overwrite: bool = False) -> int:
    """Write ``edge_set`` to ``out`` (``.parquet``, ``.tsv`` or ``.tsv.gz``), one record batch
    at a time: columns ``src``, ``dst`` (original ids), then ``rel`` (relation name) and
    ``weight`` if stored. An undirected edge set (stored as two directed edges) is written
    with each edge once. Returns the number of rows written."""
    out = Path(out)
    name = out.name.lower()
    if name.endswith(".parquet"):
        kind = "parquet"
    elif name.endswith((".tsv", ".tsv.gz", ".txt", ".txt.gz")):
        kind = "tsv"
    else:
        raise GraphsysError(f"{out}: output must end in .parquet, .tsv or .tsv.gz")
    check_output(out, overwrite=overwrite, name="out")
    es = graph.edge_set(edge_set)
    rels = graph.relation_types
    ids = {t: graph.node_ids(t) for t in graph.entity_types}
    toff = graph.type_offsets
    rel_names = pa.array([r.name for r in rels], pa.large_string())
    rows = 0
    with atomic_path(out, overwrite=overwrite) as tmp:
        writer = None
        sink = pa.output_stream(str(tmp), compression="gzip" if name.endswith(".gz") else None)
        try:
            for s, d, rel, w in graph.iter_edges(es.name):
                rel_idx = rel if rel is not None else np.zeros(len(s), np.int32)
                if es.undirected:
                    keep = s <= d
                    s, d, rel_idx = s[keep], d[keep], rel_idx[keep]
                    w = w[keep] if w is not None else None
                cols = {"src": _original(ids, rels, toff, rel_idx, s, "lhs"),
                        "dst": _original(ids, rels, toff, rel_idx, d, "rhs")}
                if es.has_rel:
                    cols["rel"] = rel_names.take(pa.array(rel_idx))
                if w is not None:
                    cols["weight"] = pa.array(w)
                batch = pa.RecordBatch.from_pydict(cols)
                if writer is None:
                    writer = (pq.ParquetWriter(sink, batch.schema) if kind == "parquet" else
                              pacsv.CSVWriter(sink, batch.schema, write_options=pacsv.WriteOptions(
                                  include_header=True, delimiter="\t", quoting_style="none")))
                try:
                    writer.write_batch(batch)
                except pa.ArrowInvalid as exc:  # TSV cannot hold a tab, newline or quote
                    raise GraphsysError(f"{out}: cannot write as TSV "
                                        f"({str(exc).splitlines()[0][:200]}); export to "
                                        f".parquet instead") from None
                rows += batch.num_rows
            if writer is None:  # empty edge set: header only
                schema = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
                writer = (pq.ParquetWriter(sink, schema) if kind == "parquet" else
                          pacsv.CSVWriter(sink, schema, write_options=pacsv.WriteOptions(
                              delimiter="\t", quoting_style="none")))
            writer.close()
        finally:
            sink.close()
    return rows


def _original(ids: dict, rels, toff: dict[str, int], rel_idx: np.ndarray, glob: np.ndarray,
              side: str):
    """Original ids of global ids ``glob``, whose entity type is the ``side`` of each row's
    relation."""
    types = np.array([getattr(r, side) for r in rels])
    row_types = types[rel_idx]
    uniq = np.unique(row_types)
    if len(uniq) == 1:
        t = str(uniq[0])
        local = glob - toff[t]
        return pa.array(ids[t][local]) if isinstance(ids[t], np.ndarray) else ids[t].take(
            pa.array(local))
    # mixed entity types in one batch: original ids rendered as strings
    out = np.empty(len(glob), dtype=object)
    for t in uniq:
        m = row_types == t
        local = glob[m] - toff[str(t)]
        vals = ids[str(t)]
        out[m] = (vals[local].astype(str) if isinstance(vals, np.ndarray)
                  else np.asarray(vals.take(pa.array(local)).to_pylist(), dtype=object))
    return pa.array(out, pa.large_string())
