"""JODIE (Kumar, Zhang and Leskovec, KDD 2019, "Predicting Dynamic Embedding Trajectory in
Temporal Interaction Networks") as TGN's and TGL's frameworks express it: a per-node memory,
and an embedding that is that memory projected forward in time (the guide:
docs/growing.md, "JODIE, a second memory model").

Memory: :class:`~graphsys.gnn.temporal.TemporalMemory`, TGN's, with an RNN cell
:math:`s_i \\leftarrow \\tanh(W [\\ldots] + U s_i + b)` shared by both ends of an event
(a graph's nodes need not be users and items); an event :math:`(i, j, t, e)` leaves
:math:`i` the message :math:`[s_i \\| s_j \\| \\phi(t - t^-_i) \\| e]` (and :math:`j` the
mirror one), applied when the node is next read, so the loss reaches the RNN.

Embedding at time :math:`t`, JODIE's projection operator:

.. math::

    \\hat s_i(t) = (1 + \\bar\\Delta\\, w) \\odot s_i, \\qquad
    \\bar\\Delta = \\frac{(t - t^-_i) - \\mu}{\\sigma},

with :math:`w` a learned vector (initialised from :math:`\\mathcal N(0, 1)`) and
:math:`\\mu`, :math:`\\sigma` the mean and standard deviation of the gaps between a node's
consecutive training events (:func:`time_shift_scale`). A pair is scored by
:class:`~graphsys.gnn.temporal.LinkPredictor` on the ends' projections at the event's time.
Trained by :mod:`graphsys.gnn.temporal_task`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from graphsys.gnn.config import JODIE as MODEL_NAME
from graphsys.gnn.temporal import LinkPredictor, TemporalMemory


def time_shift_scale(src: np.ndarray, dst: np.ndarray, time: np.ndarray
                     ) -> tuple[float, float]:
    """The mean and standard deviation of the gaps between each node's consecutive events
    (``src[i] -> dst[i]`` at ``time[i]``, float64 seconds, each event counted at both
    ends; a node's first event has no gap): the :math:`\\mu`, :math:`\\sigma` of the
    module docstring. No gap: ``(0.0, 1.0)``; all gaps equal: ``sigma = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> mean, std = time_shift_scale(np.array([0, 0, 1]), np.array([1, 2, 2]),
    ...                              np.array([0.0, 3.0, 9.0]))    # gaps 3, 9 and 6
    >>> mean, round(std ** 2, 9)
    (6.0, 6.0)
    """
    nodes = np.concatenate([src, dst])
    times = np.concatenate([time, time]).astype(np.float64)
    order = np.lexsort((times, nodes))
    n, t = nodes[order], times[order]
    gaps = np.diff(t)[n[1:] == n[:-1]]
    if not len(gaps):
        return 0.0, 1.0
    std = float(gaps.std())
    return float(gaps.mean()), std if std > 0 else 1.0


class JODIE(nn.Module):
    """RNN memory, time projection and link predictor (see the module docstring).

    Parameters
    ----------
    num_nodes : int
        Nodes of the graph.
    dim : int
        Memory, time-encoding and embedding width.
    raw_dim : int
        Raw edge-feature width (0: none).
    time_shift : tuple of float, optional
        The gaps' mean and standard deviation :math:`(\\mu, \\sigma)` (default ``(0, 1)``;
        :class:`~graphsys.gnn.temporal_task.TemporalTask` sets the training events'
        :func:`time_shift_scale`). Not saved with the state: derived from the events.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.jodie import JODIE
    >>> model = JODIE(10, 16, raw_dim=1, time_shift=(5.0, 2.0))
    >>> mem, last = model.memory.read(torch.arange(4))
    >>> z = model.embed(mem, last, torch.full((4,), 7.0, dtype=torch.float64))
    >>> z.shape, model.score(z[:2], z[2:]).shape
    (torch.Size([4, 16]), torch.Size([2]))
    """

    def __init__(self, num_nodes: int, dim: int, raw_dim: int = 0, *,
                 time_shift: tuple[float, float] = (0.0, 1.0)):
        super().__init__()
        self.num_nodes, self.dim, self.raw_dim = num_nodes, dim, raw_dim
        self.memory = TemporalMemory(num_nodes, dim, dim, raw_dim, cell="rnn")
        self.time_weight = nn.Parameter(torch.randn(dim))        # JODIE's W_p, N(0, 1)
        self.register_buffer("time_shift", torch.tensor(time_shift, dtype=torch.float64),
                             persistent=False)
        self.predictor = LinkPredictor(dim)

    def config(self) -> dict:
        """The constructor's arguments (stored in checkpoints; the time shift is the
        events')."""
        return {"model": MODEL_NAME, "num_nodes": self.num_nodes, "dim": self.dim,
                "raw_dim": self.raw_dim}

    def embed(self, mem: torch.Tensor, last: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The projections :math:`(1 + \\bar\\Delta w) \\odot s` (Q, dim) of the memory rows
        ``mem`` (Q, dim), last updated at ``last`` (Q,), to the times ``t`` (Q,) (float64
        seconds, as the memory's)."""
        mean, std = self.time_shift[0], self.time_shift[1]
        gap = ((t - last - mean) / std).to(mem.dtype)
        return mem * (1 + gap.unsqueeze(-1) * self.time_weight)

    def pairs(self, mem: torch.Tensor, last: torch.Tensor, t: torch.Tensor,
              src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """Scores of the pairs ``(src[i], dst[i])`` (``dst`` (B,) or (B, M)), rows of
        ``mem`` / ``last``, both ends projected to the time ``t[i]`` (B,): :meth:`score` of
        :meth:`embed`'s projections, with the predictor's two products taken once per row
        of ``mem``. A projection is linear in its gap, :math:`W (1 + \\bar\\Delta w) \\odot
        s = W s + \\bar\\Delta\\, W (w \\odot s)`, so each of M candidates costs one
        multiply-add per width instead of a matrix product."""
        pred = self.predictor
        weight = torch.cat([pred.lin_src.weight, pred.lin_dst.weight])
        base = F.linear(mem, weight, torch.cat([pred.lin_src.bias, pred.lin_dst.bias]))
        slope = F.linear(mem * self.time_weight, weight)
        mean, std = self.time_shift[0], self.time_shift[1]

        def side(rows: torch.Tensor, at: torch.Tensor, half: int) -> torch.Tensor:
            gap = ((at - last[rows] - mean) / std).to(mem.dtype).unsqueeze(-1)
            # gathers by embedding: a deterministic backward on the CPU (an indexed
            # read's accumulating backward is not, from one process to the next)
            return (F.embedding(rows, base.split(self.dim, dim=1)[half])
                    + gap * F.embedding(rows, slope.split(self.dim, dim=1)[half]))

        a = side(src, t, 0)
        b = side(dst, t if dst.dim() == 1 else t.unsqueeze(1).expand(dst.shape), 1)
        left = a if dst.dim() == 1 else a.unsqueeze(1)
        return pred.lin_final(torch.relu(left + b)).squeeze(-1)

    def score(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        """Scores of embedding pairs (broadcasting)."""
        return self.predictor(z_src, z_dst)
