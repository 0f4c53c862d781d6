"""Shared plumbing of the algorithm front-ends (public: the profiler uses it too): open the
graph, map source ids, check weights, run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.node_reads import internal_of
from graphsys.views.limits import one_type


def open_if_path(graph):
    """Accept an opened Graph or a graph directory path, of one entity type (refused before
    a source id is looked up in no type)."""
    if isinstance(graph, (str, Path)):
        from graphsys import open_graph

        graph = open_graph(graph)
    return one_type(graph, "the BSP engine")


def source_index(graph, source) -> int:
    """Global id of the original node id ``source``; a ParameterError naming ``source``
    when it is not one id (a list of them included) or not in the graph."""
    if source is None:
        raise ParameterError("source", "is needed by this algorithm: give a node id")
    if not isinstance(source, str) and np.ndim(source) != 0:
        raise ParameterError("source", f"must be one node id, got "
                                       f"{' '.join(repr(source).split())}")  # one line
    return int(internal_of(graph, [source], "source")[0])


def id_list(ids) -> list:
    """Node ids given as one id (a string or a number) or a sequence of them, as a list:
    a string is one id, never its characters."""
    return np.atleast_1d(np.asarray(ids, dtype=object if isinstance(ids, str) else None)
                         ).tolist()


def symmetric(graph, edge_set: str | None) -> bool:
    """True when the edge set was ingested undirected (both directions stored)."""
    return bool(graph.edge_set(edge_set).undirected)


def resolve_weighted(graph, edge_set: str | None, weighted) -> bool:
    """Whether a run follows edge weights: ``weighted`` None (auto) when the edge set has
    them; True refused on an edge set without weights; else ``weighted`` itself."""
    if weighted is not None and not isinstance(weighted, (bool, np.bool_)):
        raise ParameterError("weighted", f"must be True, False or None (auto), got "
                                         f"{weighted!r}")
    es = graph.edge_set(edge_set)
    if weighted is None:
        return bool(es.has_weight)
    if weighted and not es.has_weight:
        raise ParameterError("weighted", f"is True but edge set {es.name!r} has no weights")
    return bool(weighted)


def teleport_weights(weights, what: str) -> np.ndarray:
    """``weights`` as float64 scaled to a maximum of 1 (so that summing them cannot
    overflow, as ``[1e308, 1e308]`` would); GraphsysError naming ``what`` unless they are
    finite, non-negative and not all zero."""
    try:
        w = np.asarray(weights, np.float64)
    except (TypeError, ValueError):
        raise GraphsysError(f"{what} must be numbers, got {weights!r}") from None
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0)) if w.ndim == 1 else np.array([0])
    if bad.size or not (w > 0).any():
        got = (f"{w.ravel()[bad[0]]} at position {bad[0]}" if bad.size and w.ndim == 1
               else "all zero" if w.ndim == 1 else f"shape {w.shape}")
        raise GraphsysError(f"{what} must be finite, non-negative and not all zero (one "
                            f"number each), got {got}")
    return w / w.max()


def check_weights_non_negative(graph, edge_set: str | None) -> None:
    """Raise GraphsysError if any edge weight is negative or NaN (streamed, one batch)."""
    if not graph.edge_set(edge_set).has_weight:
        return
    for _, _, _, w in graph.iter_edges(edge_set):
        if w is None or len(w) == 0:
            continue
        bad = np.flatnonzero(~(w >= 0))
        if bad.size:
            raise GraphsysError(f"sssp needs non-negative edge weights; found weight "
                                f"{float(w[bad[0]])!r}")


def split_seconds(seconds: float, work: np.ndarray) -> list[float]:
    """``seconds`` of a fused multi-step call split over its steps in proportion to
    ``work`` (int (S,): frontier + edges scanned), as the engine's fused supersteps do."""
    total = float(work.sum())
    if total == 0:
        return [seconds / max(len(work), 1)] * len(work)
    return (seconds * work / total).tolist()


def self_loop_counts(graph, edge_set: str | None) -> np.ndarray:
    """Stored self-loops ``v -> v`` per vertex, int64 (N,), counted from the diagonal
    buckets ``(i, i)`` (the only ones that hold loops), streamed one batch at a time."""
    out = np.zeros(graph.num_nodes(), np.int64)
    offsets = graph.partition_offsets()
    es = graph.edge_set(edge_set)
    for b in graph.buckets([(i, i) for i in range(graph.num_partitions)], es.name):
        for eb in b.batches():
            hit = eb.src[eb.src == eb.dst]
            if len(hit):
                np.add.at(out, int(offsets[b.i]) + hit.astype(np.int64), 1)
    return out
