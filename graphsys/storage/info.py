"""Summary statistics of a stored graph, to compare partitioners on the same graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphsys.errors import GraphsysError
from graphsys.storage.format import index_file
from graphsys.storage.graph import Graph


def _balance(values: np.ndarray) -> float:
    """max / mean of ``values`` (1.0 = perfectly balanced; 1.0 for all-zero input)."""
    mean = float(np.mean(values)) if len(values) else 0.0
    return float(np.max(values)) / mean if mean > 0 else 1.0


def graph_info(graph: Graph) -> dict[str, Any]:
    """Summary statistics of a stored graph, to compare partitioners on the same graph.

    Parameters
    ----------
    graph : Graph
        The graph.

    Returns
    -------
    dict
        JSON-able: ``nodes``, ``num_partitions``, ``partitioner``; per entity type its
        ``nodes_per_partition`` and ``node_balance``; per edge set its ``edges``,
        ``edges_per_partition`` (the edges whose source lies in the partition: bucket row
        sums), ``buckets`` (P x P counts), balances (max / mean, 1.0 = perfectly balanced),
        ``edge_cut`` (the fraction of edges whose endpoints lie in different partitions: the
        edges outside the diagonal buckets) and ``indexes`` (each stored index's manifest
        entry and the bytes of its files; ``appended_to`` for an appended one; ``change``
        for a delete or update set: its kind, targets and the edges it removes);
        ``default_view``: the edge sets read when none is named. ``graphsys info`` prints
        it (:func:`format_info`).

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.storage.info import graph_info
    >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 0], tempfile.mkdtemp() + "/g",
    ...                         partitions=2, partitioner="range")
    >>> info = graph_info(g)
    >>> info["edge_sets"]["default"]["buckets"], info["edge_sets"]["default"]["edge_cut"]
    ([[1, 1], [1, 1]], 0.5)
    """
    m = graph.manifest
    out: dict[str, Any] = {
        "path": str(graph.path),
        "format_version": m.version(),
        "num_partitions": m.num_partitions,
        "partitioner": m.partitioner,
        "nodes": graph.num_nodes(),
        "entity_types": {},
        "relation_types": [{"name": r.name, "lhs": r.lhs, "rhs": r.rhs}
                           for r in m.relation_types],
        "edge_sets": {},
    }
    for name, et in m.entity_types.items():
        sizes = np.asarray(et.partition_sizes)
        out["entity_types"][name] = {
            "nodes": et.num_nodes, "id_type": et.id_type,
            "nodes_per_partition": sizes.tolist(), "node_balance": round(_balance(sizes), 4),
            "columns": [{"name": c.name, "kind": c.kind, "dim": c.dim} for c in et.columns],
        }
    for name in m.edge_sets:
        out["edge_sets"][name] = edge_set_stats(graph, name)
    try:
        out["default_view"] = list(graph.edge_set().parts)
    except GraphsysError:  # several edge sets, none the default
        out["default_view"] = []
    out["edges"] = sum(v["edges"]
                       for v in out["edge_sets"].values() if "change" not in v) - sum(
        v["change"]["removed"] for v in out["edge_sets"].values() if "change" in v)
    return out


def edge_set_stats(graph: Graph, edge_set: str | None) -> dict[str, Any]:
    """The statistics :func:`graph_info` lists per edge set, of one edge set or of several
    read as one (a view, :mod:`graphsys.storage.edge_views`: its members' buckets summed,
    no stored index of its own)."""
    m = graph.manifest
    es = graph._stored(edge_set)  # a change set's own record and buckets too
    counts = graph.bucket_counts(es.name)
    total = int(counts.sum())
    rows = counts.sum(axis=1)
    nonempty = counts[counts > 0]
    return {
        "edges": total,
        "undirected": es.undirected,
        "has_weight": es.has_weight,
        "has_rel": es.has_rel,
        "columns": [c.to_json() for c in es.columns],
        "skipped_lines": es.skipped_lines,
        **({"appended_to": es.appended_to} if es.appended_to else {}),
        **({"members": list(es.members)} if es.members else {}),
        **({"change": {"kind": es.change.kind, "targets": list(es.change.targets),
                       "removed": sum(es.change.removed.values())}} if es.change else {}),
        "edges_per_partition": rows.tolist(),
        "edge_balance": round(_balance(rows), 4),
        "buckets": counts.tolist(),
        "nonempty_buckets": int(len(nonempty)),
        "bucket_balance": round(_balance(counts.ravel()), 4),
        "edge_cut": round(float(total - np.trace(counts)) / total, 6) if total else 0.0,
        "indexes": {kind: {**info.to_json(), "bytes": sum(
            m.files.get(index_file(es.name, kind, c), {}).get("bytes", 0)
            for c in info.columns())}
            for kind, info in sorted(m.indexes.get(es.name, {}).items())},
    }


def format_info(info: dict[str, Any]) -> str:
    """The :func:`graph_info` of a graph as the lines ``graphsys info`` prints."""
    lines = [f"graph {info['path']}",
             f"  partitions: {info['num_partitions']}  partitioner: {info['partitioner']['name']} "
             f"{info['partitioner'].get('params', {})}",
             f"  nodes: {info['nodes']:,}  edges: {info['edges']:,}"]
    for name, et in info["entity_types"].items():
        cols = ", ".join(f"{c['name']}({c['kind']})" for c in et["columns"]) or "none"
        lines.append(f"  entity type {name}: {et['nodes']:,} nodes ({et['id_type']} ids), "
                     f"per partition {et['nodes_per_partition']}, balance {et['node_balance']}, "
                     f"columns: {cols}")
    lines += [f"  relation {r['name']}: {r['lhs']} -> {r['rhs']}" for r in info["relation_types"]]
    for name, es in info["edge_sets"].items():
        if "change" in es:  # a delete or update set: its pairs, not edges
            c = es["change"]
            lines.append(f"  edge set {name}: {c['kind']} set of {es['edges']:,} pairs"
                         + (f", removes {c['removed']:,} edges" if c["kind"] == "delete"
                            else "") + f" of {', '.join(c['targets'])}")
            continue
        lines.append(f"  edge set {name}: {es['edges']:,} edges, edge-cut {es['edge_cut']:.4f}, "
                     f"edges/partition {es['edges_per_partition']} (balance "
                     f"{es['edge_balance']}), {es['nonempty_buckets']} non-empty buckets "
                     f"(bucket balance {es['bucket_balance']})"
                     + (", undirected" if es["undirected"] else "")
                     + (", weighted" if es["has_weight"] else "")
                     + (", edge columns: " + ", ".join(f"{c['name']}({c['dtype']})"
                                                        for c in es["columns"])
                        if es.get("columns") else "")
                     + (f", appended to {es['appended_to']}" if es.get("appended_to") else ""))
        if es["indexes"]:
            lines.append("    indexes: " + ", ".join(
                f"{kind} ({ix['bytes'] / 2**20:,.1f} MiB"
                + (", built before an append: read renumbered" if ix.get("layout") else "")
                + ")" for kind, ix in es["indexes"].items()))
    if len(info.get("default_view", [])) > 1:
        lines.append(f"  default view: {', '.join(info['default_view'])} (read together "
                     f"when no edge set is named)")
    return "\n".join(lines)
