"""DGL in and out (``dgl``, an optional dependency; see the README for the torch versions
DGL's wheels support). Node data keep their names (DGL's ``feat``/``label``/``*_mask``
match graphsys's); edge data ``weight`` is the edge weight."""

from __future__ import annotations

from pathlib import Path

from graphsys.errors import GraphsysError, InputError
from graphsys.interop._common import DEFAULT_MAX_EDGES, export_arrays, ingest_arrays
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


def from_dgl(g, out: str | Path, **options) -> Graph:
    """Ingest a homogeneous ``dgl.DGLGraph`` into a graph directory.

    Nodes are ``0..num_nodes-1``, edges ``g.edges()``; node data become node columns under
    their names (DGL's ``feat``/``label``/``*_mask`` match graphsys's: float features,
    integer labels, bool masks); edge data ``weight`` (1-D) is the edge weight.

    Parameters
    ----------
    g : dgl.DGLGraph
        A graph with one node type and one edge type.
    out : str or Path
        The graph directory to create.
    **options
        Ingest options, as for :func:`graphsys.from_numpy` (``num_partitions``,
        ``partitioner``, ``undirected``, ``memory_limit``, ...).

    Returns
    -------
    Graph
        The stored graph, opened.

    Raises
    ------
    InputError
        A heterogeneous graph.

    See Also
    --------
    to_dgl

    Examples
    --------
    >>> import tempfile, torch, dgl, graphsys  # doctest: +SKIP
    >>> d = dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 2])))  # doctest: +SKIP
    >>> graphsys.from_dgl(d, tempfile.mkdtemp() + "/g").num_edges()  # doctest: +SKIP
    2
    """
    import torch

    if len(g.ntypes) != 1 or len(g.etypes) != 1:
        raise InputError(f"from_dgl needs a homogeneous graph; got node types {g.ntypes}, "
                         f"edge types {g.etypes}")
    src, dst = g.edges()
    weight = g.edata.get("weight") if "weight" in g.edata else None
    if weight is not None and weight.dim() != 1:
        weight = None
    columns = {k: v.detach().cpu().numpy() for k, v in g.ndata.items()
               if torch.is_tensor(v) and (v.is_floating_point() or v.dim() == 1)}
    return ingest_arrays(src, dst, out, num_nodes=g.num_nodes(), weight=weight,
                         node_columns=columns, metadata={"source": "dgl"}, options=options)


def to_dgl(graph: Graph, *, edge_set: str | None = None,
           max_edges: int | None = DEFAULT_MAX_EDGES):
    """A stored graph as a ``dgl.DGLGraph``, read into memory.

    Nodes are in ascending original-id order (``0..N-1`` for a graph built by a ``from_*``
    function, whatever its partitioning); node columns go to ``ndata`` under their names,
    with ``ndata["n_id"]`` the original integer ids; ``edata["weight"]`` when weighted.

    Parameters
    ----------
    graph : Graph
        A graph with one entity type.
    edge_set : str, optional
        The edge set (default: the only one, or ``default``/``train``).
    max_edges : int or None
        Refuse, in one line, a graph with more edges (None: no limit).

    Returns
    -------
    dgl.DGLGraph

    Raises
    ------
    GraphsysError
        More than ``max_edges`` edges, several entity types, or no working ``dgl``.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> g = graphsys.from_numpy([0, 1], [1, 2], tempfile.mkdtemp() + "/g")
    >>> graphsys.to_dgl(g).num_edges()  # doctest: +SKIP
    2
    """
    import torch

    dgl = import_dgl()
    ex = export_arrays(graph, edge_set=edge_set, max_edges=max_edges, what="to_dgl")
    g = dgl.graph((torch.from_numpy(ex.src), torch.from_numpy(ex.dst)),
                  num_nodes=ex.num_nodes)
    for name, col in ex.columns.items():
        g.ndata[name] = torch.from_numpy(col)
    if ex.weight is not None:
        g.edata["weight"] = torch.from_numpy(ex.weight)
    if hasattr(ex.ids, "dtype"):
        g.ndata["n_id"] = torch.from_numpy(ex.ids)
    return g
