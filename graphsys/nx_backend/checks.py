"""Which calls the graphsys backend takes (:meth:`BackendInterface.can_run`,
:meth:`~BackendInterface.should_run`), and the NetworkX tests whose expectations differ by
design (:data:`KNOWN_DIFFERENCES`)."""

from __future__ import annotations

import inspect

#: Functions on undirected graphs only here (NetworkX's directed versions measure directed
#: distances).
UNDIRECTED_ONLY = {"diameter", "eccentricity", "radius", "center", "periphery"}

#: NetworkX test (node id substring) -> why its expectation differs by design. Marked
#: ``xfail`` (not strict) when NetworkX's suite runs against the backend.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _arguments(name: str, args, kwargs) -> dict:
    """The call's arguments by parameter name, defaults filled (NetworkX's signature)."""
    from networkx.utils.backends import _registered_algorithms

    try:
        bound = inspect.signature(_registered_algorithms[name]).bind(*args, **kwargs)
    except TypeError:
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


def _declined(name: str, a: dict) -> str | None:
    """Why graphsys does not run this call, or None."""
    G = a.get("G")
    if G is not None and G.is_multigraph():
        return "multigraphs are not supported"
    if name == "pagerank":
        if a.get("dangling") is not None:
            return "a dangling distribution other than the personalization is not supported"
        if not 0 < a.get("alpha", 0.85) < 1:
            return "alpha must be in (0, 1)"
        p = a.get("personalization")
        if p and any(not isinstance(v, (int, float)) or v < 0 for v in p.values()):
            return "personalization values must be non-negative numbers"
    if name == "betweenness_centrality" and (a.get("k") is not None
                                             or a.get("weight") is not None):
        return "a sample of k sources and weighted paths are not supported"
    if name == "closeness_centrality" and (a.get("u") is not None
                                           or a.get("distance") is not None):
        return "one node's closeness and weighted distances are not supported"
    if name == "hits" and not a.get("normalized", True):
        return "normalized=False is not supported"
    if callable(a.get("weight")):
        return "a weight function is not supported"
    if name in UNDIRECTED_ONLY:
        if G is not None and G.is_directed():
            return "directed distances are not supported"
        if a.get("e") is not None or a.get("sp") is not None:
            return "precomputed eccentricities or paths are not supported"
    if name in ("degree_assortativity_coefficient", "degree_pearson_correlation_coefficient"):
        if a.get("weight") is not None or a.get("nodes") is not None:
            return "weighted degrees and node subsets are not supported"
        if a.get("x") not in ("in", "out") or a.get("y") not in ("in", "out"):
            return "x and y must be 'in' or 'out'"
    return None


def can_run(name: str, args, kwargs) -> bool | str:
    """True, or the reason graphsys declines the call."""
    reason = _declined(name, _arguments(name, args, kwargs))
    return True if reason is None else f"graphsys: {reason}"


def should_run(name: str, args, kwargs) -> bool | str:
    """True for graphsys graphs and NetworkX graphs of at least ``min_edges`` edges."""
    import networkx as nx

    G = _arguments(name, args, kwargs).get("G")
    if G is None or getattr(G, "__networkx_backend__", None) == "graphsys":
        return True
    least = nx.config.backends.graphsys.get("min_edges", 0)
    if G.number_of_edges() < least:
        return (f"graphsys: a graph of fewer than {least} edges is faster in NetworkX "
                f"(nx.config.backends.graphsys.min_edges)")
    return True


def mark_tests(items) -> None:
    """Mark NetworkX's tests listed in :data:`KNOWN_DIFFERENCES` as expected to fail."""
    import pytest

    for item in items:
        for key, reason in KNOWN_DIFFERENCES.items():
            if key in item.nodeid:
                item.add_marker(pytest.mark.xfail(reason=f"graphsys: {reason}", strict=False))


__all__ = ["KNOWN_DIFFERENCES", "can_run", "mark_tests", "should_run"]
