"""Delete edges and nodes, update weights, compact: a graph that changes, not only grows.

:func:`delete_edges`, :func:`delete_nodes` and :func:`update_weights` write a *change set*
beside the graph's edge sets (:mod:`graphsys.storage.edge_changes` says how it is read):
the pairs whose edges go, or the pairs and their new weights. It joins the default view and
changes every edge set of it; :func:`compact` folds the default view into one edge set.
Pairs are of original ids, matched against the default view as it reads now (every parallel
edge and relation of a pair, both directions on an undirected graph); a pair the view lacks
refuses the whole request in one line unless ``allow_missing``. A deleted node stays, isolated,
at its partition and row. Writing is an append's: a staging directory, the manifest last,
one atomic rename, one writer at a time (:func:`~graphsys.storage.lock.writer_lock`).
docs/growing.md, "Deletions and weight updates", is the guide.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.errors import GraphsysError, InputError, ParameterError
from graphsys.storage import edge_views
from graphsys.storage.atomic import link_unchanged, replacement_directory, sync_files
from graphsys.storage.edge_changes import pair_keys
from graphsys.storage.format import SAFE_NAME, EdgeChange, EdgeSet, bucket_file, write_manifest
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.ingest_validate import MIN_WEIGHT_TEXT, float32_weights
from graphsys.storage.lock import writer_lock
from graphsys.storage.node_files import file_entry


@dataclasses.dataclass
class ChangeReport:
    """What a change wrote.

    Attributes
    ----------
    out : str
        The graph directory.
    edge_set : str
        The change set written ("" when nothing was).
    kind : str
        ``delete``, ``update`` or ``compact``.
    pairs : int
        The distinct pairs asked for that the default view has (a pair listed twice is one,
        and so are both directions of an undirected one; :func:`delete_nodes`: the
        distinct pairs of the nodes' edges; :func:`~graphsys.storage.compact.compact`: the
        edge sets folded).
    edges : int
        Edges of the default view deleted or re-weighted (parallel edges each count; an
        undirected edge's two directions count two); compaction's: the edges it wrote.
    missing : int
        Pairs asked for that the default view does not have.
    """

    out: str
    edge_set: str
    kind: str
    pairs: int
    edges: int
    missing: int = 0


def _open(graph) -> tuple[Graph, EdgeSet]:
    g = graph if isinstance(graph, Graph) else open_graph(Path(graph).resolve())
    if getattr(g, "stored", None) is not None:
        raise GraphsysError("a time view cannot be changed: open the graph itself")
    if len(g.manifest.entity_types) != 1:
        raise GraphsysError(f"{g.path}: deleting and updating edges needs a graph of one "
                            f"node type (it has {len(g.manifest.entity_types)})")
    return g, g.edge_set(None)


def _pairs(g: Graph, es: EdgeSet, src, dst) -> tuple[np.ndarray, np.ndarray]:
    """Original-id pairs as internal ids, with the reverse of each on an undirected graph."""
    _one_dimensional(src=src, dst=dst)
    if len(src) != len(dst):
        raise InputError(f"{len(src)} sources and {len(dst)} destinations")
    s, d = (g.to_internal(np.asarray(x) if not isinstance(x, list) else x) if len(x) else
            np.zeros(0, np.int64) for x in (src, dst))
    if es.undirected:
        s, d = np.concatenate([s, d]), np.concatenate([d, s])
    return np.asarray(s, np.int64), np.asarray(d, np.int64)


def _one_dimensional(**arrays) -> None:
    """Refuse, in one line, an argument that is not a sequence of values."""
    for name, x in arrays.items():
        if np.ndim(x) != 1:
            raise InputError(f"{name} must be one-dimensional, got shape {np.shape(x)}")


def _locate(g: Graph, s: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's bucket (``i * P + j``) and key of local offsets (:func:`pair_keys`)."""
    offsets = np.asarray(g.partition_offsets(), np.int64)
    pi = np.searchsorted(offsets, s, "right") - 1
    pj = np.searchsorted(offsets, d, "right") - 1
    return pi * g.num_partitions + pj, pair_keys(s - offsets[pi], d - offsets[pj])


def _by_bucket(g: Graph, s: np.ndarray, d: np.ndarray, extra=None, line=None) -> dict:
    """``{(i, j): (keys, extra)}``: the pairs' keys per bucket, sorted and distinct (the
    pair of the last ``line`` keeps its ``extra``; ``line``: each pair's position in the
    request, default its position in ``s``, ``d``)."""
    bucket, keys = _locate(g, s, d)
    line = np.arange(len(s)) if line is None else line
    out = {}
    for b in np.unique(bucket):
        sel = np.flatnonzero(bucket == b)
        sel = sel[np.argsort(-line[sel], kind="stable")]  # the last of equal pairs first
        uniq, first = np.unique(keys[sel], return_index=True)
        out[divmod(int(b), g.num_partitions)] = (
            uniq, None if extra is None else extra[sel][first])
    return out


def _present(g: Graph, es: EdgeSet, buckets: dict) -> tuple[dict, dict]:
    """Per bucket: the keys of ``buckets`` the view has, and how many edges match."""
    found, matched = {}, {}
    for (i, j), (keys, _) in buckets.items():
        have = np.zeros(len(keys), bool)
        count = 0
        for eb in g.bucket(i, j, es.name).batches():
            rows = pair_keys(eb.src, eb.dst)
            hit = np.isin(rows, keys)
            count += int(np.count_nonzero(hit))
            have |= np.isin(keys, rows[hit])
        found[(i, j)], matched[(i, j)] = keys[have], count
    return found, matched


def _missing(g: Graph, src, s: np.ndarray, d: np.ndarray, found: dict, allow: bool,
             what: str) -> np.ndarray:
    """Which requested pairs (the first ``len(src)`` of ``s``, ``d``) the view lacks (bool
    per pair); refused in one line unless ``allow`` (then a warning)."""
    n = len(src)
    bucket, keys = _locate(g, s[:n], d[:n])
    lacks = np.ones(n, bool)
    for (i, j), have in found.items():
        sel = bucket == i * g.num_partitions + j
        lacks[sel] = ~np.isin(keys[sel], have)
    count = int(np.count_nonzero(lacks))
    if count:
        k = int(np.flatnonzero(lacks)[0])
        ends = g.to_original(np.array([s[k], d[k]]))
        a, b = ends.tolist() if hasattr(ends, "tolist") else ends.to_pylist()
        first = f"{a!r} -> {b!r}"
        text = f"{count} of {n} edges to {what} are not in {g.path} (first: {first})"
        if not allow:
            raise ParameterError("allow_missing", f"is off and {text}: nothing was written "
                                                  f"(turn it on to {what} the others)")
        warnings.warn(f"{text}; " + ("the others were written" if count < n else
                                     "nothing was written"), stacklevel=3)
    return lacks


def delete_edges(graph, src: Sequence, dst: Sequence, *, edge_set: str | None = None,
                 allow_missing: bool = False) -> ChangeReport:
    """Delete the edges between pairs of nodes: write a delete set (see the module
    docstring).

    Parameters
    ----------
    graph : str, Path or Graph
        The graph directory (a :class:`Graph` opened from it: refused when another writer
        committed since it was opened; it reads the changed graph afterwards).
    src, dst : sequence of int or str
        Original ids: every edge ``src[k] -> dst[k]`` of the default view goes (every
        parallel one, every relation; both directions on an undirected graph).
    edge_set : str, optional
        The change set's name (default ``delete-N``, the first free ``N``).
    allow_missing : bool, default False
        Write the pairs the view has and warn of the others, rather than refuse them all.

    Returns
    -------
    ChangeReport

    Raises
    ------
    GraphsysError
        An unknown node id; a pair the default view lacks (without ``allow_missing``); a
        graph of several node types; a time view.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.changes import delete_edges
    >>> d = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 3], d + "/g")
    >>> report = delete_edges(d + "/g", [1], [2])
    >>> report.edge_set, report.edges
    ('delete-1', 1)
    >>> g = graphsys.open_graph(d + "/g")
    >>> g.edge_set().name, g.num_edges(), g.num_edges("default")
    ('default,delete-1', 3, 4)
    """
    g, es = _open(graph)
    return _change_pairs(g, es, "delete", src, dst, None, edge_set, allow_missing)


def _change_pairs(g: Graph, es: EdgeSet, kind: str, src, dst, weight, edge_set: str | None,
                  allow_missing: bool) -> ChangeReport:
    """Write the pairs of ``src``, ``dst`` (and their ``weight``) the view has as a change
    set of ``kind``; the others refused, or warned of (``allow_missing``)."""
    s, d = _pairs(g, es, src, dst)
    line = None
    if es.undirected:  # a pair's reverse is on the pair's line: (1, 2) then (2, 1) is
        # one undirected pair listed twice, whose last line sets both directions
        line = np.tile(np.arange(len(src)), 2)
        weight = None if weight is None else np.concatenate([weight, weight])
    buckets = _by_bucket(g, s, d, weight, line)
    found, matched = _present(g, es, buckets)
    lacks = _missing(g, src, s, d, found, allow_missing, kind)
    missing = int(np.count_nonzero(lacks))
    kept = {b: (found[b], None if v is None else v[np.isin(k, found[b])])
            for b, (k, v) in buckets.items() if len(found[b])}
    if not kept:
        return ChangeReport(str(g.path), "", kind, 0, 0, missing)
    name = _write(g, es, kind, kept, matched, edge_set)
    return ChangeReport(str(g.path), name, kind, _distinct_pairs(
        g, es, s[:len(src)][~lacks], d[:len(src)][~lacks]), sum(matched.values()), missing)


def _distinct_pairs(g: Graph, es: EdgeSet, s: np.ndarray, d: np.ndarray) -> int:
    """The distinct pairs among ``s``, ``d``: a pair listed twice is one, and so are ``(1,
    2)`` and ``(2, 1)`` on an undirected edge set."""
    if es.undirected:
        s, d = np.minimum(s, d), np.maximum(s, d)
    return len(np.unique(s * g.num_nodes() + d))


def delete_nodes(graph, nodes: Sequence, *, edge_set: str | None = None) -> ChangeReport:
    """Delete every edge of the nodes ``nodes`` (original ids) from the default view; the
    nodes stay, isolated (see the module docstring).

    Parameters
    ----------
    graph : str, Path or Graph
        The graph directory (or a :class:`Graph`: as for :func:`delete_edges`).
    nodes : sequence of int or str
        Original ids; an unknown one is refused in one line.
    edge_set : str, optional
        The change set's name (default ``delete-N``).

    Returns
    -------
    ChangeReport
        ``pairs``: the distinct pairs of the nodes' edges (counted as by
        :func:`delete_edges`); nothing is written when they have none.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.changes import delete_nodes
    >>> d = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 3], d + "/g")
    >>> delete_nodes(d + "/g", [3]).edges
    3
    >>> g = graphsys.open_graph(d + "/g")
    >>> g.num_nodes(), g.num_edges()
    (3, 1)
    """
    g, es = _open(graph)
    _one_dimensional(nodes=nodes)
    wanted = np.unique(np.asarray(g.to_internal(nodes if isinstance(nodes, list)
                                               else np.asarray(nodes)), np.int64))
    s_parts, d_parts = [], []
    for s, d, _, _ in g.iter_edges(es.name):
        hit = np.isin(s, wanted) | np.isin(d, wanted)
        s_parts.append(s[hit])
        d_parts.append(d[hit])
    s = np.concatenate(s_parts) if s_parts else np.zeros(0, np.int64)
    d = np.concatenate(d_parts) if d_parts else np.zeros(0, np.int64)
    buckets = _by_bucket(g, s, d)
    found, matched = _present(g, es, buckets)
    if not buckets:
        return ChangeReport(str(g.path), "", "delete", 0, 0)
    name = _write(g, es, "delete", {b: (found[b], None) for b in buckets}, matched, edge_set)
    return ChangeReport(str(g.path), name, "delete", _distinct_pairs(g, es, s, d),
                        sum(matched.values()))


def update_weights(graph, src: Sequence, dst: Sequence, weight: Sequence, *,
                   edge_set: str | None = None, allow_missing: bool = False) -> ChangeReport:
    """Set the weight of the edges between pairs of nodes: write an update set (see the
    module docstring).

    Parameters
    ----------
    graph, src, dst, allow_missing
        As for :func:`delete_edges`; the default view must be weighted.
    weight : sequence of float
        The new weight of every edge of each pair (float32; the last of a pair listed twice
        wins).
    edge_set : str, optional
        The change set's name (default ``update-N``).

    Returns
    -------
    ChangeReport
        As :func:`delete_edges`'s; ``edges``: those re-weighted.

    Raises
    ------
    GraphsysError
        What :func:`delete_edges` refuses; an unweighted graph; a weight float32 cannot
        hold (non-finite, beyond its range, nonzero below its smallest normal value).

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.changes import update_weights
    >>> d = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([1, 2], [2, 3], d + "/g", weight=[1.0, 2.0])
    >>> update_weights(d + "/g", [2], [3], [5.0]).edges
    1
    >>> [w.tolist() for _, _, _, w in graphsys.open_graph(d + "/g").iter_edges()]
    [[1.0, 5.0]]
    """
    g, es = _open(graph)
    if not es.has_weight:
        raise GraphsysError(f"{g.path}: edge set {es.name!r} has no weights to update")
    _one_dimensional(weight=weight)
    try:
        w = np.asarray(weight, np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"weights must be numbers ({exc})") from None
    if len(w) != len(src):
        raise InputError(f"{len(src)} pairs and {len(w)} weights")
    w32, infinite, tiny = float32_weights(w)
    bad = np.flatnonzero(infinite | tiny | np.isnan(w))
    if len(bad):
        raise InputError(f"weight {float(w[bad[0]])!r} of pair {bad[0] + 1} is not a float32 "
                         f"weight (finite, at most 3.4e38 and, when nonzero, at least "
                         f"{MIN_WEIGHT_TEXT} in magnitude)")
    return _change_pairs(g, es, "update", src, dst, w32, edge_set, allow_missing)


def _write(g: Graph, es: EdgeSet, kind: str, buckets: dict, matched: dict, name: str | None
           ) -> str:
    """Write the change set (its buckets, then the manifest) and swap it in."""
    m = g.manifest
    name = name or _free_name(m, kind)
    if name in m.edge_sets or not SAFE_NAME.fullmatch(name) or edge_views.SEPARATOR in name:
        raise GraphsysError(f"{g.path}: edge set {name!r} already exists or is not a valid "
                            f"name (choose another)")
    path = Path(g.path)
    with writer_lock(path, m), replacement_directory(path) as staging:
        files = dict(m.files)
        counts = {}
        for (i, j), (keys, weight) in sorted(buckets.items()):
            cols = {"src": (keys >> 32).astype(np.int32), "dst": (keys & 0xFFFFFFFF).astype(
                np.int32)}
            if weight is not None:
                cols["weight"] = weight.astype(np.float32)
            rel = bucket_file(name, i, j)
            files[rel] = write_bucket(staging / rel, cols, m.max_batch_rows)
            counts[(i, j)] = len(keys)
        removed = {b: n for b, n in matched.items() if n} if kind == "delete" else {}
        change = EdgeChange(kind, es.parts, removed)
        sets = dict(m.edge_sets)
        sets[name] = EdgeSet(name, sum(counts.values()), counts, False, kind == "update",
                             undirected=es.undirected, appended_to=edge_views.default_base(m),
                             change=change)
        manifest = dataclasses.replace(m, edge_sets=sets, files=files)
        _commit(path, staging, manifest)
    g._reopen(manifest)  # this object reads what it wrote
    return name


def _commit(path: Path, staging: Path, manifest) -> None:
    """Link the unchanged files, sync the written ones, write the manifest last."""
    written = [rel for rel in manifest.files if (staging / rel).exists()]
    linked, copied = link_unchanged(path, staging, manifest.files)
    sync_files(staging, written + copied, linked=linked)
    write_manifest(staging, manifest)


def _free_name(m, kind: str) -> str:
    k = 1
    while f"{kind}-{k}" in m.edge_sets:
        k += 1
    return f"{kind}-{k}"


def write_bucket(path: Path, cols: dict[str, np.ndarray], max_rows: int) -> dict:
    """Write one bucket file (columns in order) and return its manifest entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({k: pa.array(v) for k, v in cols.items()})
    with paipc.new_file(str(path), table.schema) as w:
        w.write_table(table, max_chunksize=max(1, max_rows))
    return file_entry(path)
