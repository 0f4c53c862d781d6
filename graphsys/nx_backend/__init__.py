"""graphsys as a NetworkX backend: ``nx.pagerank(G, backend="graphsys")``, or every
dispatched call with ``NETWORKX_BACKEND_PRIORITY=graphsys``, runs graphsys on a NetworkX
graph with no other change [1]_.

NetworkX (>= 3.2) finds :class:`BackendInterface` by its entry points (``pyproject.toml``);
:data:`_nx_graphsys.FUNCTIONS` maps each NetworkX name graphsys implements to
``"module:function"``. A NetworkX graph is converted into arrays in memory
(:func:`~graphsys.nx_backend.graph.from_networkx`), a stored graph is used directly with
:func:`from_graph`. Each function keeps NetworkX's signature, defaults, result types and
errors; what graphsys cannot honour is declined (:mod:`graphsys.nx_backend.checks`) and
NetworkX runs the call itself. ``docs/from-networkx.md`` ("NetworkX runs graphsys") lists
the functions and what is declined.

References
----------
.. [1] NetworkX developers, "Backends",
   https://networkx.org/documentation/stable/reference/backends.html
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from _nx_graphsys import FUNCTIONS
from graphsys.errors import GraphsysError
from graphsys.nx_backend import checks
from graphsys.nx_backend.graph import BackendGraph, from_graph, from_networkx

__all__ = ["BackendGraph", "BackendInterface", "from_graph"]


def _weight_attr(edge_attrs, preserve_edge_attrs) -> tuple[str | None, object]:
    """The edge attribute (and its default) to store as the weight: the one attribute
    NetworkX asks for, or ``weight`` when it asks to keep every attribute."""
    if edge_attrs:
        (name, default), *_ = edge_attrs.items()
        return name, 1 if default is None else default
    if preserve_edge_attrs is True:
        return "weight", 1
    return None, 1


def _lazy(name: str, target: str) -> Callable:
    """``target`` behind NetworkX's name: each graph argument refreshed first
    (:meth:`BackendGraph.refresh`: NetworkX's cached conversion of a graph edited since),
    the arguments checked as :meth:`BackendInterface.can_run` checks them (a direct call,
    ``BackendInterface.pagerank(G, dangling=d)``, skips NetworkX's dispatcher: an argument
    graphsys cannot honour raises ``NotImplementedError`` rather than being ignored), and
    a graphsys error turned into ``NotImplementedError``, so that NetworkX runs the call
    itself rather than hand its user an exception of graphsys's."""
    module, attr = target.split(":")

    def call(*args, **kwargs):
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, BackendGraph):
                arg.refresh()
        declined = checks.can_run(name, args, kwargs)
        if declined is not True:
            raise NotImplementedError(declined)
        try:
            return getattr(importlib.import_module(module), attr)(*args, **kwargs)
        except GraphsysError as exc:
            raise NotImplementedError(f"graphsys: {exc}") from exc

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"graphsys's {name} ({target}), NetworkX's signature."
    return call


class BackendInterface:
    """The ``networkx.backends`` entry point: conversions, the dispatch checks and, as
    attributes, the functions of :data:`_nx_graphsys.FUNCTIONS` (imported on first call).

    Examples
    --------
    What NetworkX's dispatcher does with ``nx.pagerank(G, backend="graphsys")``:

    >>> import networkx as nx
    >>> from graphsys.nx_backend import BackendInterface
    >>> G = BackendInterface.convert_from_nx(nx.path_graph(4))
    >>> BackendInterface.can_run("pagerank", (G,), {}), BackendInterface.can_run(
    ...     "pagerank", (G,), {"alpha": 1.5})
    (True, 'graphsys: alpha must be in (0, 1)')
    >>> {k: round(v, 3) for k, v in BackendInterface.pagerank(G).items()}
    {0: 0.175, 1: 0.325, 2: 0.325, 3: 0.175}
    >>> sorted(BackendInterface.convert_to_nx(G).edges())
    [(0, 1), (1, 2), (2, 3)]
    """

    @staticmethod
    def convert_from_nx(G, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                        preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                        graph_name=None):
        if isinstance(G, BackendGraph):
            return G
        weight, default = _weight_attr(edge_attrs, preserve_edge_attrs)
        return from_networkx(G, weight, default)

    @staticmethod
    def convert_to_nx(obj, *, name=None):
        if isinstance(obj, BackendGraph):
            import networkx as nx

            G = nx.DiGraph() if obj.directed else nx.Graph()
            G.add_nodes_from(obj.keys)
            for s, d, _, w in obj.graph.iter_edges() if not obj.null else ():
                keys = [obj.keys[i] for i in s.tolist()], [obj.keys[i] for i in d.tolist()]
                if w is None or obj.weight is None:
                    G.add_edges_from(zip(*keys))
                else:
                    G.add_weighted_edges_from(zip(*keys, w.tolist()), weight=obj.weight)
            return G
        return obj

    # NetworkX's dispatch checks (NetworkX runs a declined call, and a call on a graph
    # below nx.config.backends.graphsys.min_edges, itself), and the marks of the tests of
    # its suite whose expectations differ by design (checks.KNOWN_DIFFERENCES)
    can_run = staticmethod(checks.can_run)
    should_run = staticmethod(checks.should_run)
    on_start_tests = staticmethod(checks.mark_tests)


for _name, _target in FUNCTIONS.items():
    setattr(BackendInterface, _name, staticmethod(_lazy(_name, _target)))
