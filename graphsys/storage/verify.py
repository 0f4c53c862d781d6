"""Full integrity check of a graph directory: hashes, schemas, counts and offset ranges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.errors import FormatError
from graphsys.storage.adjacency_index import verify_indexes
from graphsys.storage.atomic import sha256_file
from graphsys.storage.format import bucket_file, node_file
from graphsys.storage.graph import Graph, open_graph


def verify_graph(path: str | Path) -> dict[str, int]:
    """Check every file of the graph at ``path``; raise :class:`FormatError` naming the first
    bad file (missing, truncated, wrong hash, wrong schema or count, offsets out of range).

    Returns counts of what was checked: ``files``, ``bytes``, ``nodes``, ``edges``,
    ``indexes`` (adjacency indexes: counts, offsets and neighbour ids besides the hashes).
    """
    graph = open_graph(path)
    m = graph.manifest
    checked_bytes = 0
    expected = {node_file(t, p) for t in m.entity_types for p in range(m.num_partitions)}
    for name, es in m.edge_sets.items():
        expected |= {bucket_file(name, i, j) for (i, j), n in es.buckets.items() if n}
    missing = sorted(expected - set(m.files))
    if missing:
        raise FormatError(f"{graph.path / missing[0]}: not listed in the manifest")
    for rel, entry in sorted(m.files.items()):
        f = graph.path / rel
        digest = sha256_file(f)
        if digest != entry.get("sha256"):
            raise FormatError(f"{f}: sha256 mismatch (corrupted or modified file)")
        checked_bytes += f.stat().st_size
    for t, et in m.entity_types.items():
        for p in range(m.num_partitions):
            f = graph.path / node_file(t, p)
            n = _rows(f)
            if n != et.partition_sizes[p]:
                raise FormatError(f"{f}: {n} nodes, manifest says {et.partition_sizes[p]}")
    edges = 0
    for name, es in m.edge_sets.items():
        for (i, j), n in sorted(es.buckets.items()):
            _check_bucket(graph, name, i, j, n)
            edges += n
    indexes = verify_indexes(graph)
    return {"files": len(m.files), "bytes": checked_bytes, "nodes": graph.num_nodes(),
            "edges": edges, "indexes": indexes}


def _rows(path: Path) -> int:
    try:
        reader = paipc.open_file(pa.memory_map(str(path)))
        return sum(reader.get_batch(k).num_rows for k in range(reader.num_record_batches))
    except (OSError, pa.ArrowException) as exc:
        raise FormatError(f"{path}: not a readable Arrow IPC file ({exc})") from None


def _check_bucket(graph: Graph, edge_set: str, i: int, j: int, n: int) -> None:
    f = graph.path / bucket_file(edge_set, i, j)
    got = _rows(f)
    if got != n:
        raise FormatError(f"{f}: {got} edges, manifest says {n}")
    es = graph.edge_set(edge_set)
    rels = graph.relation_types
    lhs_sizes = np.array([graph.partition_sizes(r.lhs)[i] for r in rels])
    rhs_sizes = np.array([graph.partition_sizes(r.rhs)[j] for r in rels])
    prev_key = -1
    for eb in graph.bucket(i, j, edge_set).batches():
        if (eb.rel is not None) != es.has_rel or (eb.weight is not None) != es.has_weight:
            raise FormatError(f"{f}: columns do not match the manifest's edge set {edge_set!r}")
        rel = eb.rel if eb.rel is not None else np.zeros(len(eb), np.int32)
        if len(eb) == 0:
            continue
        if rel.min() < 0 or rel.max() >= len(rels):
            raise FormatError(f"{f}: relation index out of range")
        if (eb.src < 0).any() or (eb.src >= lhs_sizes[rel]).any() or (eb.dst < 0).any() or (
                eb.dst >= rhs_sizes[rel]).any():
            raise FormatError(f"{f}: local offset out of its partition's range")
        key = (eb.src.astype(np.int64) << 32) | eb.dst.astype(np.int64)
        if key[0] < prev_key or (len(key) > 1 and (np.diff(key) < 0).any()):
            raise FormatError(f"{f}: edges not sorted by (src, dst)")
        prev_key = int(key[-1])
