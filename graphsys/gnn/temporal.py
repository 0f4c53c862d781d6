"""The temporal link model: TGN (Rossi et al. 2020) over graphsys's temporal sampler.

:class:`TGN` keeps a memory vector per node, updated by a GRU from the node's latest event
(:class:`TemporalMemory`: TGN's identity message and last-message aggregator), embeds a node
at a time by temporal attention over its most recent (or uniform) earlier events
(:class:`~graphsys.gnn.conv.temporal_attention.TemporalAttentionConv`, on the neighbours of
:class:`~graphsys.sampling.TemporalNeighborSampler`, drawn from the stored temporal index
strictly before each batch), and scores a (source, destination) pair with TGN's link
predictor: the model of PyG's ``examples/tgn.py``. Trained by
:mod:`graphsys.gnn.temporal_task`.

One step over a batch of events in time order, first time :math:`t_0`:

1. the nodes the batch needs (sources, destinations, negatives and their sampled
   neighbours) read their memory, each updated by the GRU from its pending message
   :math:`[s_i \\| s_j \\| \\phi(t - t^-_i) \\| e]` of its latest earlier event (gradients flow
   through this update);
2. each query node is embedded by attention over its ``k`` events before :math:`t_0`, each
   with the gap between its neighbour's last memory update and the event (PyG's example);
3. the events are scored against negatives and the loss taken;
4. the batch's sources and destinations keep their updated memory (detached), and the
   batch's events become their pending messages.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.gnn.config import TGN as MODEL_NAME
from graphsys.gnn.conv.temporal_attention import TemporalAttentionConv, TimeEncoder
from graphsys.ranking import average_precision as average_precision  # re-exported

#: The memory's update cells (:class:`TemporalMemory`): TGN's GRU, JODIE's RNN.
CELLS = {"gru": nn.GRUCell, "rnn": nn.RNNCell}


class TemporalMemory(nn.Module):
    """Per-node memory :math:`s_i` (TGN, JODIE), a recurrent cell over each node's last
    pending message :math:`[s_i \\| s_j \\| \\phi(t - t^-_i) \\| e]`, with
    :math:`\\phi` the time encoding at fixed frequencies (:mod:`graphsys.gnn.tgat` says why
    they are not learned).

    Buffers (saved with the state): ``memory`` (N, d), ``last_update`` (N,) the time of
    the event that last updated a node, and the pending message of each node: the other
    node, time, raw features and whether there is one.

    Parameters
    ----------
    num_nodes, memory_dim, time_dim, raw_dim : int
        Nodes, memory width, time-encoding width, raw edge-feature width (0: none).
    cell : {"gru", "rnn"}, optional
        The update: TGN's GRU cell (default, the module ``gru``), or JODIE's
        :math:`\\tanh` RNN cell (the module ``rnn``), each over the message.
    """

    def __init__(self, num_nodes: int, memory_dim: int, time_dim: int, raw_dim: int,
                 cell: str = "gru"):
        super().__init__()
        self.num_nodes, self.memory_dim, self.raw_dim = num_nodes, memory_dim, raw_dim
        self.cell_name = cell
        self.time_enc = TimeEncoder(time_dim).requires_grad_(False)  # fixed (as TGAT)
        setattr(self, cell, CELLS[cell](2 * memory_dim + time_dim + raw_dim, memory_dim))
        self.register_buffer("memory", torch.zeros(num_nodes, memory_dim))
        self.register_buffer("last_update", torch.zeros(num_nodes, dtype=torch.float64))
        self.register_buffer("msg_other", torch.zeros(num_nodes, dtype=torch.long))
        self.register_buffer("msg_time", torch.zeros(num_nodes, dtype=torch.float64))
        self.register_buffer("msg_raw", torch.zeros(num_nodes, raw_dim))
        self.register_buffer("has_msg", torch.zeros(num_nodes, dtype=torch.bool))

    def reset(self) -> None:
        """Empty memory, no pending message (the start of an epoch's pass over time)."""
        for buf in (self.memory, self.last_update, self.msg_other, self.msg_time,
                    self.msg_raw, self.has_msg):
            buf.zero_()

    def read(self, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The memory of ``nodes`` (int64, unique) with their pending messages applied,
        and their last-update times; the stored state is not changed."""
        mem = self.memory[nodes]
        last = self.last_update[nodes]
        has = self.has_msg[nodes]
        if not bool(has.any()):
            return mem, last
        idx = nodes[has]
        delta = (self.msg_time[idx] - self.last_update[idx]).float()
        hx = self.memory[idx]
        updated = self._update(hx, self.memory[self.msg_other[idx]], self.time_enc(delta),
                               self.msg_raw[idx])
        mem = mem.index_put((has.nonzero().squeeze(1),), updated)
        last = torch.where(has, self.msg_time[nodes], last)
        return mem, last

    def _update(self, hx: torch.Tensor, other: torch.Tensor, enc: torch.Tensor,
                raw: torch.Tensor) -> torch.Tensor:
        """``cell(cat([hx, other, enc, raw]), hx)`` (the same GRU or RNN cell, gate for
        gate), with the input product split so that the backward computes an input gradient
        for the time encoding ``enc`` alone: the memory rows and raw features are
        buffers."""
        cell = getattr(self, self.cell_name)
        d = 2 * self.memory_dim
        # split, not slices: one gradient buffer for weight_ih in the backward
        w_mem, w_t, w_raw = cell.weight_ih.split([d, enc.shape[1], self.raw_dim], dim=1)
        if self.raw_dim:
            fixed, w_fixed = torch.cat([hx, other, raw], dim=1), torch.cat([w_mem, w_raw], 1)
        else:
            fixed, w_fixed = torch.cat([hx, other], dim=1), w_mem
        gi = torch.addmm(torch.addmm(cell.bias_ih, enc, w_t.t()), fixed, w_fixed.t())
        gh = F.linear(hx, cell.weight_hh, cell.bias_hh)
        if self.cell_name == "rnn":
            return torch.tanh(gi + gh)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return n + z * (hx - n)

    @torch.no_grad()
    def commit(self, nodes: torch.Tensor, mem: torch.Tensor, last: torch.Tensor) -> None:
        """Store ``mem``/``last`` (from :meth:`read`) as the memory of ``nodes``: their
        pending messages are consumed."""
        self.memory[nodes] = mem.detach()
        self.last_update[nodes] = last
        self.has_msg[nodes] = False

    @torch.no_grad()
    def store(self, src: torch.Tensor, dst: torch.Tensor, time: torch.Tensor,
              raw: torch.Tensor) -> None:
        """The events ``src[i] -> dst[i]`` at ``time[i]`` (in time order) become the
        pending messages of both ends; a node in several keeps its latest (the last
        aggregator)."""
        nodes = torch.cat([src, dst])
        other = torch.cat([dst, src])
        order = torch.arange(len(nodes), device=nodes.device)
        # the latest event of each node: its highest position (an event's source role
        # first, then its destination role)
        pos = torch.cat([order[:len(src)] * 2, order[:len(src)] * 2 + 1])
        last = torch.full((self.num_nodes,), -1, dtype=torch.long, device=nodes.device)
        last.scatter_reduce_(0, nodes, pos, reduce="amax")
        keep = last[nodes] == pos
        n, k = nodes[keep], order[keep]
        self.msg_other[n] = other[k]
        self.msg_time[n] = torch.cat([time, time])[k]
        self.msg_raw[n] = torch.cat([raw, raw])[k]
        self.has_msg[n] = True


class LinkPredictor(nn.Module):
    """TGN's pair score: ``w^T relu(W_s z_src + W_d z_dst)``."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.lin_src, self.lin_dst = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.lin_final = nn.Linear(dim, 1)

    def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        return self.lin_final(torch.relu(self.lin_src(z_src) + self.lin_dst(z_dst))).squeeze(-1)

    def pairs(self, z: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """Scores of the pairs ``(z[src], z[dst])`` for index tensors ``src`` (B,) and
        ``dst`` (B,) or (B, M): the two projections are taken once per row of ``z`` and
        gathered, so M candidates per source cost one addition each."""
        return self.pairs_each(z, src, (dst,))[0]

    def pairs_each(self, z: torch.Tensor, src: torch.Tensor,
                   dsts: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        """:meth:`pairs` of ``src`` with each index tensor of ``dsts`` (a batch's true
        destinations and its negatives), the projections of ``z`` and the sources' rows
        taken once for all of them."""
        both = F.linear(z, torch.cat([self.lin_src.weight, self.lin_dst.weight]),
                        torch.cat([self.lin_src.bias, self.lin_dst.bias]))
        z_s, z_d = both.split(self.dim, dim=1)  # one gradient buffer in the backward
        a = F.embedding(src, z_s)
        return [self.lin_final(torch.relu((a if dst.dim() == 1 else a.unsqueeze(1))
                                          + F.embedding(dst, z_d))).squeeze(-1)
                for dst in dsts]


class TGN(nn.Module):
    """Memory, temporal attention embedding and link predictor (see the module docstring).

    Parameters
    ----------
    num_nodes : int
        Nodes of the graph.
    dim : int
        Memory, time-encoding and embedding width (TGN's example: 100 each).
    raw_dim : int
        Raw edge-feature width (0: none).
    heads : int, optional
        Attention heads (default 2).
    dropout : float, optional
        Attention dropout (default 0.1).

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.temporal import TGN
    >>> model = TGN(10, 16, raw_dim=1)
    >>> mem = model.memory.memory
    >>> mask = torch.tensor([[True, True, False]] * 4)
    >>> z = model.embed(mem[:4], mem, torch.zeros(4, 3, dtype=torch.long),
    ...                 torch.zeros(8, 1), torch.zeros(8), mask)
    >>> z.shape, model.score(z[:2], z[2:]).shape
    (torch.Size([4, 16]), torch.Size([2]))
    """

    def __init__(self, num_nodes: int, dim: int, raw_dim: int = 0, *, heads: int = 2,
                 dropout: float = 0.1):
        super().__init__()
        self.num_nodes, self.dim, self.raw_dim, self.heads = num_nodes, dim, raw_dim, heads
        self.memory = TemporalMemory(num_nodes, dim, dim, raw_dim)  # its time encoding
        self.conv = TemporalAttentionConv(dim, dim, raw_dim + dim, heads=heads, dropout=dropout)
        self.predictor = LinkPredictor(dim)

    def config(self) -> dict:
        """The constructor's arguments (stored in checkpoints)."""
        return {"model": MODEL_NAME, "num_nodes": self.num_nodes, "dim": self.dim,
                "raw_dim": self.raw_dim, "heads": self.heads}

    def embed(self, x: torch.Tensor, x_src: torch.Tensor, nbr: torch.Tensor,
              raw: torch.Tensor, delta: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Embeddings of query nodes from their states ``x`` (Q, d), the states ``x_src``
        (S, d) of the nodes ``nbr`` (Q, k) indexes, ``mask`` (Q, k) the used slots, and the
        used slots' events in row-major order (:func:`~graphsys.gnn.conv.temporal_attention.
        slots`): raw features (U, raw) and time gaps ``delta`` (U,) (:math:`\\Delta_j` of
        :mod:`~graphsys.gnn.conv.temporal_attention`)."""
        if delta.dim() == 2:            # the padded (Q, k) layout, deprecated (one release)
            raw, delta = raw[mask], delta[mask]
        edge = torch.cat([raw, self.memory.time_enc(delta)], dim=-1)  # as TGN
        return self.conv(x, x_src, nbr, edge, mask)

    def score(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        """Scores of embedding pairs (broadcasting)."""
        return self.predictor(z_src, z_dst)
