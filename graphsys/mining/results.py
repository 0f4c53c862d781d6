"""What mining calls take (:func:`as_graph`), and the original ids of internal ones."""

from __future__ import annotations

import numpy as np

from graphsys.errors import ParameterError, check_count
from graphsys.storage.graph import Graph, open_graph
from graphsys.views import check, one_type


def as_graph(graph) -> Graph:
    """An opened graph, or the graph at a path (``str`` or ``Path``), of one entity type.

    Raises
    ------
    GraphsysError
        The graph has several entity types (mining numbers the nodes of one).
    """
    if not isinstance(graph, Graph):
        if not (hasattr(graph, "__fspath__") or isinstance(graph, str)):
            raise ParameterError("graph", f"must be a Graph or a graph directory, got "
                                          f"{type(graph).__name__}")
        graph = open_graph(graph)
    return one_type(graph, "pattern mining")


def original_ids(graph: Graph, internal: np.ndarray) -> np.ndarray:
    """Original ids of an array of internal ids, same shape: int64, or ``object`` (str)
    for string ids."""
    ids = graph.node_ids()
    if not isinstance(ids, np.ndarray):
        ids = np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object)
    return ids[np.asarray(internal, np.int64)]


def check_beside(graph: Graph, edge_set, view, what: str, need: int, memory_limit) -> None:
    """Refuse in one line (:func:`graphsys.views.check`) a call whose arrays beside its
    oriented ``view`` (``need`` bytes at their peak) do not fit the budget with it: the
    view's build is sized on its own, what the call derives from it here."""
    check(graph, edge_set, what, view.nbytes + int(need), memory_limit)


def check_limit(limit) -> None:
    """Refuse in one line a listing's ``limit`` that is neither None nor an integer >= 0."""
    if limit is not None:
        check_count("limit", limit, minimum=0)


#: Rows a listing sizes its output for without counting first.
LIST_ROWS = 1 << 16


def listed_rows(graph: Graph, edge_set, limit: int | None, k: int, count, what: str,
                memory_limit) -> int:
    """The rows a listing of at most ``limit`` matches (None: all) allocates: ``limit``
    up to :data:`LIST_ROWS`, else (and for None) no more than the matches there are
    (``count()``, a counting pass first); refused in one line when they do not fit the
    budget (``k`` int64 ids a row, and as many original ids)."""
    if limit is None or limit > LIST_ROWS:
        found = int(count())
        limit = found if limit is None else min(int(limit), found)
    check(graph, edge_set, f"the {limit:,} {what} listed", 16 * k * int(limit), memory_limit)
    return int(limit)
