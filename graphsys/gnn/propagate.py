"""SGC / SIGN feature propagation, out of core: ``k`` hops of normalised ``A·X`` written
as Arrow node files, so a linear model or an MLP trains on a graph of any size from them
(Wu et al., "Simplifying Graph Convolutional Networks", 2019; Frasca et al., "SIGN:
Scalable Inception Graph Neural Networks", 2020).

.. math::
    X^{(0)} = X, \\qquad X^{(k)} = S X^{(k-1)}, \\qquad
    S_{vu} = \\frac{c_{uv} + [u = v]}{\\sqrt{(d^{out}_u + 1)(d^{in}_v + 1)}}

with :math:`c_{uv}` the number of stored edges ``u -> v`` (messages flow along edges) and
the degrees counted over them; with the self-loop terms (``self_loops=True``) a stored
self-loop is replaced by the added one (:math:`c_{vv} = 0`, as PyG's ``SGConv`` and
``GCNConv``, ``add_remaining_self_loops``), without them (``self_loops=False``) the
stored ones stay. On a graph stored undirected (both
directions) :math:`S = \\hat D^{-1/2} (A + I) \\hat D^{-1/2}`, the SGC/GCN propagation
matrix; SGC trains a linear model on :math:`X^{(k)}`, SIGN an MLP on
:math:`[X^{(0)}, \\ldots, X^{(k)}]` (:func:`sign_features`).

Memory: per hop, one target partition's output rows (float32) plus a chunk of gathered
source rows (at most ``chunk_bytes``); source rows are read from the previous hop's Arrow
files through memory maps, buckets stream by record batch. Layout of ``out``::

    propagation.json       {"format": FORMAT, "graph", "entity_type", "column", "dim",
                            "hops", "self_loops", "num_nodes", "files": {hop: [file, ...]}}
    hop-<k>/part-<p>.arrow id (original ids), <column> fixed_size_list<float32>[dim]

written into a staging directory and renamed into place when complete (hop 0 is the input
column, stored too so that every hop reads the same way).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import torch

from graphsys.errors import FormatError, GraphsysError
from graphsys.outputs import check_own_directory
from graphsys.progress import display
from graphsys.storage import file_rules
from graphsys.storage.atomic import staging_directory, write_bytes_atomic
from graphsys.storage.format import MANIFEST
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.identity import check_nodes, stored_record

FORMAT = "graphsys-propagated-features"
INDEX = "propagation.json"
#: Bytes of gathered source rows per step (edges per step = chunk_bytes / (4 * dim)).
CHUNK_BYTES = 64 << 20


def _write(path: Path, ids, values: np.ndarray, column: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    col = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), pa.float32()),
                                            values.shape[1])
    table = pa.table({"id": ids, column: col})
    with paipc.new_file(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=max(len(values), 1))


def _read(path: Path, column: str, dim: int, ids: list | None = None) -> np.ndarray:
    """The float32 (n, dim) rows of one hop file, a read-only view of its memory map; its
    ids appended to ``ids`` when given."""
    table = paipc.open_file(pa.memory_map(str(path))).read_all()
    if ids is not None:
        ids.append(table.column("id").combine_chunks())
    col = table.column(column).combine_chunks()
    if not pa.types.is_fixed_size_list(col.type) or col.type.list_size != dim \
            or col.type.value_type != pa.float32() or col.null_count:
        raise ValueError(f"column {column} is {col.type}, not fixed_size_list<float>[{dim}] "
                         f"without nulls")
    flat = col.flatten()
    if len(flat) != len(col) * dim:  # a damaged child length: rows read as other rows
        raise ValueError(f"{len(flat)} values for {len(col)} rows of {dim}")
    return flat.to_numpy(zero_copy_only=False).reshape(-1, dim)


def propagate(graph: Graph, out: str | Path, *, hops: int = 2, column: str = "feat",
              edge_set: str | None = None, self_loops: bool = True,
              chunk_bytes: int = CHUNK_BYTES, progress: bool = False) -> Path:
    r"""Write ``hops`` rounds of normalised feature propagation, out of core (SGC / SIGN).

    ``X^(k) = S X^(k-1)`` for ``k = 1..hops`` from ``X^(0)`` = the node column
    ``column`` of a one-entity-type graph, with ``S`` the GCN propagation matrix (see the
    module docstring), written to the new directory ``out`` as one Arrow file per hop and
    partition; :func:`read_hop` and :func:`sign_features` read them back.

    Parameters
    ----------
    graph : Graph
        A graph with one entity type and a feature column ``column``.
    out : str or Path
        The directory to create (written into a staging directory, renamed when complete).
    hops : int, optional
        Propagation rounds ``k`` (default 2).
    column : str, optional
        The feature column (default ``"feat"``).
    edge_set : str, optional
        Stored edge set (default: the graph's default).
    self_loops : bool, optional
        Add the self-loop terms of :math:`\hat A = A + I` (default True).
    chunk_bytes : int, optional
        Bytes of gathered source rows per step (bounds the memory).
    progress : bool or callable, optional
        Progress over hops x partitions, by :func:`graphsys.progress.display`'s rule.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    GraphsysError
        ``hops < 1``, a graph of several entity types, or no feature column ``column``.

    References
    ----------
    .. [1] F. Wu, T. Zhang, A. H. de Souza Jr., C. Fifty, T. Yu and K. Q. Weinberger,
       "Simplifying Graph Convolutional Networks", ICML 2019,
       https://arxiv.org/abs/1902.07153.
    .. [2] F. Frasca, E. Rossi, D. Eynard, B. Chamberlain, M. Bronstein and F. Monti,
       "SIGN: Scalable Inception Graph Neural Networks", 2020,
       https://arxiv.org/abs/2004.11198.

    Examples
    --------
    On the path 0 - 1 - 2, one hop of :math:`\hat D^{-1/2} (A + I) \hat D^{-1/2}` on the
    features (1, 0, 0):

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.gnn import propagate, read_hop, sign_features
    >>> work = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), work + "/g", num_nodes=3,
    ...                         undirected=True,
    ...                         node_columns={"feat": np.eye(3, 1, dtype=np.float32)})
    >>> _ = propagate(g, work + "/prop", hops=2)
    >>> read_hop(work + "/prop", 1).ravel().round(4)        # 1/2, 1/sqrt(6), 0
    array([0.5   , 0.4082, 0.    ], dtype=float32)
    >>> sign_features(work + "/prop").shape                 # [X, SX, S^2 X]
    (3, 3)
    """
    if hops < 1:
        raise GraphsysError(f"hops must be >= 1, got {hops}")
    check_own_directory(out, what="propagated features")
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"propagate needs a graph with one entity type; {graph.path} has "
                            f"{', '.join(graph.entity_types)}")
    et = graph.entity_types[0]
    col = next((c for c in graph.manifest.entity_types[et].columns if c.name == column), None)
    if col is None or col.kind != "features":
        raise GraphsysError(f"{graph.path}: no feature column {column!r} (columns: "
                            f"{', '.join(graph.node_columns()) or 'none'})")
    es = graph.edge_set(edge_set)
    dim, p = col.dim, graph.num_partitions
    off = graph.partition_offsets()
    extra = 1.0 if self_loops else 0.0
    # with the added loops, a stored self-loop (a diagonal bucket's) is replaced, not added to
    loops = np.zeros(graph.num_nodes(), np.float32)
    for q in range(p) if self_loops else ():
        for eb in graph.bucket(q, q, es.name).batches():
            on = eb.src == eb.dst
            np.add.at(loops, eb.src[on].astype(np.int64) + int(off[q]), 1.0)
    norm_out = torch.from_numpy(graph.degrees(es.name, "out").astype(np.float32) - loops + extra)
    norm_in = torch.from_numpy(graph.degrees(es.name, "in").astype(np.float32) - loops + extra)
    norm_out = torch.where(norm_out > 0, norm_out.rsqrt(), 0.0)
    norm_in = torch.where(norm_in > 0, norm_in.rsqrt(), 0.0)
    step = max(1024, chunk_bytes // (4 * dim))
    files: dict[str, list[str]] = {}
    bar = display(progress, total=hops * p, unit="partition", desc="propagate")
    with staging_directory(Path(out)) as staging:
        files["0"] = []
        for q in range(p):
            rel = f"hop-0/part-{q}.arrow"
            _write(staging / rel, graph.node_ids(et, q),
                   graph.node_column(column, et, q).astype(np.float32, copy=False), column)
            files["0"].append(rel)
        for k in range(1, hops + 1):
            prev = [_read(staging / f, column, dim) for f in files[str(k - 1)]]
            files[str(k)] = []
            for j in range(p):
                lo = int(off[j])
                x_j = torch.from_numpy(np.array(prev[j]))
                acc = x_j * (norm_in[lo:lo + len(x_j)] * norm_out[lo:lo + len(x_j)]
                             ).unsqueeze(1) * extra
                for i in range(p):
                    b = graph.bucket(i, j, es.name)
                    if not b.num_edges:
                        continue
                    for eb in b.batches():
                        for a in range(0, len(eb.src), step):
                            s = torch.from_numpy(eb.src[a:a + step].astype(np.int64))
                            d = torch.from_numpy(eb.dst[a:a + step].astype(np.int64))
                            coef = norm_out[s + int(off[i])] * norm_in[d + lo]
                            if self_loops and i == j:
                                coef = coef * (s != d)
                            rows = torch.from_numpy(prev[i][s.numpy()])
                            acc.index_add_(0, d, rows * coef.unsqueeze(1))
                rel = f"hop-{k}/part-{j}.arrow"
                _write(staging / rel, graph.node_ids(et, j), acc.numpy(), column)
                files[str(k)].append(rel)
                bar.update()
        header = {"format": FORMAT, "graph": str(graph.path), "entity_type": et,
                  "column": column, "dim": dim, "hops": hops, "self_loops": self_loops,
                  "edge_set": es.name, "num_nodes": graph.num_nodes(), "files": files}
        write_bytes_atomic(staging / INDEX, json.dumps(header, indent=1).encode())
    bar.close()
    return Path(out)


def read_hop(out: str | Path, hop: int, graph: Graph | None = None) -> np.ndarray:
    """``X^(hop)`` written by :func:`propagate`, float32 (N, dim) in the type-global node
    order of ``graph`` (default: the graph recorded, when its directory is there), checked
    to be the order propagated over: the files' ids, partition by partition, must be the
    graph's. A graph grown by an append since (its internal ids moved, new nodes have no
    rows) or re-ingested is refused in one line: propagate again.

    Parameters
    ----------
    out : str or Path
        A directory :func:`propagate` wrote.
    hop : int
        ``0..hops`` (0: the input column as stored).
    graph : Graph, optional
        The graph the rows are for (default: the one recorded, if it is still there).

    Returns
    -------
    numpy.ndarray
        float32 (N, dim).

    Raises
    ------
    GraphsysError
        A hop not written, or a graph whose nodes are not the ones propagated over.
    FormatError
        An index or hop file not as :func:`propagate` writes it.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.gnn import propagate
    >>> work = tempfile.mkdtemp()
    >>> feat = {"feat": np.eye(3, 1, dtype=np.float32)}
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), work + "/g", num_nodes=3,
    ...                         undirected=True, node_columns=feat)
    >>> _ = propagate(g, work + "/prop", hops=1)
    >>> read_hop(work + "/prop", 0).ravel()  # the input
    array([1., 0., 0.], dtype=float32)
    >>> read_hop(work + "/prop", 2)
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: ...: hop 2 not written (hops 0..1)
    >>> h = graphsys.from_numpy(np.array([0, 1]), np.array([1, 3]), work + "/h", num_nodes=4)
    >>> read_hop(work + "/prop", 1, h)
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: ...had 3 nodes in 1 partitions [3], the graph ... has 4 ...
    """
    out = Path(out)
    header = _header(out)
    if str(hop) not in header["files"]:
        raise GraphsysError(f"{out}: hop {hop} not written (hops 0..{header['hops']})")
    files = header["files"][str(hop)]
    if not isinstance(files, list):
        raise FormatError(f"{out / INDEX}: files of hop {hop} must be a list")
    parts, ids = [], []
    for f in files:
        path = file_rules.inside(out, f, source=str(out / INDEX), field=f"files.{hop}")
        file_rules.file_size(out, path)                  # a regular file: never a FIFO
        try:
            parts.append(np.array(_read(path, header["column"], header["dim"], ids)))
        except (OSError, KeyError, ValueError, pa.ArrowException) as exc:
            raise FormatError(f"{path}: cannot read hop {hop} "
                              f"({str(exc).splitlines()[0] if str(exc) else exc!r})") from None
    if graph is None and (Path(str(header.get("graph"))) / MANIFEST).is_file():
        graph = open_graph(header["graph"])
    if graph is not None:
        check_nodes(stored_record(str(header.get("entity_type")), ids), graph, str(out),
                    "(grown by an append, or re-ingested, since: propagate again)")
    return np.concatenate(parts)


def _header(out: Path) -> dict:
    """The index of a propagation directory, read by :mod:`graphsys.storage.file_rules`."""
    header = file_rules.read_json(out, INDEX)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise FormatError(f"{out / INDEX}: not a {FORMAT} index")
    if not isinstance(header.get("files"), dict) or not all(
            type(header.get(k)) is int and header[k] >= least for k, least in (("hops", 0),
                                                                           ("dim", 1))) \
            or not isinstance(header.get("column"), str):
        # hops -1 raised a raw ValueError from np.concatenate
        raise FormatError(f"{out / INDEX}: needs files (an object), hops (an integer >= 0), "
                          f"dim (an integer >= 1) and column (a name)")
    return header


def sign_features(out: str | Path, graph: Graph | None = None) -> np.ndarray:
    """SIGN's input ``[X^(0), ..., X^(k)]``, float32 (N, (k+1) dim), checked against
    ``graph`` as :func:`read_hop` checks it.

    Parameters
    ----------
    out : str or Path
        A directory :func:`propagate` wrote.
    graph : Graph, optional
        The graph the rows are for (default: the one recorded, if it is still there).

    Returns
    -------
    numpy.ndarray
        float32 (N, (hops+1) dim): the hops side by side, hop 0 first.

    Examples
    --------
    One edge 0 - 1 stored both ways: :math:`S` averages the two nodes' features.

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.gnn import propagate
    >>> d = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([0, 1], [1, 0], d + "/g", num_nodes=2,
    ...                         node_columns={"feat": np.float32([[1.0], [0.0]])})
    >>> sign_features(propagate(g, d + "/prop", hops=2)).round(4)  # [X, S X, S^2 X]
    array([[1. , 0.5, 0.5],
           [0. , 0.5, 0.5]], dtype=float32)
    """
    header = _header(Path(out))
    return np.concatenate([read_hop(out, k, graph) for k in range(header["hops"] + 1)],
                          axis=1)
