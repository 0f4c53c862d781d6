"""NumPy and Arrow in: an edge list already in memory, ingested without a file
(:func:`from_numpy` for id arrays, :func:`from_arrow` for an Arrow table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from graphsys.interop._common import document, ingest_arrays, ingest_options
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.ingest import EdgeSource, NodeSource, ingest_sources


def from_numpy(src, dst, out: str | Path, *, num_nodes: int | None = None, weight=None,
               node_columns: dict[str, Any] | None = None, **options) -> Graph:
    """Ingest an edge list held in NumPy (or torch) arrays into a graph directory.

    The edges ``src[k] -> dst[k]`` go through the same passes as files
    (:func:`graphsys.ingest`): partitioner, memory budget, validation, atomic output.

    Parameters
    ----------
    src, dst : array-like of int
        Node ids (E,), NumPy, torch or Arrow (read without a copy where the dtype allows).
    out : str or Path
        The graph directory to create.
    num_nodes : int, optional
        The nodes are ``0..num_nodes-1``, isolated ones included (ids outside are refused);
        without it the nodes are the ids that occur.
    weight : array-like of float, optional
        Edge weights (E,).
    node_columns : dict of str to array-like, optional
        Node columns, row ``i`` = node ``i`` (needs ``num_nodes``): float (N, F) features,
        integer (N,) labels (-1 = unknown), bool (N,) masks.
    **options
        Fields of :class:`~graphsys.storage.ingest.IngestOptions`: ``partitions``
        (default 1), ``partitioner`` (default ``"hash"``), ``seed``, ``undirected``,
        ``dedupe``, ``drop_self_loops``, ``memory_limit`` (bytes), ``progress``, ...

    Returns
    -------
    Graph
        The stored graph, opened.

    Raises
    ------
    InputError
        Arrays of different lengths, ids outside ``0..num_nodes-1``, a column of the wrong
        shape or dtype.

    See Also
    --------
    graphsys.ingest : Edge list files.
    graphsys.from_arrow : An Arrow table of edges, with integer or string ids.

    Notes
    -----
    The cost beyond the arrays is the stored graph: ids validated, nodes partitioned, each
    bucket sorted, every file hashed and synced before the manifest names it, the directory
    renamed into place. With ``num_nodes`` and up to
    :data:`~graphsys.storage.kernels_small.SMALL_INGEST_EDGES` edges the graph is written in
    one pass with no id mapping (the same bytes as the ingest's passes).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]),
    ...                         tempfile.mkdtemp() + "/g", num_nodes=4,
    ...                         weight=np.array([0.5, 1.0, 2.0]),
    ...                         node_columns={"label": np.array([1, 0, 1, -1])})
    >>> g.num_nodes(), g.num_edges(), g.node_column("label").tolist()
    (4, 3, [1, 0, 1, -1])
    >>> g.degrees().tolist()
    [1, 1, 1, 0]
    """
    return ingest_arrays(src, dst, out, num_nodes=num_nodes, weight=weight,
                         node_columns=node_columns, metadata={"source": "numpy"},
                         options=options)


@document
def from_arrow(edges, out: str | Path, *, nodes: pa.Table | None = None,
               src_col: str | int | None = None, dst_col: str | int | None = None,
               weight_col: str | int | None = None, rel_col: str | int | None = None,
               edge_columns=(), **options) -> Graph:
    """Ingest an Arrow table of edges (or record batches) into a graph directory.

    Parameters
    ----------
    edges : pyarrow.Table or iterable of pyarrow.RecordBatch
        One edge per row; integer or string ids.
    out : str or Path
        The graph directory to create.
    nodes : pyarrow.Table, optional
        A node table: column ``id`` plus feature (fixed-size float list), label (integer) or
        mask (bool) columns (see :class:`~graphsys.storage.ingest.NodeSource`).
    src_col, dst_col : str or int, optional
        Source and destination columns, by name or index (default: ``src``/``dst``, else
        the first two).
    weight_col, rel_col : str or int, optional
        Edge weight and relation columns.
    edge_columns : sequence of str or dict, default ()
        Numeric columns to keep beside the edges, as for :func:`graphsys.ingest`.
    %(ingest)s

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> edges = pa.table({"src": ["a", "b", "c"], "dst": ["b", "c", "a"]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/g")
    >>> g.num_nodes(), g.to_internal("c").tolist()
    (3, [2])
    """
    opts = ingest_options(options)
    opts.metadata = {"source": "arrow", **opts.metadata}
    source = EdgeSource(table=edges, src_col=src_col, dst_col=dst_col, weight_col=weight_col,
                        rel_col=rel_col, edge_columns=edge_columns)
    ingest_sources([source], out, opts, nodes=[NodeSource(nodes)] if nodes is not None else [])
    return open_graph(out)
