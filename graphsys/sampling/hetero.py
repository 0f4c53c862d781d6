"""Typed (heterogeneous) blocks and neighbour sampling with per-relation fanouts.

A stored graph has entity types and relation types (``lhs -> rhs``). Its GNN view here has
one *canonical relation* ``(src_type, name, dst_type)`` per stored relation type and, with
``reverse``, one ``(dst_type, "rev_" + name, src_type)`` per stored relation for the
messages that flow against the stored direction (PyG's ``ToUndirected`` naming).

Two forms of the same message-flow graph:

* :class:`TypedBlock`: a :class:`~graphsys.sampling.Block` over *global* node ids (the
  storage layer's id space: type offsets, then type-local ids) whose edges carry their
  relation id, what :class:`~graphsys.gnn.RGCNConv` takes (PyG's ``to_homogeneous`` view:
  ``edge_type``, node ids that encode the type).
* :class:`HeteroBlock`: per node type its source nodes (type-local, destinations first)
  and per canonical relation its edges: what :class:`~graphsys.gnn.HeteroConv` takes
  (PyG's ``HeteroData`` of one layer, DGL's heterogeneous block).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from graphsys.errors import GraphsysError, ParameterError
from graphsys.sampling import _kernels as K
from graphsys.sampling._util import as_seed_array, derive_seed, run_parallel, scratch
from graphsys.sampling.base import LayerwiseSampler
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import parse_fanouts, pick_neighbors
from graphsys.storage.graph import Graph
from graphsys.views import view

#: A canonical relation: ``(source node type, relation name, destination node type)``.
Relation = tuple[str, str, str]


@dataclass(frozen=True)
class TypedBlock(Block):
    """A :class:`~graphsys.sampling.Block` whose edges carry relation ids.

    ``edge_type``: int64 (E,) the relation of each edge, an index into the sampler's
    :attr:`HeteroNeighborSampler.relations`. Node ids in ``src_nodes`` are global ids
    (``graph.type_offsets[t]`` + type-local id).

    Examples
    --------
    Nodes 1 and 2 with all their in-neighbours, by relation:

    >>> import tempfile, pyarrow as pa
    >>> from graphsys.sampling import HeteroNeighborSampler
    >>> from graphsys.storage.graph import open_graph
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> edges = pa.table({"src": [0, 0, 1], "dst": [1, 2, 2], "rel": ["likes", "knows", "knows"]})
    >>> out = tempfile.mkdtemp() + "/kg"
    >>> _ = ingest_sources([EdgeSource(table=edges, src_col="src", dst_col="dst", rel_col="rel")],
    ...                    out, IngestOptions())
    >>> sampler = HeteroNeighborSampler(open_graph(out), [-1], reverse=False)
    >>> block = sampler.sample_blocks([1, 2])[0]
    >>> block.src_nodes.tolist(), [sampler.relations[t][1] for t in block.edge_type.tolist()]
    ([1, 2, 0], ['likes', 'knows', 'knows'])
    """

    edge_type: torch.Tensor | None = None

    def to_pyg(self):
        """As :meth:`Block.to_pyg`, plus ``edge_type``."""
        data = super().to_pyg()
        data.edge_type = self.edge_type
        return data

    def to_hetero(self, type_offsets: Mapping[str, int], relations: Sequence[Relation]
                  ) -> HeteroBlock:
        """This block per node type and relation: type-local ids, each type's
        destinations first (their order kept), edges grouped by canonical relation
        (``relations[edge_type]``; relations without edges are left out)."""
        names = list(type_offsets)
        bases = np.array([type_offsets[t] for t in names], np.int64)
        order = np.argsort(bases, kind="stable")
        ids = self.src_nodes.cpu().numpy()
        tix = order[np.searchsorted(bases[order], ids, side="right") - 1]
        # position of every source node within its own type
        pos = np.empty(len(ids), np.int64)
        src_nodes, n_dst = {}, {}
        is_dst = np.arange(len(ids)) < self.num_dst_nodes
        for k, t in enumerate(names):
            sel = np.flatnonzero(tix == k)
            if len(sel) == 0:
                continue
            pos[sel] = np.arange(len(sel))
            src_nodes[t] = torch.from_numpy(ids[sel] - bases[k])
            n_dst[t] = int(is_dst[sel].sum())
        es, ed = self.edge_src.cpu().numpy(), self.edge_dst.cpu().numpy()
        et = self.edge_type.cpu().numpy()
        edges = {}
        for r in np.unique(et):
            sel = np.flatnonzero(et == r)
            edges[tuple(relations[r])] = (torch.from_numpy(pos[es[sel]]),
                                          torch.from_numpy(pos[ed[sel]]))
        return HeteroBlock(src_nodes, n_dst, edges)


@dataclass(frozen=True)
class HeteroBlock:
    """One layer's message-flow graph per node type and relation.

    ``src_nodes[t]``: int64 type-local ids of type ``t``'s source nodes, its
    ``num_dst_nodes[t]`` destinations first; ``edges[(s, r, d)]``: ``(edge_src,
    edge_dst)``, int64 (E,) positions in ``src_nodes[s]`` and in the destinations of
    ``d``. A type with no destinations in this layer has ``num_dst_nodes[t] == 0``.

    Examples
    --------
    >>> import torch
    >>> from graphsys.sampling import HeteroBlock
    >>> b = HeteroBlock({"user": torch.tensor([3, 5]), "item": torch.tensor([0])},
    ...                 {"user": 0, "item": 1},
    ...                 {("user", "rates", "item"): (torch.tensor([0, 1]), torch.tensor([0, 0]))})
    >>> rb = b.relation_block(("user", "rates", "item"))
    >>> rb.num_dst_nodes, rb.num_src_nodes, rb.edge_src.tolist()
    (1, 3, [1, 2])
    """

    src_nodes: dict[str, torch.Tensor]
    num_dst_nodes: dict[str, int]
    edges: dict[Relation, tuple[torch.Tensor, torch.Tensor]]

    @property
    def node_types(self) -> list[str]:
        return list(self.src_nodes)

    @property
    def relations(self) -> list[Relation]:
        return list(self.edges)

    def dst_nodes(self, node_type: str) -> torch.Tensor:
        """int64 type-local ids of ``node_type``'s destinations."""
        return self.src_nodes[node_type][: self.num_dst_nodes.get(node_type, 0)]

    def num_edges(self, relation: Relation | None = None) -> int:
        """Edges of ``relation``, or of every relation."""
        if relation is not None:
            return int(self.edges[relation][0].shape[0])
        return sum(int(s.shape[0]) for s, _ in self.edges.values())

    def relation_block(self, relation: Relation) -> Block:
        """``relation``'s edges as a plain :class:`~graphsys.sampling.Block` that any
        homogeneous conv runs on: its source nodes are ``d``'s destinations then ``s``'s
        sources (so ``x = torch.cat([x_d[:n_dst], x_s])`` is its input and a conv's
        self term reads the destinations' own rows); ``src_nodes`` holds type-local ids of
        both types, for reference only."""
        s, _, d = relation
        es, ed = self.edges[relation]
        n = self.num_dst_nodes.get(d, 0)
        return Block(torch.cat([self.dst_nodes(d), self.src_nodes[s]]), n, es + n, ed)

    def edge_index(self, relation: Relation) -> torch.Tensor:
        """int64 (2, E): PyG's bipartite ``edge_index`` of ``relation`` (row 0 positions in
        ``src_nodes[s]``, row 1 in ``d``'s destinations), for ``conv((x_s, x_d),
        edge_index)``."""
        return torch.stack(self.edges[relation])

    def to(self, device: str | torch.device, non_blocking: bool = False) -> HeteroBlock:
        """A copy with every tensor on ``device``."""
        mv = (lambda t: t.to(device, non_blocking=non_blocking))
        return HeteroBlock({t: mv(v) for t, v in self.src_nodes.items()},
                           dict(self.num_dst_nodes),
                           {r: (mv(a), mv(b)) for r, (a, b) in self.edges.items()})


def _relation_fanout(rel: Relation, v) -> list[int]:
    """One relation's fanouts as ints: ``"2,0"`` or a sequence of integers (1.5 is not cut
    to 1, nor True read as 1); a one-line ParameterError otherwise."""
    try:
        if isinstance(v, str):
            return [int(x) for x in v.split(",")]
        if any(isinstance(x, (bool, np.bool_)) for x in v):
            raise TypeError
        return [operator.index(x) for x in v]
    except (TypeError, ValueError):
        raise ParameterError("fanouts", f"relation {rel!r}: fanouts must be integers >= -1 "
                                        f"(-1: every neighbour, 0: none), got {v!r}") from None


def _relation_fanouts(fanouts, relations: list[Relation]) -> list[list[int]]:
    """One fanout list per relation (input layer first): a list for every relation, or a
    mapping by canonical relation or relation name (every relation listed; 0 = none)."""
    if not isinstance(fanouts, Mapping):
        return [parse_fanouts(fanouts)] * len(relations)
    known = set(relations) | {r[1] for r in relations}
    unknown = [k for k in fanouts if k not in known]
    if unknown:     # a misspelt or foreign relation was ignored without a word
        raise ParameterError("fanouts", f"{unknown[0]!r} is no relation of the sampler "
                                        f"(relations: {', '.join(r[1] for r in relations)})")
    out = []
    for rel in relations:
        v = fanouts.get(rel, fanouts.get(rel[1]))
        if v is None:
            raise ParameterError("fanouts", f"no fanouts for relation {rel!r} (give every "
                                 f"relation, by (src, name, dst) or name; 0 samples none)")
        vals = _relation_fanout(rel, v)
        if not vals or any(x < -1 or x >= 2**63 for x in vals):
            raise ParameterError("fanouts", f"relation {rel!r}: fanouts must be integers >= "
                                 f"-1 (-1: every neighbour, 0: none), got {v!r}")
        out.append(vals)
    if len({len(v) for v in out}) > 1:
        raise ParameterError("fanouts", "every relation needs one fanout per layer (lists "
                             "of the same length)")
    return out


class HeteroNeighborSampler(LayerwiseSampler):
    """Uniform neighbour sampling on a typed graph with per-relation, per-layer fanouts:
    DGL's ``MultiLayerNeighborSampler([{etype: k}, ...])``, PyG's ``NeighborLoader`` on
    ``HeteroData`` with ``num_neighbors={edge_type: [...]}``.

    Every destination node draws, for each relation ending at its type, up to that
    relation's fanout of in-neighbours along it (``-1``: all, ``0``: none); layers are
    listed input side first, as :class:`~graphsys.sampling.NeighborSampler`. Nodes are
    global ids (``graph.type_offsets[t]`` + type-local id), so :meth:`sample_blocks`
    returns :class:`TypedBlock` s (the :class:`~graphsys.sampling.Sampler` protocol) and
    :meth:`sample_hetero_blocks` per-type :class:`HeteroBlock` s.

    Parameters
    ----------
    graph : Graph
        A stored graph; its relation types give the relations.
    fanouts : sequence of int, str or mapping
        One fanout list for every relation (``[10, 25]`` or ``"10,25"``), or a mapping
        from a canonical relation ``(src, name, dst)`` or a relation name (``rev_`` +
        name for a reverse relation) to its list; a mapping must list every relation.
    edge_set : str, optional
        Stored edge set whose edges are sampled (default: the graph's default).
    reverse : bool, optional
        Also sample each relation against its stored direction as ``rev_`` + name
        (default True), so both endpoint types receive messages.
    replace : bool, optional
        Sample with replacement (default False).

    Attributes
    ----------
    relations : list of (str, str, str)
        Canonical relations; a :class:`TypedBlock`'s ``edge_type`` indexes it (the stored
        relation types in order, then their reverses).

    See Also
    --------
    graphsys.gnn.RGCNConv : the convolution over :class:`TypedBlock` s.
    graphsys.gnn.HeteroConv : one convolution per relation over :class:`HeteroBlock` s.

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation Learning on
       Large Graphs", NeurIPS 2017, https://arxiv.org/abs/1706.02216.

    Examples
    --------
    >>> import tempfile, pyarrow as pa
    >>> from graphsys.sampling import HeteroNeighborSampler
    >>> from graphsys.storage.graph import open_graph
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> edges = pa.table({"src": [0, 0, 1], "dst": [1, 2, 2],
    ...                   "rel": ["likes", "knows", "knows"]})
    >>> out = tempfile.mkdtemp() + "/kg"
    >>> _ = ingest_sources([EdgeSource(table=edges, src_col="src", dst_col="dst", rel_col="rel")],
    ...                    out, IngestOptions())
    >>> sampler = HeteroNeighborSampler(open_graph(out), [-1], reverse=False)
    >>> sampler.relations
    [('node', 'likes', 'node'), ('node', 'knows', 'node')]
    >>> b = sampler.sample_blocks([2])[0]         # node 2's in-neighbours: 0 and 1, 'knows'
    >>> b.src_nodes.tolist(), b.edge_type.tolist()
    ([2, 0, 1], [1, 1])
    """

    def __init__(self, graph: Graph, fanouts, *, edge_set: str | None = None,
                 reverse: bool = True, replace: bool = False):
        rts, typed = graph.relation_types, view(graph, "typed", edge_set=edge_set)
        self.relations: list[Relation] = [(r.lhs, r.name, r.rhs) for r in rts] + (
            [(r.rhs, "rev_" + r.name, r.lhs) for r in rts] if reverse else [])
        twice = next((r for k, r in enumerate(self.relations) if r in self.relations[:k]), None)
        if twice is not None:   # a HeteroBlock keyed by it kept one relation's edges
            raise GraphsysError(f"relation {twice!r} is both a stored relation and the reverse "
                                f"of one; rename the stored one or sample with reverse=False")
        # each relation's in-rows (type-local rows, global ids): the typed view's
        self._adj = list(typed.csc + typed.csr if reverse else typed.csc)
        self.fanouts = _relation_fanouts(fanouts, self.relations)
        self.replace = bool(replace)
        toff = graph.type_offsets
        self.type_offsets = {t: int(toff[t]) for t in graph.entity_types}
        self._type_sizes = {t: graph.num_nodes(t) for t in graph.entity_types}
        self._num_nodes = sum(self._type_sizes.values())

    @property
    def num_nodes(self) -> int:
        """Nodes of every type (global ids lie in ``[0, num_nodes)``)."""
        return self._num_nodes

    @property
    def num_layers(self) -> int:
        return len(self.fanouts[0]) if self.fanouts else 0

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    def global_ids(self, seeds: Mapping[str, object]) -> np.ndarray:
        """``{type: type-local ids}`` as global ids, types in the mapping's order."""
        parts = []
        for t, ids in seeds.items():
            if t not in self._type_sizes:
                raise ParameterError("seeds", f"unknown node type {t!r} (the graph has "
                                     f"{', '.join(self._type_sizes)})")
            parts.append(as_seed_array(ids, self._type_sizes[t]) + self.type_offsets[t])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def sample_hetero_blocks(self, seeds: Mapping[str, object], rng_seed: int = 0
                             ) -> list[HeteroBlock]:
        """The blocks of one batch per node type and relation, input layer first.

        Parameters
        ----------
        seeds : mapping
            ``{node type: unique type-local ids}``; ``blocks[-1].dst_nodes(t)`` are them.
        rng_seed : int, optional
            Seed of the batch's random choices (default 0).

        Returns
        -------
        list of HeteroBlock
        """
        blocks = self.sample_blocks(self.global_ids(seeds), rng_seed)
        return [b.to_hetero(self.type_offsets, self.relations) for b in blocks]

    def _layer_block(self, dst: np.ndarray, layer: int, rng_seed: int, *,
                     parallel: bool | None = None, check: bool = True) -> TypedBlock:
        sc = scratch(self._num_nodes)
        if check and K.has_duplicates(dst, sc):
            raise GraphsysError("seed ids must be unique within a batch")
        par = run_parallel(parallel)
        nbrs, dsts, types = [], [], []
        for k, ((_, _, d_t), rows) in enumerate(zip(self.relations, self._adj, strict=True)):
            fan = self.fanouts[k][layer]
            if fan == 0:
                continue
            lo = self.type_offsets[d_t]
            pos = np.flatnonzero((dst >= lo) & (dst < lo + self._type_sizes[d_t]))
            if len(pos) == 0:
                continue
            # one random stream per relation
            nbr, counts, _ = pick_neighbors(rows, dst[pos] - lo, fan, self.replace,
                                            derive_seed(rng_seed, k), par)
            nbrs.append(nbr)
            dsts.append(np.repeat(pos, counts))
            types.append(np.full(len(nbr), k, np.int64))
        cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
        nbr, edge_dst, etype = cat(nbrs), cat(dsts), cat(types)
        src_nodes, local = K.relabel(dst, nbr, sc)
        return TypedBlock(torch.from_numpy(src_nodes), len(dst), torch.from_numpy(local),
                          torch.from_numpy(edge_dst), None, torch.from_numpy(etype))

    def __repr__(self) -> str:
        return (f"HeteroNeighborSampler(relations={len(self.relations)}, layers="
                f"{self.num_layers}, replace={self.replace}, nodes={self.num_nodes})")
