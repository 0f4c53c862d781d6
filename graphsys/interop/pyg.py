"""PyTorch Geometric in and out (``torch_geometric``, an optional dependency).

Names map as PyG and graphsys spell them: ``x`` <-> node column ``feat``, ``y`` <->
``label``, ``train_mask``/``val_mask``/``test_mask`` and other node-level tensors keep
their names, ``edge_weight`` (or a 1-D ``edge_attr``) <-> the edge weight.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphsys.errors import GraphsysError, InputError, check_flag
from graphsys.interop._common import DEFAULT_MAX_EDGES, document, export_arrays, ingest_arrays
from graphsys.storage.graph import Graph

#: PyG attribute -> graphsys node column.
_TO_GRAPHSYS = {"x": "feat", "y": "label"}
_TO_PYG = {v: k for k, v in _TO_GRAPHSYS.items()}


def _import_pyg():
    try:
        import torch_geometric.data
    except ImportError:
        raise GraphsysError("PyG interop needs torch_geometric (pip install torch_geometric)"
                            ) from None
    return torch_geometric


@document
def from_pyg(data, out: str | Path, **options) -> Graph:
    """Ingest a ``torch_geometric.data.Data`` or ``HeteroData`` into a graph directory.

    A ``HeteroData`` becomes a typed graph: one entity type per node type (nodes
    ``0..num_nodes-1`` of each), one relation type ``name`` from ``src`` to ``dst`` per edge
    type ``(src, name, dst)`` (names must be distinct), node-level tensors per type as
    below. Otherwise nodes are ``0..num_nodes-1`` (isolated ones kept); edges ``edge_index[0] ->
    edge_index[1]`` as given (PyG's undirected graphs already hold both directions).
    Node-level tensors (first dimension ``num_nodes``: float features, integer labels, bool
    masks) become node columns, ``x`` as ``feat`` and ``y`` as ``label``, and a list of
    ``num_nodes`` strings a string node column; a 1-D ``edge_weight`` or ``edge_attr``
    becomes the edge weight (in a ``HeteroData`` where only some edge types carry one, the
    others get weight 1.0, listed in the manifest's metadata ``filled``). Other attributes
    are listed in the manifest's metadata (``dropped``), not stored. Edge ids must be nodes:
    ``0..num_nodes-1`` of their type.

    Parameters
    ----------
    data : torch_geometric.data.Data or torch_geometric.data.HeteroData
        The graph.
    out : str or Path
        The graph directory to create.
    %(ingest)s

    Raises
    ------
    InputError
        No ``edge_index``, or one not of shape (2, E); an edge id that is negative or not
        below its node type's ``num_nodes``; a ``HeteroData`` whose edge types repeat a
        relation name.

    See Also
    --------
    to_pyg
    graphsys.from_numpy : The edge list ingest underneath, and what it costs (Notes).

    Notes
    -----
    The cost beyond PyG's in-memory ``Data`` is a graph on disk, as for
    :func:`graphsys.from_numpy` (Notes), which writes a small one in one pass.

    Examples
    --------
    >>> import tempfile, torch, graphsys
    >>> from torch_geometric.data import Data
    >>> data = Data(x=torch.eye(3), y=torch.tensor([0, 1, 0]),
    ...             edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]]))
    >>> g = graphsys.from_pyg(data, tempfile.mkdtemp() + "/g", partitions=2)
    >>> sorted(g.node_columns()), g.num_edges()
    (['feat', 'label'], 3)
    """
    if type(data).__name__ == "HeteroData":
        return _from_hetero(data, out, options)
    if getattr(data, "edge_index", None) is None:
        raise InputError("from_pyg: data has no edge_index")
    ei = data.edge_index
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise InputError(f"from_pyg: edge_index has shape {tuple(ei.shape)}, expected (2, E)")
    n = int(data.num_nodes)
    used = _weight_key(data, ei.shape[1])
    items = [(key, data[key]) for key in data.keys() if key not in ("edge_index", used)]
    weight = data[used] if used else None
    columns, dropped = _node_columns(items, n, data.is_node_attr, whole_y=True)
    return ingest_arrays(ei[0], ei[1], out, num_nodes=n, weight=weight, node_columns=columns,
                         metadata={"source": "torch_geometric", "dropped": dropped},
                         options=options)


def to_pyg(graph: Graph, *, edge_set: str | None = None,
           max_edges: int | None = DEFAULT_MAX_EDGES, hetero: bool | None = None):
    """A stored graph as a ``torch_geometric.data.Data`` (or ``HeteroData``), read into
    memory.

    With ``hetero`` (default: when the graph has several entity types) the result is a
    ``HeteroData``: per entity type its nodes in ascending original-id order with
    ``num_nodes``, ``n_id`` and its node columns (PyG names), per relation type ``(lhs,
    name, rhs)`` its ``edge_index`` in those positions (``edge_weight`` when weighted).
    Otherwise (one entity type, relations ignored):

    Nodes are in ascending original-id order (``0..N-1`` for a graph built by a ``from_*``
    function, whatever its partitioning). Node columns map back as PyG names them
    (``feat`` as ``x``, ``label`` as ``y``, masks by name; a string column, such as
    MovieLens' ``title``, as a Python list of ``str``, None where null); ``edge_weight``
    when weighted; ``n_id`` holds the original ids (integer ids).

    Parameters
    ----------
    graph : Graph
        A graph (several entity types need ``hetero``).
    edge_set : str, optional
        The edge set (default: the only one, or ``default``/``train``).
    max_edges : int or None, default 100_000_000
        Refuse, in one line, a graph with more edges (None: no limit).
    hetero : bool, optional
        Return a ``HeteroData`` (default: when the graph has several entity types).

    Returns
    -------
    torch_geometric.data.Data or torch_geometric.data.HeteroData
        ``edge_index`` int64 (2, E) (per edge type for ``HeteroData``).

    Raises
    ------
    GraphsysError
        More than ``max_edges`` edges, several entity types without ``hetero``, or no
        ``torch_geometric``.

    Examples
    --------
    >>> import tempfile, torch, graphsys
    >>> from torch_geometric.data import Data
    >>> data = Data(x=torch.eye(3), y=torch.tensor([0, 1, 0]),
    ...             edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]]))
    >>> back = graphsys.to_pyg(graphsys.from_pyg(data, tempfile.mkdtemp() + "/g"))
    >>> back.edge_index.tolist(), back.y.tolist()
    ([[0, 1, 2], [1, 2, 0]], [0, 1, 0])

    Typed graphs round-trip through ``HeteroData``:

    >>> from torch_geometric.data import HeteroData
    >>> hd = HeteroData()
    >>> hd["user"].num_nodes = 2
    >>> hd["item"].x = torch.eye(3)
    >>> hd["user", "rates", "item"].edge_index = torch.tensor([[0, 1, 1], [2, 0, 1]])
    >>> back = graphsys.to_pyg(graphsys.from_pyg(hd, tempfile.mkdtemp() + "/h"))
    >>> back["user", "rates", "item"].edge_index.tolist(), back["item"].x.shape
    ([[0, 1, 1], [2, 0, 1]], torch.Size([3, 3]))
    """
    import torch

    pyg = _import_pyg()
    # "no" was read as True (a HeteroData of one type)
    hetero = len(graph.entity_types) > 1 if hetero is None else check_flag("hetero", hetero)
    if hetero:
        return _to_hetero(graph, edge_set, max_edges, pyg)
    ex = export_arrays(graph, edge_set=edge_set, max_edges=max_edges, what="to_pyg")
    data = pyg.data.Data(edge_index=torch.from_numpy(ex.edge_index),
                         num_nodes=ex.num_nodes)
    for name, col in ex.columns.items():
        data[_TO_PYG.get(name, name)] = _pyg_value(col)
    if ex.weight is not None:
        data.edge_weight = torch.from_numpy(ex.weight)
    if isinstance(ex.ids, np.ndarray):
        data.n_id = torch.from_numpy(ex.ids)
    return data


def _node_columns(items, n: int, node_attr=lambda key: True, whole_y: bool = False
                  ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Node-level tensors among the ``(key, value)`` attributes of a PyG store (tensors
    whose key ``node_attr`` accepts) as graphsys node columns (``x`` as ``feat``, ``y`` as
    ``label``), and the names of the attributes left out (among them ``id``, the ids' own
    column, and tensors with no value per node). A float ``y`` keeps its name,
    except with ``whole_y`` a 1-D one of whole numbers: class ids stored as floats are
    labels, other float targets (regression) are not (a label holds integer classes)."""
    import torch

    columns, dropped = {}, []
    for key, value in items:
        if key == "num_nodes":
            continue
        if _is_strings(value, n):
            columns[key] = np.asarray(value, dtype=object)
        elif (torch.is_tensor(value) and node_attr(key) and value.shape[:1] == (n,)
                and key != "id" and (value.dim() == 1 or value[0].numel() > 0)
                and (value.is_floating_point() or value.dim() == 1)):
            array = value.detach().cpu().numpy()
            if key == "y" and array.dtype.kind == "f":
                if not (whole_y and array.ndim == 1 and np.isfinite(array).all()
                        and (array == np.round(array)).all()):
                    columns["y"] = array
                    continue
                array = array.astype(np.int64)
            columns[_TO_GRAPHSYS.get(key, key)] = array
        else:
            dropped.append(key)
    return columns, dropped


def _from_hetero(data, out: str | Path, options: dict) -> Graph:
    """:func:`from_pyg` of a ``HeteroData``: a typed graph."""
    from graphsys.interop._common import ingest_typed

    nodes, edges, dropped = [], [], []
    for t in data.node_types:
        n = int(data[t].num_nodes)
        cols, dr = _node_columns(data[t].items(), n)
        dropped += [f"{t}.{k}" for k in dr]
        nodes.append((t, n, cols))
    for et in data.edge_types:
        store = data[et]
        ei = store.get("edge_index")
        if ei is None or ei.dim() != 2 or ei.shape[0] != 2:
            raise InputError(f"from_pyg: edge type {et} has no (2, E) edge_index")
        # the edge weight: edge_weight, else a 1-D edge_attr (as for a Data); an edge type
        # without one gets weight 1.0 when others have one (ingest_typed: "filled")
        used = _weight_key(store, ei.shape[1])
        edges.append((*et, ei[0], ei[1], store[used].detach() if used else None))
        dropped += [f"{et}.{k}" for k in store.keys() if k not in ("edge_index", used)]
    return ingest_typed(nodes, edges, out, what="from_pyg", options=options,
                        metadata={"source": "torch_geometric", "dropped": dropped})


def _weight_key(store, num_edges: int) -> str | None:
    """The attribute of a PyG store that holds the edge weight: ``edge_weight``, else a 1-D
    ``edge_attr`` (PyG's convolutions read ``edge_weight`` as the weight, ``edge_attr`` as
    edge features), when it is a 1-D tensor of one number per edge; None for neither."""
    import torch

    for key in ("edge_weight", "edge_attr"):
        value = getattr(store, key, None)
        if torch.is_tensor(value) and value.dim() == 1 and value.shape[0] == num_edges:
            return key
    return None


def _is_strings(value, n: int) -> bool:
    """``value`` is a list of ``n`` strings (a None among them is refused at ingest: string
    columns hold no nulls): a string node column (PyG keeps such attributes as lists)."""
    return (isinstance(value, (list, tuple)) and len(value) == n and n > 0
            and all(v is None or isinstance(v, str) for v in value))


def _pyg_value(col: np.ndarray):
    """A node column as PyG holds it: a tensor, or a list of ``str`` for a string column
    (torch has no string tensors; PyG treats a list of N items as a node attribute)."""
    import torch

    return col.tolist() if col.dtype == object else torch.from_numpy(col)


def _to_hetero(graph: Graph, edge_set: str | None, max_edges: int | None, pyg):
    """:func:`to_pyg` as a ``HeteroData``."""
    import torch

    from graphsys.interop._common import export_typed

    ex = export_typed(graph, edge_set=edge_set, max_edges=max_edges, what="to_pyg")
    data = pyg.data.HeteroData()
    for t, (n, ids, cols) in ex.nodes.items():
        store = data[t]
        store.num_nodes = n
        if ids is not None:
            store.n_id = torch.from_numpy(ids)
        for name, col in cols.items():
            store[_TO_PYG.get(name, name)] = _pyg_value(col)
    for lhs, name, rhs, s, d, w in ex.edges:
        store = data[lhs, name, rhs]
        store.edge_index = torch.from_numpy(np.stack([s, d]))
        if w is not None:
            store.edge_weight = torch.from_numpy(w)
    return data
