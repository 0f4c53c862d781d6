"""DGL in and out (``dgl``, an optional dependency; see the README for the torch versions
DGL's wheels support). Node data keep their names (DGL's ``feat``/``label``/``*_mask``
match graphsys's); edge data ``weight`` is the edge weight. A heterograph is a typed
graph: its node types are entity types, its canonical edge types ``(src_type, relation,
dst_type)`` relation types."""

from __future__ import annotations

import warnings
from pathlib import Path

from graphsys.errors import GraphsysError, InputError, check_flag
from graphsys.interop._common import (
    DEFAULT_MAX_EDGES,
    document,
    export_arrays,
    export_typed,
    ingest_arrays,
    ingest_typed,
)
from graphsys.storage.graph import Graph


def import_dgl():
    """``import dgl``, or one line saying why it cannot be used."""
    try:
        import dgl
    except Exception as exc:  # DGL fails with ImportError, OSError or others by torch build
        raise GraphsysError(f"DGL interop needs a working dgl (import dgl failed: "
                            f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
                            ) from None
    return dgl


def _node_data(frame, n: int) -> tuple[dict, list[str]]:
    """The node data of one DGL node type as graphsys node columns (float features,
    one-dimensional labels and masks), and the names of the ones left out."""
    import torch

    cols, dropped = {}, []
    for k, v in frame.items():
        if (torch.is_tensor(v) and v.shape[:1] == (n,)
                and (v.is_floating_point() or v.dim() == 1)):
            cols[k] = v.detach().cpu().numpy()
        else:
            dropped.append(k)
    return cols, dropped


def _weight(frame, num_edges: int):
    """Edge data ``weight`` when it is one value per edge, else None."""
    w = frame["weight"] if "weight" in frame else None
    return w.detach() if w is not None and w.dim() == 1 and w.shape[0] == num_edges else None


@document
def from_dgl(g, out: str | Path, **options) -> Graph:
    """Ingest a ``dgl.DGLGraph`` (homogeneous or a heterograph) into a graph directory.

    A graph with one node type and one edge type: nodes ``0..num_nodes-1``, edges
    ``g.edges()``. A heterograph (several node or edge types) becomes a typed graph: one
    entity type per node type (nodes ``0..num_nodes-1`` of each), one relation type
    ``relation`` from ``src_type`` to ``dst_type`` per canonical edge type (relation names
    must be distinct). Node data become node columns under their names, per type (DGL's
    ``feat``/``label``/``*_mask`` match graphsys's: float features, integer labels, bool
    masks); edge data ``weight`` (1-D) is the edge weight (in a heterograph where only
    some edge types carry one, the others get weight 1.0, listed in the manifest's
    metadata ``filled``). Other node and edge data are listed in the manifest's metadata
    (``dropped``), not stored. Edge ids must be nodes of their type.

    Parameters
    ----------
    g : dgl.DGLGraph
        The graph (not a message-flow block).
    out : str or Path
        The graph directory to create.
    %(ingest)s

    Raises
    ------
    InputError
        A block, a graph without edge types, or edge types that repeat a relation name.

    See Also
    --------
    to_dgl

    Examples
    --------
    >>> import tempfile, torch, dgl, graphsys  # doctest: +SKIP
    >>> d = dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 2])))  # doctest: +SKIP
    >>> graphsys.from_dgl(d, tempfile.mkdtemp() + "/g").num_edges()  # doctest: +SKIP
    2
    >>> h = dgl.heterograph({("user", "rates", "item"): ([0, 1], [2, 0])})  # doctest: +SKIP
    >>> graphsys.from_dgl(h, tempfile.mkdtemp() + "/h").entity_types  # doctest: +SKIP
    ['user', 'item']
    """
    if getattr(g, "is_block", False):
        raise InputError("from_dgl needs a graph, not a message-flow block (dgl.to_block); "
                         "convert the graph the block was sampled from")
    if len(g.ntypes) != 1 or len(g.canonical_etypes) != 1:
        return _from_hetero(g, out, options)
    src, dst = g.edges()
    columns, dropped = _node_data(g.ndata, g.num_nodes())
    weight = _weight(g.edata, g.num_edges())
    dropped += [f"edge.{k}" for k in g.edata.keys() if not (k == "weight" and weight is not None)]
    return ingest_arrays(src, dst, out, num_nodes=g.num_nodes(), weight=weight,
                         node_columns=columns, metadata={"source": "dgl", "dropped": dropped},
                         options=options)


def _from_hetero(g, out: str | Path, options: dict) -> Graph:
    """:func:`from_dgl` of a heterograph: a typed graph."""
    nodes, edges, dropped = [], [], []
    for t in g.ntypes:
        cols, dr = _node_data(g.nodes[t].data, g.num_nodes(t))
        dropped += [f"{t}.{k}" for k in dr]
        nodes.append((t, g.num_nodes(t), cols))
    for cet in g.canonical_etypes:
        src, dst = g.edges(etype=cet)
        frame = g.edges[cet].data
        w = _weight(frame, g.num_edges(cet))
        dropped += [f"{cet}.{k}" for k in frame.keys() if not (k == "weight" and w is not None)]
        edges.append((*cet, src, dst, w))
    return ingest_typed(nodes, edges, out, what="from_dgl", options=options,
                        metadata={"source": "dgl", "dropped": dropped})


def to_dgl(graph: Graph, *, edge_set: str | None = None,
           max_edges: int | None = DEFAULT_MAX_EDGES, hetero: bool | None = None):
    """A stored graph as a ``dgl.DGLGraph`` (or a heterograph), read into memory.

    With ``hetero`` (default: when the graph has several entity types) the result is a
    heterograph: per entity type its nodes in ascending original-id order, with their node
    columns and ``n_id`` (integer ids) as node data; per relation type the canonical edge
    type ``(lhs, name, rhs)`` with its edges in those positions (``weight`` edge data when
    weighted). Otherwise (one entity type, relations ignored): nodes in ascending
    original-id order (``0..N-1`` for a graph built by a ``from_*`` function, whatever its
    partitioning); node columns go to ``ndata`` under their names, with ``ndata["n_id"]``
    the original integer ids; ``edata["weight"]`` when weighted. String node columns
    (MovieLens' ``title``) are left out with a warning: DGL node data are tensors.

    Parameters
    ----------
    graph : Graph
        A graph (several entity types need ``hetero``).
    edge_set : str, optional
        The edge set (default: the only one, or ``default``/``train``).
    max_edges : int or None
        Refuse, in one line, a graph with more edges (None: no limit).
    hetero : bool, optional
        Return a heterograph (default: when the graph has several entity types).

    Returns
    -------
    dgl.DGLGraph

    Raises
    ------
    GraphsysError
        More than ``max_edges`` edges, several entity types without ``hetero``, or no
        working ``dgl``.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> g = graphsys.from_numpy([0, 1], [1, 2], tempfile.mkdtemp() + "/g")
    >>> graphsys.to_dgl(g).num_edges()  # doctest: +SKIP
    2
    """
    import torch

    dgl = import_dgl()
    # "no" was read as True (a HeteroData of one type)
    hetero = len(graph.entity_types) > 1 if hetero is None else check_flag("hetero", hetero)
    if hetero:
        return _to_hetero(graph, edge_set, max_edges, dgl)
    ex = export_arrays(graph, edge_set=edge_set, max_edges=max_edges, what="to_dgl")
    g = dgl.graph((torch.from_numpy(ex.src), torch.from_numpy(ex.dst)),
                  num_nodes=ex.num_nodes)
    for name, col in _tensor_columns(ex.columns):
        g.ndata[name] = col
    if ex.weight is not None:
        g.edata["weight"] = torch.from_numpy(ex.weight)
    if hasattr(ex.ids, "dtype"):
        g.ndata["n_id"] = torch.from_numpy(ex.ids)
    return g


def _to_hetero(graph: Graph, edge_set: str | None, max_edges: int | None, dgl):
    """:func:`to_dgl` as a heterograph."""
    import torch

    ex = export_typed(graph, edge_set=edge_set, max_edges=max_edges, what="to_dgl")
    g = dgl.heterograph({(lhs, name, rhs): (torch.from_numpy(s), torch.from_numpy(d))
                         for lhs, name, rhs, s, d, _ in ex.edges},
                        num_nodes_dict={t: v[0] for t, v in ex.nodes.items()})
    for t, (_, ids, cols) in ex.nodes.items():
        for name, col in _tensor_columns(cols, t):
            g.nodes[t].data[name] = col
        if ids is not None:
            g.nodes[t].data["n_id"] = torch.from_numpy(ids)
    for lhs, name, rhs, _, _, w in ex.edges:
        if w is not None:
            g.edges[(lhs, name, rhs)].data["weight"] = torch.from_numpy(w)
    return g


def _tensor_columns(columns: dict, entity_type: str | None = None):
    """``(name, tensor)`` of the node columns DGL can hold: a string column (torch has no
    string tensors) is left out with a warning naming it."""
    import torch

    for name, col in columns.items():
        if col.dtype == object:
            where = f" of node type {entity_type!r}" if entity_type else ""
            warnings.warn(f"to_dgl: string node column {name!r}{where} left out (DGL node "
                          f"data are tensors; graphsys.to_pyg keeps it as a list)",
                          stacklevel=3)
            continue
        yield name, torch.from_numpy(col)
