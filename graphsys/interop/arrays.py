"""NumPy and Arrow in: an edge list already in memory, ingested without a file.

>>> g = from_numpy(src, dst, "g", num_nodes=4, node_columns={"feat": x}, num_partitions=2)
>>> g = from_arrow(pa.table({"src": [...], "dst": [...]}), "g")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from graphsys.interop._common import ingest_arrays
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest


def from_numpy(src, dst, out: str | Path, *, num_nodes: int | None = None, weight=None,
               node_columns: dict[str, Any] | None = None, **options) -> Graph:
    """Ingest the edges ``src[k] -> dst[k]`` (integer arrays (E,)) into ``out``.

    ``num_nodes``: nodes are ``0..num_nodes-1`` (isolated nodes kept; ids outside refused);
    without it the nodes are the ids that occur. ``weight``: float (E,). ``node_columns``:
    name -> float (N, F) features / integer (N,) labels / bool (N,) masks, row ``i`` = node
    ``i`` (needs ``num_nodes``). ``options``: :class:`~graphsys.storage.ingest.IngestOptions`
    fields (``num_partitions``, ``partitioner``, ``undirected``, ``memory_limit``, ...).
    """
    return ingest_arrays(src, dst, out, num_nodes=num_nodes, weight=weight,
                         node_columns=node_columns, metadata={"source": "numpy"},
                         options=options)


def from_arrow(edges, out: str | Path, *, nodes: pa.Table | None = None,
               src_col: str | int | None = None, dst_col: str | int | None = None,
               weight_col: str | int | None = None, rel_col: str | int | None = None,
               **options) -> Graph:
    """Ingest an Arrow edge table (or record batches) into ``out``.

    Columns as for Parquet/Arrow files: ``src``/``dst`` by default (else the first two),
    integer or string ids. ``nodes``: a node table (``id`` + feature / label / mask
    columns, see :class:`~graphsys.storage.ingest.NodeSource`). ``options`` as
    :func:`from_numpy`.
    """
    opts = IngestOptions(**options)
    opts.metadata = {"source": "arrow", **opts.metadata}
    source = EdgeSource(table=edges, src_col=src_col, dst_col=dst_col, weight_col=weight_col,
                        rel_col=rel_col)
    ingest([source], out, opts, nodes=[NodeSource(nodes)] if nodes is not None else [])
    return open_graph(out)
