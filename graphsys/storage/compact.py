"""Compaction: fold the default view of a graph (its default edge set, the edge sets appended
to it and its change sets) into one edge set of the edges it reads.

:func:`compact` writes, bucket by bucket, the edges the view reads (deleted edges gone,
updated weights in place, edge columns kept) as the default edge set's new buckets, sorted
by ``(src, dst, rel)`` (equal pairs keep the view's order), and drops the folded edge sets
and their adjacency indexes: every engine reads the same edges after as before. Nodes stay
where they are. Writing is an append's (a staging directory, the manifest last, one atomic
rename, one writer at a time). docs/growing.md, "Compaction", is the guide.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from graphsys.errors import GraphsysError
from graphsys.storage import edge_views
from graphsys.storage.atomic import replacement_directory
from graphsys.storage.changes import ChangeReport, _commit, write_bucket
from graphsys.storage.format import EdgeSet, bucket_file, index_file
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.lock import writer_lock


def compact(graph, *, edge_set: str | None = None) -> ChangeReport:
    """Fold a base edge set and every edge set and change set appended to it into one edge
    set of that name (see the module docstring).

    Parameters
    ----------
    graph : str, Path or Graph
        The graph directory (or a :class:`Graph` opened from it, which reads the compacted
        graph afterwards).
    edge_set : str, optional
        The base edge set (one not itself appended); default: the default edge set.

    Returns
    -------
    ChangeReport
        ``edge_set``: the compacted edge set ("" when it had nothing appended, and nothing
        was written); ``pairs``: the edge sets folded; ``edges``: its edges.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.changes import delete_edges
    >>> from graphsys.storage.compact import compact
    >>> d = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 3], d + "/g")
    >>> _ = delete_edges(d + "/g", [1], [2])
    >>> compact(d + "/g").edges
    3
    >>> g = graphsys.open_graph(d + "/g")
    >>> g.edge_sets, g.num_edges()
    (['default'], 3)
    """
    g = graph if isinstance(graph, Graph) else open_graph(Path(graph).resolve())
    if getattr(g, "stored", None) is not None:
        raise GraphsysError("a time view cannot be compacted: open the graph itself")
    m = g.manifest
    base = edge_views.default_base(m) if edge_set is None else edge_set
    if base not in m.edge_sets or m.edge_sets[base].appended_to:
        raise GraphsysError(f"{g.path}: {base!r} is not an edge set that others are "
                            f"appended to (edge sets: {', '.join(m.edge_sets)})")
    names = (base, *edge_views.appended(m, base))
    view = edge_views.union(m, names)
    if len(names) == 1:
        return ChangeReport(str(g.path), "", "compact", 1, view.num_edges)
    path = Path(g.path)
    with writer_lock(path, m), replacement_directory(path) as staging:
        files = {rel: entry for rel, entry in m.files.items()
                 if not any(rel.startswith(f"edges/{n}/") for n in names)}
        indexes = {n: kinds for n, kinds in m.indexes.items() if n not in names}
        for n, kinds in m.indexes.items():
            for info in kinds.values() if n in names else ():
                for column in info.columns():
                    files.pop(index_file(n, info.kind, column), None)
        counts = {}
        for b in g.buckets("row-major", view.name):
            cols = _sorted_columns(list(b.batches()), view)
            if len(cols["src"]):
                rel = bucket_file(base, b.i, b.j)
                files[rel] = write_bucket(staging / rel, cols, m.max_batch_rows)
                counts[(b.i, b.j)] = len(cols["src"])
        first = m.edge_sets[base]
        merged = EdgeSet(base, sum(counts.values()), counts, view.has_rel, view.has_weight,
                         undirected=view.undirected, dedupe=first.dedupe and len(
                             [n for n in names if not m.edge_sets[n].change]) == 1,
                         drop_self_loops=view.drop_self_loops,
                         skipped_lines=view.skipped_lines, columns=list(view.columns))
        sets = {n: es for n, es in m.edge_sets.items() if n not in names[1:]}
        sets[base] = merged
        manifest = dataclasses.replace(m, edge_sets=sets, files=files, indexes=indexes)
        _commit(path, staging, manifest)
    g._reopen(manifest)  # this object reads what it wrote
    return ChangeReport(str(g.path), base, "compact", len(names), merged.num_edges)


def _sorted_columns(batches: list, view: EdgeSet) -> dict[str, np.ndarray]:
    """One bucket's batches as bucket-file columns, sorted by (src, dst, rel), stable."""
    def cat(get, dtype):
        return np.concatenate([np.asarray(get(eb), dtype) for eb in batches]) if batches \
            else np.zeros(0, dtype)

    cols = {"src": cat(lambda eb: eb.src, np.int32), "dst": cat(lambda eb: eb.dst, np.int32)}
    if view.has_rel:
        cols["rel"] = cat(lambda eb: eb.rel, np.int32)
    if view.has_weight:
        cols["weight"] = cat(lambda eb: eb.weight, np.float32)
    for c in view.columns:
        cols[c.name] = cat(lambda eb, n=c.name: eb.columns[n], np.dtype(c.dtype))
    keys = [cols["dst"], cols["src"]]
    order = np.lexsort(([cols["rel"]] if view.has_rel else []) + keys)
    return {k: v[order] for k, v in cols.items()}
