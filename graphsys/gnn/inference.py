"""Streaming inference: every node's final representation, one layer over all nodes at a
time and partition by partition (PinSage's MapReduce-style inference, which computes each
node's layer-``l`` state once instead of once per neighbourhood it appears in).

``graphsys gnn embed`` (:func:`graphsys.gnn.embed_checkpoint`) writes the outputs, partition
by partition, as an Arrow embedding directory (:mod:`graphsys.storage.embedding_files`),
which :meth:`graphsys.embed.Embeddings.load` reads back (``vector``, ``vectors``,
``to_numpy``, ``nearest`` by cosine or dot, the exports).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from graphsys.device import resolve_device
from graphsys.execution import OPTION_DOCS, fill_doc
from graphsys.gnn.model import GNN
from graphsys.progress import display
from graphsys.sampling.block import Block
from graphsys.storage.graph import Graph

#: Destination nodes per inference step inside a partition.
CHUNK_ROWS = 1 << 14


@torch.no_grad()
@fill_doc(progress=OPTION_DOCS["progress"])
def layerwise_inference(model: GNN, inputs: Callable[[torch.Tensor], torch.Tensor],
                        num_nodes: int, block_fn: Callable[[np.ndarray, int], Block],
                        ranges: list[tuple[int, int]], *, device: str | torch.device = "cpu",
                        on_partition: Callable[[int, torch.Tensor], None] | None = None,
                        chunk_rows: int = CHUNK_ROWS,
                        progress: bool | Callable = False) -> torch.Tensor:
    """Every node's final output of ``model``, computed one layer over all nodes at a time.

    Layer ``l`` is computed for every node, ``chunk_rows`` destinations at a time, before
    layer ``l + 1`` starts, so each node's layer-``l`` state is computed once instead of
    once per neighbourhood it appears in (PinSage's MapReduce inference). The states of
    one layer (num_nodes x width floats) are held in CPU memory.

    Parameters
    ----------
    model : GNN
        The model (put in eval mode); :meth:`GNN.layer` runs each layer.
    inputs : callable
        Node ids int64 (n,) on ``device`` -> layer-0 features (n, in_dim).
    num_nodes : int
        Nodes ``0..num_nodes-1`` are computed.
    block_fn : callable
        ``(dst_nodes int64 (n,), layer) -> Block`` with those destinations (full
        neighbourhoods, or a fixed-seed sample).
    ranges : list of (int, int)
        ``(lo, hi)`` node ranges covering all nodes, one per storage partition.
    device : str or torch.device, optional
        Where the layers run (default ``"cpu"``).
    on_partition : callable, optional
        Called as ``(k, outputs of range k)`` when a range's final outputs are ready (to
        stream them to disk).
    chunk_rows : int, optional
        Destinations per step.
    %(progress)s

    Returns
    -------
    torch.Tensor
        float32 (num_nodes, out_dim) on the CPU.

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    On full neighbourhoods, layer-wise inference gives what the model computes on each
    node's whole 2-hop neighbourhood:

    >>> import numpy as np, torch
    >>> from graphsys.gnn import GNN, layerwise_inference
    >>> from graphsys.sampling import NeighborSampler, from_coo
    >>> rng = np.random.default_rng(0)
    >>> s, d = rng.integers(0, 30, 90), rng.integers(0, 30, 90)
    >>> adj = from_coo(np.r_[s, d], np.r_[d, s], 30, 30)
    >>> x = torch.randn(30, 4)
    >>> model = GNN("sage", 4, 8, 3).eval()
    >>> full = NeighborSampler(adj, [-1])                  # every neighbour, any layer
    >>> out = layerwise_inference(model, lambda ids: x[ids], 30,
    ...                           lambda dst, layer: full.sample_blocks(dst)[0],
    ...                           [(0, 15), (15, 30)])
    >>> blocks = NeighborSampler(adj, [-1, -1]).sample_blocks(np.arange(30))
    >>> torch.allclose(out, model(blocks, x[blocks[0].src_nodes]), atol=1e-5)
    True
    """
    model.eval()
    device = resolve_device(device)
    prev: torch.Tensor | None = None
    projected = False
    with display(progress, total=model.num_layers * num_nodes, unit="node", unit_scale=True,
                 dynamic_ncols=True, desc="embed") as bar:
        for layer in range(model.num_layers):
            bar.set_description(f"embed layer {layer + 1}/{model.num_layers}")
            last = layer == model.num_layers - 1
            project_next = not last and model.projects_input(layer + 1)
            out: torch.Tensor | None = None
            for k, (lo, hi) in enumerate(ranges):
                parts = []
                rows = _RowScratch()
                for a in range(lo, hi, chunk_rows):
                    b = min(hi, a + chunk_rows)
                    block = block_fn(np.arange(a, b, dtype=np.int64), layer).to(device)
                    src = block.src_nodes
                    x = inputs(src) if prev is None else rows.take(prev, src.cpu()).to(device)
                    h = model.layer(layer, x, block, projected=projected)
                    parts.append(rows.own(model.project_input(layer + 1, h) if project_next
                                          else h))
                    bar.update(b - a)
                h = torch.cat(parts) if parts else torch.zeros(0, model.out_dim)
                if out is None:
                    out = torch.empty(num_nodes, h.shape[1])
                out[lo:hi] = h
                if last and on_partition is not None:
                    on_partition(k, h)
            prev, projected = out, project_next
    return prev


def partition_ranges(graph: Graph, entity_type: str) -> list[tuple[int, int]]:
    """Type-local node range of each storage partition of ``entity_type``."""
    off = graph.partition_offsets(entity_type)
    return [(int(off[p]), int(off[p + 1])) for p in range(len(off) - 1)]


@torch.no_grad()
def layerwise_inference_on(model: GNN, inputs: Callable[[torch.Tensor], torch.Tensor],
                           seeds: torch.Tensor | np.ndarray,
                           block_fn: Callable[[np.ndarray, int], Block], *,
                           device: str | torch.device = "cpu",
                           chunk_rows: int = CHUNK_ROWS, plan: dict | None = None,
                           plan_bytes: int = 0) -> torch.Tensor:
    """The final outputs of ``model`` for ``seeds`` only, layer by layer over the nodes
    they need: layer ``l`` is computed once for every node of the seeds' ``L - l``-hop
    neighbourhood (what :func:`layerwise_inference` computes for all nodes, restricted).

    ``block_fn`` as in :func:`layerwise_inference` (full neighbourhoods, or a sample fixed
    by its own seed); ``seeds`` int64 (S,) node ids. Returns float32 (S, out_dim) on the
    CPU, row ``i`` for ``seeds[i]``. Every block is drawn once and ``inputs`` is called
    once, on the sorted nodes layer 0 reads; the nodes of each layer, the blocks, and one
    layer's states (nodes x width floats; before layer 0: those nodes' input rows) are
    held in CPU memory.

    ``plan``: a dict kept by the caller between passes over the same seeds with the same
    ``block_fn`` (a fixed sample, e.g. every epoch's validation): the first pass stores
    the blocks and each layer's nodes there when they take at most ``plan_bytes`` bytes,
    and the later passes reuse them instead of drawing them again.
    """
    model.eval()
    device = resolve_device(device)
    seeds = np.asarray(seeds.cpu() if torch.is_tensor(seeds) else seeds, dtype=np.int64)
    L = model.num_layers
    if len(seeds) == 0:
        return torch.zeros(0, model.out_dim)
    if plan is not None and "need" in plan and np.array_equal(plan["seeds"], seeds):
        need, blocks = plan["need"], plan["blocks"]
    else:
        need, blocks = _draw(seeds, block_fn, L, chunk_rows)
        if plan is not None:
            plan.clear()
            size = sum(a.nbytes for a in need) + sum(
                t.numel() * t.element_size() for chunks in blocks for b in chunks
                for t in (b.src_nodes, b.edge_src, b.edge_dst))
            if size <= plan_bytes:
                plan.update(seeds=seeds.copy(), need=need, blocks=[list(b) for b in blocks])
    # layer 0's inputs are read once per node, in id order (not once per chunk that
    # lists the node); each chunk takes its sources' rows of a layer's states by position
    prev = inputs(torch.from_numpy(need[0]).to(device))

    def projects(layer: int) -> bool:   # the layer's rows, its destinations, its edges
        return model.projects_input(layer, (len(need[layer]), len(need[layer + 1]),
                                            sum(b.num_edges for b in blocks[layer])))

    projected = projects(0)
    prev = (model.project_input(0, prev) if projected else prev).float().cpu()
    blocks = list(blocks)
    for layer in range(L):
        where = np.zeros(int(need[layer][-1]) + 1 if len(need[layer]) else 0, np.int64)
        where[need[layer]] = np.arange(len(need[layer]))
        project_next = layer + 1 < L and projects(layer + 1)
        parts = []
        rows = _RowScratch()
        direct = not projected and model.reads_rows(layer)
        if direct:
            prev = prev.to(device)
        for block in blocks[layer]:
            index = torch.from_numpy(where[block.src_nodes.numpy()])
            if direct:      # the layer reads its rows of prev itself: no gathered copy
                h = model.layer_from_rows(layer, prev, index.to(device), block.to(device))
            else:
                h = model.layer(layer, rows.take(prev, index).to(device), block.to(device),
                                projected=projected)
            parts.append(rows.own(model.project_input(layer + 1, h) if project_next else h))
        blocks[layer] = []   # released once the layer is computed
        prev = torch.cat(parts) if parts else torch.zeros(0, model.out_dim)
        projected = project_next
    return prev.index_select(0, torch.from_numpy(np.searchsorted(need[L], seeds)))


class _RowScratch:
    """One reused CPU array for the rows of a layer's states that each chunk reads: a
    fresh chunk-sized tensor (tens of MB) would be mapped from the kernel and faulted in
    page by page on every chunk. A chunk's rows are read before the next chunk is taken."""

    def __init__(self):
        self.buf: torch.Tensor | None = None

    def take(self, states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """``states.index_select(0, index)``, written to the scratch array."""
        n, width = len(index), states.shape[1]
        if (self.buf is None or self.buf.shape[0] < n or self.buf.shape[1] != width
                or self.buf.dtype != states.dtype):
            self.buf = torch.empty(n + n // 8, width, dtype=states.dtype)
        return torch.index_select(states, 0, index, out=self.buf[:n])

    def own(self, h: torch.Tensor) -> torch.Tensor:
        """A layer's output ``h`` as float32 on the CPU, copied if it is a view of the
        scratch array (a layer that returns part of its input), which the next chunk
        overwrites."""
        h = h.float().cpu()
        if self.buf is not None and h.untyped_storage().data_ptr() == \
                self.buf.untyped_storage().data_ptr():
            h = h.clone()
        return h


def _draw(seeds: np.ndarray, block_fn: Callable[[np.ndarray, int], Block], L: int,
          chunk_rows: int) -> tuple[list[np.ndarray], list[list[Block]]]:
    """The blocks of a pass over ``seeds``, drawn once, outputs first: ``blocks[l]`` holds
    the chunks of ``need[l + 1]``, the sorted nodes whose layer-(l + 1) state is needed
    (``need[L]``: the seeds); ``need[l]`` the sorted union of their sources."""
    need: list[np.ndarray] = [np.zeros(0, np.int64)] * (L + 1)
    blocks: list[list[Block]] = [[] for _ in range(L)]
    need[L] = np.unique(seeds)
    for layer in range(L - 1, -1, -1):
        dst = need[layer + 1]
        blocks[layer] = [block_fn(dst[a:a + chunk_rows], layer)
                         for a in range(0, len(dst), chunk_rows)]
        need[layer] = _sorted_union([b.src_nodes.numpy() for b in blocks[layer]])
    return need, blocks


def _sorted_union(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values of the non-negative int64 arrays ``parts``: marked in a
    boolean array up to the largest value (no sort of the concatenation)."""
    mark = np.zeros(max((int(p.max()) for p in parts if len(p)), default=-1) + 1, np.bool_)
    for p in parts:
        mark[p] = True
    return np.flatnonzero(mark).astype(np.int64, copy=False)
