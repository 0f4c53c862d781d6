"""Heterogeneous GNN building blocks: one convolution per relation (:class:`HeteroConv`)
and per-type input features (:class:`TypedInput`)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from graphsys.errors import ParameterError
from graphsys.sampling.hetero import HeteroBlock, Relation

#: Names ``nn.ModuleDict`` refuses as keys (its attributes: ``items``, ``keys``, ``train``).
_TAKEN = frozenset(dir(nn.ModuleDict))


def _key(*parts: str) -> str:
    """A module-dict key of a node type or canonical relation: the parts joined by ``__``,
    ``.`` written ``#`` and an attribute's name (a type named ``items``) written ``<items>``,
    as PyG's ``ModuleDict`` does (``nn.ModuleDict`` and buffer names refuse both, which
    stored type names may be)."""
    key = "__".join(parts).replace(".", "#")
    return f"<{key}>" if key in _TAKEN else key


def _keys(names: list, what: str) -> list[str]:
    """:func:`_key` of each name, refused in one line where two names share a key (they
    would share one module's weights)."""
    keys, seen = [], {}
    for n in names:
        k = _key(*n) if isinstance(n, tuple) else _key(n)
        if k in seen:
            raise ParameterError(what, f"{seen[k]!r} and {n!r} have one module key {k!r} "
                                 f"(rename one)")
        seen[k] = n
        keys.append(k)
    return keys


class HeteroConv(nn.Module):
    r"""One convolution per relation, combined per destination type: PyG's ``HeteroConv``,
    DGL's ``HeteroGraphConv``.

    .. math::
        \mathbf{h}'_{v} = \operatorname{AGG}_{(s, r, d) :\, d = \tau(v)}
        \operatorname{conv}_{(s, r, d)}\big(\mathbf{H}_s, \mathbf{H}_d\big)_v

    with :math:`\operatorname{AGG}` the sum, mean or max over the relations that end at
    ``v``'s type :math:`\tau(v)` and have edges in the block (a type that no relation reaches
    gets no output).

    Parameters
    ----------
    convs : mapping
        ``{(src_type, name, dst_type): conv}``. A graphsys conv is called as ``conv(x,
        block)`` on :meth:`HeteroBlock.relation_block` (its input is the destination rows of
        ``dst_type`` then the source rows of ``src_type``, so both need the same width); a
        PyG ``MessagePassing`` as ``conv((x_src, x_dst), edge_index)``.
    aggr : {"sum", "mean", "max"}, optional
        How the relations' outputs combine (default ``"sum"``).

    Notes
    -----
    Shapes: ``x`` maps each node type to float (len(block.src_nodes[t]), F); the output
    maps each destination type to (block.num_dst_nodes[t], F'). Relations of the module
    missing from the block (no sampled edges) are skipped; a block relation without a conv
    is an error.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import HeteroConv, SAGEConv
    >>> from graphsys.sampling import HeteroBlock
    >>> rel = ("user", "rates", "item")
    >>> block = HeteroBlock({"user": torch.tensor([0, 1]), "item": torch.tensor([4])},
    ...                     {"user": 0, "item": 1},
    ...                     {rel: (torch.tensor([0, 1]), torch.tensor([0, 0]))})
    >>> conv = HeteroConv({rel: SAGEConv(3, 2)}, aggr="sum")
    >>> out = conv({"user": torch.randn(2, 3), "item": torch.randn(1, 3)}, block)
    >>> {t: tuple(v.shape) for t, v in out.items()}
    {'item': (1, 2)}
    """

    def __init__(self, convs: Mapping[Relation, nn.Module], aggr: str = "sum"):
        super().__init__()
        if aggr not in ("sum", "mean", "max"):
            raise ParameterError("aggr", f"must be 'sum', 'mean' or 'max', got {aggr!r}")
        self.relations = [tuple(r) for r in convs]
        for r in self.relations:
            if len(r) != 3:
                raise ParameterError("convs", f"relation {r!r} is not (src, name, dst)")
        self.convs = nn.ModuleDict(dict(zip(_keys(self.relations, "convs"),
                                            convs.values(), strict=True)))
        self.aggr = aggr

    def forward(self, x: Mapping[str, torch.Tensor], block: HeteroBlock
                ) -> dict[str, torch.Tensor]:
        outs: dict[str, list[torch.Tensor]] = {}
        for rel in block.relations:
            k = _key(*rel)
            if k not in self.convs:
                raise ParameterError("convs", f"the block has edges of relation {rel!r} "
                                     f"but no conv is given for it")
            s, _, d = rel
            for t in (s, d):
                if t not in x:
                    raise ParameterError("x", f"no input features for node type {t!r}")
            conv = self.convs[k]
            x_dst = x[d][:block.num_dst_nodes.get(d, 0)]
            if _is_pyg(conv):
                y = conv((x[s], x_dst), block.edge_index(rel))
            else:
                y = conv(torch.cat([x_dst, x[s]]), block.relation_block(rel))
            outs.setdefault(d, []).append(y)
        reduce = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax}[self.aggr]
        return {t: reduce(torch.stack(ys), 0) for t, ys in outs.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(relations={len(self.relations)}, aggr={self.aggr!r})"


def _is_pyg(conv: nn.Module) -> bool:
    """A PyG ``MessagePassing`` (taken by its module name: PyG is optional)."""
    return any(c.__module__.startswith("torch_geometric") for c in type(conv).__mro__)


class TypedInput(nn.Module):
    """Input rows of every node type at one width: a linear projection of the type's
    features where it has some, else a learned embedding per node (featureless types, as
    R-GCN's one-hot input).

    Parameters
    ----------
    num_nodes : mapping
        ``{node type: node count}``, in the graph's type order (global ids are the
        types' offsets in this order plus type-local ids).
    dim : int
        Output width.
    features : mapping, optional
        ``{node type: float tensor (num_nodes[t], F_t)}`` for the types with features.
    init_std : float, optional
        Standard deviation of the normal initial embeddings (default 1.0).

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import TypedInput
    >>> inp = TypedInput({"user": 3, "item": 2}, 4, features={"item": torch.randn(2, 6)})
    >>> inp(torch.tensor([0, 4, 3])).shape     # user 0, item 1, item 0
    torch.Size([3, 4])
    """

    def __init__(self, num_nodes: Mapping[str, int], dim: int, *,
                 features: Mapping[str, torch.Tensor] | None = None, init_std: float = 1.0):
        super().__init__()
        features = dict(features or {})
        unknown = set(features) - set(num_nodes)
        if unknown:
            raise ParameterError("features", f"unknown node type(s) {sorted(unknown)}")
        self.types = list(num_nodes)
        self._keys = _keys(self.types, "num_nodes")
        self.dim = dim
        sizes = [0] + [int(num_nodes[t]) for t in self.types]
        self.register_buffer("offsets", torch.tensor(sizes).cumsum(0), persistent=False)
        self.emb = nn.ModuleDict()
        self.proj = nn.ModuleDict()
        for t, key in zip(self.types, self._keys, strict=True):
            if t in features:
                f = torch.as_tensor(features[t], dtype=torch.float32)
                if f.dim() != 2 or f.shape[0] != num_nodes[t]:
                    raise ParameterError("features", f"type {t!r}: shape {tuple(f.shape)}, "
                                         f"expected ({num_nodes[t]}, F)")
                self.register_buffer(f"feat_{key}", f, persistent=False)
                self.proj[key] = nn.Linear(f.shape[1], dim)
            else:
                e = nn.Embedding(int(num_nodes[t]), dim)
                nn.init.normal_(e.weight, std=init_std)
                self.emb[key] = e

    @property
    def num_nodes(self) -> int:
        return int(self.offsets[-1])

    def forward(self, nodes: torch.Tensor) -> torch.Tensor:
        """Rows (len(nodes), dim) of the global ids ``nodes``."""
        out = None
        one = len(self.types) == 1
        tix = None if one else torch.searchsorted(self.offsets, nodes, right=True) - 1
        for k, t in enumerate(self._keys):
            # one type: every row, without a data-dependent selection (a host sync on CUDA)
            sel = None if one else torch.nonzero(tix == k).squeeze(1)
            local = (nodes if sel is None else nodes[sel]) - self.offsets[k]
            if t in self.emb:
                rows = self.emb[t](local)
            else:
                rows = self.proj[t](getattr(self, f"feat_{t}")[local])
            if sel is None:
                return rows
            if out is None:
                out = rows.new_zeros(len(nodes), self.dim)
            out = out.index_copy(0, sel, rows)
        return out if out is not None else torch.zeros(len(nodes), self.dim)
