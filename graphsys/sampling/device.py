"""Uniform neighbour sampling in torch ops, on the device that holds the CSR.

:class:`DeviceNeighborSampler` draws the blocks :class:`~graphsys.sampling.NeighborSampler`
draws, bit for bit, from a CSR held as torch tensors: in GPU memory (the minibatches of a
CUDA run are made where they are consumed), or on the CPU, where the same code runs and is
tested. Every step is a whole-batch tensor operation; the only Python loops run over the
layers and, without replacement, over the ``fanout`` draws of Floyd's algorithm.

The random stream is the CPU sampler's (:mod:`graphsys.sampling._kernels`): SplitMix64 keyed
by ``(rng_seed, layer, node)``, written here in int64 torch arithmetic. The uint64 words of
the CPU kernels are held as int64 with the same 64 bits: addition, multiplication and xor
give the same bits in two's complement (torch's integer arithmetic wraps, on the CPU and on
CUDA), and the right shifts, arithmetic on int64, are made logical by masking off the
copied sign bits (:func:`srl64`). The conversion to a float in [0, 1) keeps the top 53 bits,
exactly as the CPU kernel does, and the picks truncate the same float64 products.

Host synchronisation: the layers are drawn into buffers of a size bound known on the host
(``fanout`` picks per destination, at most ``num_nodes`` distinct sources), whose valid
entries form a prefix. One read at the end of the batch (``.tolist()`` of a few counts)
gives the blocks' sizes and the checks of device seeds; a layer with fanout ``-1`` (every
neighbour) reads its edge count before it is drawn, one more read each.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from graphsys.errors import GraphsysError
from graphsys.sampling._util import as_seed_array, derive_seed
from graphsys.sampling.adjacency import Adjacency
from graphsys.sampling.base import Sampler
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import NeighborSampler, parse_fanouts

_U64 = 1 << 64


def as_int64(x: int) -> int:
    """The uint64 ``x`` (reduced mod 2**64) as the int64 of the same bits."""
    x %= _U64
    return x - _U64 if x >= 1 << 63 else x


_GOLDEN = as_int64(0x9E3779B97F4A7C15)
_M1 = as_int64(0xBF58476D1CE4E5B9)
_M2 = as_int64(0x94D049BB133111EB)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53


def srl64(z: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of the uint64 words ``z`` (int64 bits) by ``0 < s < 64``."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def mix64(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser on int64 tensors holding uint64 bits: the bits of
    :func:`graphsys.sampling._kernels.splitmix64` on the same words.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling._kernels import _mix
    >>> from graphsys.sampling.device import mix64
    >>> z = np.array([0, 1, 2**63, 2**64 - 1], np.uint64)
    >>> bool((mix64(torch.from_numpy(z.view(np.int64))).numpy().view(np.uint64)
    ...       == _mix(z)).all())
    True
    """
    z = (z ^ srl64(z, 30)) * _M1
    z = (z ^ srl64(z, 27)) * _M2
    return z ^ srl64(z, 31)


def node_streams(rng_seed: int, nodes: torch.Tensor) -> torch.Tensor:
    """int64 (S,): the initial stream state of each node id (``_kernels._stream``)."""
    seed_term = as_int64(int(rng_seed) * 0x9E3779B97F4A7C15)
    return mix64(mix64(nodes + _GOLDEN) ^ seed_term)


def stream_uniforms(state: torch.Tensor, k: int) -> torch.Tensor:
    """float64 (S, k): the first ``k`` uniforms in [0, 1) of each stream (``_uniform``
    called ``k`` times: the ``j``-th advances the state by ``(j + 1)`` golden steps)."""
    steps = torch.arange(1, k + 1, dtype=torch.int64, device=state.device) * _GOLDEN
    words = mix64(state.unsqueeze(1) + steps)
    return srl64(words, 11).to(torch.float64) * _INV53


def _floyd(u: torch.Tensor, deg: torch.Tensor, k: int) -> torch.Tensor:
    """int64 (S, k): Floyd's uniform ``k``-subsets of ``range(deg)`` in the CPU kernel's
    draw order (positions in each row; rows with ``deg <= k`` are left undefined). Step
    ``c`` draws ``r`` in ``[0, t]`` for ``t = deg - k + c`` and keeps ``t`` instead when
    ``r`` was chosen before: the draws are made for all steps at once, the repeats
    resolved step by step (four operations a step)."""
    top = deg.unsqueeze(1) - k + torch.arange(k, dtype=torch.int64, device=u.device)
    chosen = (u * (top + 1).to(torch.float64)).to(torch.int64)
    for c in range(1, k):
        seen = (chosen[:, :c] == chosen[:, c:c + 1]).any(1)
        chosen[:, c] = torch.where(seen, top[:, c], chosen[:, c])
    return chosen


def _picks(indptr, dst, valid, fanout, replace, rng_seed):
    """One layer's picks from the (padded) destinations ``dst``: ``(positions in the
    CSR's indices, mask of the real picks, their destination rows, counts (D,))``, the
    first three shaped (D, fanout); with fanout -1, flat, exactly every neighbour (their
    number read from the device)."""
    d = torch.where(valid, dst, 0)
    lo = indptr[d].to(torch.int64)
    deg = torch.where(valid, indptr[d + 1].to(torch.int64) - lo, 0)
    ids = torch.arange(len(d), dtype=torch.int64, device=d.device)
    if fanout < 0:
        total = int(deg.sum())                        # host read: the layer's edge count
        rows = torch.repeat_interleave(ids, deg, output_size=total)
        first = torch.cumsum(deg, 0) - deg
        eid = lo[rows] + torch.arange(total, device=d.device) - first[rows]
        return eid, torch.ones(total, dtype=torch.bool, device=d.device), rows, deg
    k = fanout
    u = stream_uniforms(node_streams(rng_seed, d), k)
    if replace:
        pos = (u * deg.unsqueeze(1).to(torch.float64)).to(torch.int64)
        cnt = torch.where(deg > 0, k, 0)
    else:
        all_j = torch.arange(k, dtype=torch.int64, device=d.device).expand(len(d), k)
        pos = torch.where((deg <= k).unsqueeze(1), all_j, _floyd(u, deg, k))
        cnt = torch.clamp(deg, max=k)
    mask = torch.arange(k, device=d.device).unsqueeze(0) < cnt.unsqueeze(1)
    rows = ids.unsqueeze(1).expand(len(d), k)
    return torch.where(mask, lo.unsqueeze(1) + pos, 0), mask, rows, cnt


def _relabel(cand: torch.Tensor, num_nodes: int, cap: int):
    """Block-local numbering of the candidates ``cand`` (node ids, ``num_nodes`` where
    padding): the CPU relabel's order (first appearance), by a stable sort. Returns
    ``(local (L,), src (cap,) padded with num_nodes, number of sources (device scalar))``."""
    n = len(cand)
    vals, perm = torch.sort(cand, stable=True)
    start = torch.ones(n, dtype=torch.bool, device=cand.device)
    start[1:] = vals[1:] != vals[:-1]
    idx = torch.arange(n, device=cand.device)
    group_start = torch.cummax(torch.where(start, idx, 0), 0).values
    first = torch.zeros(n, dtype=torch.int64, device=cand.device)
    first[perm] = (start & (vals < num_nodes)).to(torch.int64)   # 1 at first appearances
    rank = torch.cumsum(first, 0) - 1
    local = torch.empty(n, dtype=torch.int64, device=cand.device)
    local[perm] = rank[perm[group_start]]
    src = torch.full((cap + 1,), num_nodes, dtype=torch.int64, device=cand.device)
    src.scatter_(0, torch.where(first.bool(), rank, cap), cand)
    return local, src[:cap], (rank[-1] + 1 if n else
                              torch.zeros((), dtype=torch.int64, device=cand.device))


def _compact(mask: torch.Tensor, *values: torch.Tensor) -> list[torch.Tensor]:
    """``values`` (each shaped as ``mask``) at ``mask``'s True entries, in row-major
    order, as a prefix of buffers of ``mask.numel()`` entries (no host read)."""
    flat = mask.reshape(-1)
    n = flat.numel()
    slot = torch.where(flat, torch.cumsum(flat, 0) - 1, n)
    out = []
    for v in values:
        buf = torch.empty(n + 1, dtype=v.dtype, device=v.device)
        buf.scatter_(0, slot, v.reshape(-1))
        out.append(buf[:n])
    return out


class DeviceNeighborSampler(Sampler):
    """Uniform neighbour sampling in torch ops on the device holding the CSR: the blocks of
    :class:`~graphsys.sampling.NeighborSampler` (same arguments, same ``rng_seed``), made
    where the model runs.

    The CSR (``indptr``, ``indices``; int32 when the graph allows, else int64) is copied to
    ``device`` once. A batch's seeds go to the device in one transfer (none when they are a
    tensor there already); per layer, the destinations' degrees are gathered, the picks are
    drawn from the CPU sampler's counter-based stream (a node's sample is a function of
    ``(rng_seed, layer, node)``), with or without replacement as the CPU sampler draws
    them, and the sources are numbered in the CPU sampler's order (destinations first, then
    new nodes in order of first appearance) by a stable sort. The blocks carry their edge
    groupings (:attr:`Block.dst_offsets`, :attr:`Block.src_offsets`), computed there.

    Parameters
    ----------
    graph : Graph, Adjacency or NeighborSampler
        What :class:`~graphsys.sampling.NeighborSampler` takes (its ``entity_type``,
        ``edge_set``, ``symmetric``, ``direction`` keywords pass through), or a
        NeighborSampler whose adjacency and settings are taken (``fanouts`` None).
    fanouts : sequence of int or str, optional
        Neighbours per layer, input layer first; -1 takes every neighbour.
    replace : bool, optional
        Sample with replacement (default False), as the CPU sampler.
    device : str or torch.device, optional
        Where the CSR lives and the blocks are made (default ``"cuda"`` when available,
        else ``"cpu"``).
    pin_memory : bool, optional
        Keep the CSR in pinned host memory instead of on ``device`` (a graph larger than
        the GPU's memory): the batch is drawn by the same torch ops on the host and its
        blocks copied to ``device`` without blocking. torch exposes no gather that reads
        host memory from a CUDA kernel, so this does not yet sample on the GPU.
    index_dtype : torch.dtype, optional
        dtype of the device CSR: ``torch.int32`` (half the memory; default when the
        node and edge counts fit) or ``torch.int64``. The picks do not depend on it.
    **graph_options
        ``entity_type``, ``edge_set``, ``symmetric``, ``direction``, ``memory_limit`` of a
        stored graph, as :class:`~graphsys.sampling.NeighborSampler` takes them.

    Raises
    ------
    GraphsysError
        Fanouts that are not positive integers or -1; ``pin_memory`` without CUDA;
        repeated or out-of-range seeds (when sampled).

    See Also
    --------
    graphsys.sampling.NeighborSampler : the CPU sampler (numba kernels), same blocks.

    Notes
    -----
    Host reads per batch: one (a few counts, after the last layer), plus one per layer of
    fanout -1 (its largest degree). The sizes of the intermediate buffers are bounds
    known on the host: ``D * fanout`` picks for ``D`` padded destinations and at most
    ``min(D * (fanout + 1), num_nodes)`` sources.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling import NeighborSampler, from_coo
    >>> from graphsys.sampling.device import DeviceNeighborSampler
    >>> rng = np.random.default_rng(0)
    >>> adj = from_coo(rng.integers(0, 50, 400), rng.integers(0, 50, 400), 50, 50)
    >>> dev = DeviceNeighborSampler(adj, [4, 3], device="cpu")
    >>> blocks = dev.sample_blocks(torch.tensor([3, 7, 11]), rng_seed=5)
    >>> cpu = NeighborSampler(adj, [4, 3]).sample_blocks([3, 7, 11], rng_seed=5)
    >>> all(torch.equal(a.src_nodes, b.src_nodes) and torch.equal(a.edge_src, b.edge_src)
    ...     and torch.equal(a.edge_dst, b.edge_dst) for a, b in zip(blocks, cpu))
    True
    >>> blocks[-1].dst_nodes.tolist()
    [3, 7, 11]
    """

    def __init__(self, graph, fanouts: Sequence[int] | str | None = None, *,
                 replace: bool | None = None, device: str | torch.device | None = None,
                 pin_memory: bool = False, index_dtype: torch.dtype | None = None,
                 **graph_options):
        if isinstance(graph, NeighborSampler):
            base = graph
            fanouts = base.fanouts if fanouts is None else fanouts
            replace = base.replace if replace is None else replace
        else:
            if fanouts is None:
                raise GraphsysError("DeviceNeighborSampler needs fanouts (one per layer)")
            base = NeighborSampler(graph, fanouts, **graph_options)
        self.fanouts = parse_fanouts(fanouts)
        self.replace = bool(replace)
        self.adj: Adjacency = base.adj
        self.entity_type = base.entity_type
        self.device = torch.device(device if device is not None else
                                   "cuda" if torch.cuda.is_available() else "cpu")
        self.pin_memory = bool(pin_memory)
        if self.pin_memory and not torch.cuda.is_available():
            raise GraphsysError("pin_memory needs CUDA (pinned host memory is page-locked "
                                "for a GPU's copies)")
        self.indptr, self.indices = self._upload(index_dtype)

    def _upload(self, index_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The CSR as tensors where it is read (a one-off copy)."""
        adj = self.adj
        if index_dtype is None:
            fits = max(adj.nnz, adj.num_rows) < 2**31 - 1
            index_dtype = torch.int32 if fits else torch.int64
        if index_dtype not in (torch.int32, torch.int64):
            raise GraphsysError(f"index_dtype must be torch.int32 or torch.int64, got "
                                f"{index_dtype}")
        # an edgeless graph keeps one never-read entry, so that masked gathers stay in range
        indices = adj.indices if adj.nnz else np.zeros(1, np.int64)
        out = []
        for arr in (adj.indptr, indices):
            t = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.dtype(
                str(index_dtype).removeprefix("torch."))))
            out.append(t.pin_memory() if self.pin_memory else t.to(self.device))
        return out[0], out[1]

    @property
    def num_nodes(self) -> int:
        return self.adj.num_rows

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    @property
    def sample_device(self) -> torch.device:
        """Where the batches are drawn: the CSR's device (the host when pinned)."""
        return self.indptr.device

    def _seeds(self, seeds) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``seeds`` on the sampling device, and for a tensor already there, a device
        flag of ids outside the graph (checked with the batch's one read); host seeds
        are checked here."""
        dev = self.sample_device
        if torch.is_tensor(seeds) and seeds.device == dev:
            if seeds.is_floating_point() or seeds.dtype == torch.bool:
                raise GraphsysError(f"seed ids must be integers, got dtype {seeds.dtype}")
            s = seeds.reshape(-1).to(torch.int64)
            return s, ((s < 0) | (s >= self.num_nodes)).any()
        host = torch.from_numpy(as_seed_array(seeds, self.num_nodes))
        if dev.type == "cuda":      # one copy in, from pinned memory: no wait for it
            return host.pin_memory().to(dev, non_blocking=True), None
        return host.to(dev), None

    def sample_blocks(self, seeds, rng_seed: int = 0, *, parallel: bool | None = None
                      ) -> list[Block]:
        """The blocks of one batch, input layer first: those of
        :meth:`NeighborSampler.sample_blocks` with the same arguments, on the device.

        Parameters
        ----------
        seeds : int tensor, array or sequence (S,)
            Unique node ids; a tensor on the sampling device is used where it is.
        rng_seed : int, optional
            Seed of the batch (default 0); layer ``l`` draws from
            ``derive_seed(rng_seed, l)``.
        parallel : bool, optional
            Accepted for the CPU sampler's signature; ignored.

        Returns
        -------
        list of Block
            One per layer, tensors on ``device``, with their edge groupings computed.

        Raises
        ------
        GraphsysError
            Repeated seeds or an id outside the graph.
        """
        dst, bad_range = self._seeds(seeds)
        n_seeds = len(dst)
        valid = (torch.ones(n_seeds, dtype=torch.bool, device=dst.device) if bad_range is None
                 else (dst >= 0) & (dst < self.num_nodes))
        layers: list[dict] = []
        for layer in range(self.num_layers - 1, -1, -1):
            out = self._layer(dst, valid, layer, derive_seed(rng_seed, layer))
            layers.insert(0, out)
            dst = out["src"]
            valid = torch.arange(len(dst), device=dst.device) < out["n_src"]
        dup = (layers[-1]["local"][:n_seeds]
               != torch.arange(n_seeds, device=dst.device)).any()
        checks = [dup if bad_range is None else bad_range, dup]
        sizes = torch.stack([x for o in layers for x in (o["n_src"], o["n_edges"])]
                            + [c.to(torch.int64) for c in checks]).tolist()   # the read
        if sizes[-2] and bad_range is not None:
            as_seed_array(seeds, self.num_nodes)     # raises, naming the first bad id
        if sizes[-1]:
            raise GraphsysError("seed ids must be unique within a batch")
        blocks = []
        num_dst = [sizes[2 * k + 2] for k in range(self.num_layers - 1)] + [n_seeds]
        for k, o in enumerate(layers):
            blocks.append(self._block(o, sizes[2 * k], sizes[2 * k + 1], num_dst[k]))
        return blocks

    def _layer(self, dst: torch.Tensor, valid: torch.Tensor, layer: int, rng_seed: int
               ) -> dict:
        """One layer from the padded destinations ``dst`` (valid prefix ``valid``)."""
        n = self.num_nodes
        eid, mask, rows, cnt = _picks(self.indptr, dst, valid, self.fanouts[layer],
                                      self.replace, rng_seed)
        nbr = torch.where(mask, self.indices[eid].to(torch.int64), n)
        cand = torch.cat([torch.where(valid, dst, n), nbr.reshape(-1)])
        local, src, n_src = _relabel(cand, n, min(len(cand), n))
        edge_src, edge_dst = _compact(mask, local[len(dst):].view(mask.shape), rows)
        offsets = torch.zeros(len(dst) + 1, dtype=torch.int64, device=dst.device)
        torch.cumsum(cnt, 0, out=offsets[1:])
        return {"src": src, "n_src": n_src, "n_edges": offsets[-1], "local": local,
                "edge_src": edge_src, "edge_dst": edge_dst, "offsets": offsets}

    def _block(self, o: dict, n_src: int, n_edges: int, n_dst: int) -> Block:
        """The exact block of a layer's padded buffers, with its edge groupings."""
        edge_src = o["edge_src"][:n_edges]
        block = Block(o["src"][:n_src], n_dst, edge_src, o["edge_dst"][:n_edges])
        order = torch.argsort(edge_src, stable=True)
        src_off = torch.searchsorted(edge_src[order], torch.arange(
            n_src + 1, dtype=torch.int64, device=edge_src.device))
        block.__dict__["dst_offsets"] = (o["offsets"][:n_dst + 1], None)
        block.__dict__["src_offsets"] = (src_off, order)
        if self.sample_device != self.device:
            block = block.to(self.device, non_blocking=True)
        return block

    def __repr__(self) -> str:
        where = "pinned host" if self.pin_memory else str(self.device)
        return (f"DeviceNeighborSampler(fanouts={self.fanouts}, replace={self.replace}, "
                f"nodes={self.num_nodes}, edges={self.adj.nnz}, csr={where} "
                f"{str(self.indptr.dtype).removeprefix('torch.')})")
